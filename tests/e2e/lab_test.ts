/**
 * The lab guest itself: what every other e2e test relies on, checked on the real kernel.
 */
import assert from "node:assert/strict";
import { nvmeof } from "../helpers.ts";
import { listRdmaDevices } from "../../src/rdma/devices.ts";

Deno.test("the launcher runs in the guest: nvmeof --version", async () => {
  const r = await nvmeof(["--version"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^nvmeof \d+\.\d+\.\d+ \(deno 2\.9\.6/);
});

Deno.test("ibv_get_device_list through Deno.dlopen finds rxe0", () => {
  const devices = listRdmaDevices();
  const rxe = devices.find((d) => d.name === "rxe0");
  assert.ok(rxe, `rxe0 not in ${JSON.stringify(devices)}`);
  assert.match(rxe.node_guid, /^[0-9a-f]{4}(:[0-9a-f]{4}){3}$/);
});

Deno.test("the node GUID read through FFI matches the kernel's sysfs", async () => {
  const sysfs = (await Deno.readTextFile("/sys/class/infiniband/rxe0/node_guid")).trim();
  const rxe = listRdmaDevices().find((d) => d.name === "rxe0");
  assert.equal(rxe?.node_guid, sysfs);
});

Deno.test("rxe0 port 1 is ACTIVE with a RoCE v2 GID for 10.77.0.1", async () => {
  const state = await Deno.readTextFile("/sys/class/infiniband/rxe0/ports/1/state");
  assert.match(state, /ACTIVE/);
  let found = false;
  for (let i = 0; i < 4 && !found; i++) {
    const gid = await Deno.readTextFile(`/sys/class/infiniband/rxe0/ports/1/gids/${i}`);
    const type = await Deno.readTextFile(`/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/${i}`)
      .catch(() => "");
    found = gid.trim() === "0000:0000:0000:0000:0000:ffff:0a4d:0001" && type.trim() === "RoCE v2";
  }
  assert.ok(found, "no RoCE v2 GID ::ffff:10.77.0.1 in the first entries");
});

Deno.test("configfs is mounted with nvmet and null_blk groups", async () => {
  const mounts = await Deno.readTextFile("/proc/mounts");
  assert.match(mounts, /^configfs \/sys\/kernel\/config configfs /m);
  assert.ok((await Deno.stat("/sys/kernel/config/nvmet/subsystems")).isDirectory);
  assert.ok((await Deno.stat("/sys/kernel/config/nullb")).isDirectory);
  assert.ok((await Deno.stat("/dev/nvme-fabrics")).isCharDevice);
});
