/**
 * The I/O timeout of a path (`--io-timeout`, the HA profile's): not an option-string token but
 * each namespace queue's `queue/io_timeout`, written once the namespaces exist, in ms; a write
 * that fails disconnects the path again, or says that it could not.
 */
import assert from "node:assert/strict";
import { setQueueOptions } from "../../src/fabrics/connect.ts";
import { haProfile, rowOf } from "../../src/fabrics/connect_table.ts";
import {
  buildOptionString,
  namespaceQueueSettings,
  namespaceQueueText,
} from "../../src/fabrics/option_string.ts";
import type { ConnectOptions } from "../../src/fabrics/connect_options.ts";
import { controllerNamespaces } from "../../src/fabrics/sysfs.ts";
import type { FabricsPaths } from "../../src/fabrics/initiator_paths.ts";
import { FailureError } from "../../src/errors.ts";
import { optionsFromSaved, savedFromOptions } from "../../src/persist/connections.ts";
import { tempDir } from "../helpers.ts";
import { MP_HOSTID, MP_HOSTNQN, MP_NQN, multipathTree } from "../sysfs_standin.ts";

const BASE: ConnectOptions = {
  transport: "rdma",
  traddr: "10.77.0.1",
  trsvcid: "4420",
  nqn: MP_NQN,
  hostnqn: MP_HOSTNQN,
  hostid: MP_HOSTID,
};

function pathsOf(root: string): FabricsPaths {
  return { sysfs: `${root}/sys`, dev: `${root}/dev`, etcNvme: `${root}/etc/nvme` };
}

Deno.test("--io-timeout stays out of the option string and becomes each namespace queue's io_timeout in ms", () => {
  const o = { ...BASE, keepAliveTmo: 1, ioTimeout: 2 };
  assert.doesNotMatch(buildOptionString(o), /io_timeout/);
  assert.match(buildOptionString(o), /,keep_alive_tmo=1$/);
  assert.deepEqual(namespaceQueueSettings(o), { io_timeout: 2000 });
  assert.equal(
    namespaceQueueText(o),
    "then on each path's namespace queues: io_timeout=2000 ms",
  );
  assert.deepEqual(namespaceQueueSettings(BASE), {});
  assert.equal(namespaceQueueText(BASE), "");
  assert.equal(rowOf("ioTimeout").nvmeCli, undefined, "nvme-cli has no such option");
});

Deno.test("the HA profile sets a 2 s I/O timeout on each path", () => {
  assert.equal(haProfile().ioTimeout, 2);
});

Deno.test("a saved connection keeps the I/O timeout and gives it back", async () => {
  const saved = savedFromOptions({ ...BASE, ioTimeout: 3 });
  assert.equal(saved.io_timeout, 3);
  assert.equal((await optionsFromSaved(saved)).ioTimeout, 3);
});

Deno.test("connect writes io_timeout to the path device's queue of every namespace of the new controller", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const paths = pathsOf(dir.path);
  const file = `${dir.path}/sys/class/nvme/nvme1/nvme1c1n1/queue/io_timeout`;
  await Deno.writeTextFile(file, ""); // a regular file: one write, no truncation, as sysfs takes it
  const namespaces = await controllerNamespaces(paths, "nvme1");
  assert.deepEqual(namespaces.map((n) => n.path), ["nvme1c1n1"]);
  await setQueueOptions(paths, "nvme1", namespaces, { ...BASE, ioTimeout: 2 });
  assert.equal(await Deno.readTextFile(file), "2000");
  // Nothing asked, nothing written.
  await Deno.writeTextFile(file, "");
  await setQueueOptions(paths, "nvme1", namespaces, BASE);
  assert.equal(await Deno.readTextFile(file), "");
});

Deno.test("a queue that cannot take io_timeout disconnects the path again, and says so", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const paths = pathsOf(dir.path);
  const ctrl = `${dir.path}/sys/class/nvme/nvme1`;
  const namespaces = await controllerNamespaces(paths, "nvme1");
  // No queue/io_timeout (ENOENT); delete_controller there: the path is disconnected again.
  await Deno.writeTextFile(`${ctrl}/delete_controller`, "");
  await assert.rejects(
    () => setQueueOptions(paths, "nvme1", namespaces, { ...BASE, ioTimeout: 2 }),
    (e: Error) => {
      assert.ok(e instanceof FailureError);
      assert.match(
        e.message,
        /Cannot set --io-timeout on 'nvme1': writing 2000 to .*nvme1c1n1\/queue\/io_timeout failed \(ENOENT\); 'nvme1' was disconnected again\./,
      );
      return true;
    },
  );
  assert.equal(await Deno.readTextFile(`${ctrl}/delete_controller`), "1");
  // Without delete_controller the message says the path is still connected.
  await Deno.remove(`${ctrl}/delete_controller`);
  await assert.rejects(
    () => setQueueOptions(paths, "nvme1", namespaces, { ...BASE, ioTimeout: 2 }),
    /'nvme1' is still connected \(deleting it failed: Controller 'nvme1' does not exist\.\)/,
  );
});
