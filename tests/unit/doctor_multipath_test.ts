/**
 * The doctor's multipath checks over a stand-in sysfs: nvme_core.multipath on, off, absent; a
 * subsystem's paths healthy, one path connecting and ANA inaccessible, and none usable.
 */
import assert from "node:assert/strict";
import { multipathCheck, multipathChecks } from "../../src/doctor/multipath.ts";
import type { DoctorPaths } from "../../src/doctor/paths.ts";
import { tempDir } from "../helpers.ts";
import { MP_NQN, multipathTree } from "../sysfs_standin.ts";

function pathsOf(root: string): DoctorPaths {
  return {
    sysfs: `${root}/sys`,
    dev: `${root}/dev`,
    etcNvme: `${root}/etc/nvme`,
    proc: `${root}/proc`,
    libModules: `${root}/lib/modules`,
    configfs: `${root}/config`,
  };
}

async function put(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text + "\n");
}

Deno.test("host.multipath: Y is ok, N a warning with the kernel parameter, absent says why", async () => {
  await using dir = await tempDir();
  const p = pathsOf(dir.path);
  const param = `${p.sysfs}/module/nvme_core/parameters`;
  assert.equal(multipathCheck(p).status, "skip");
  await put(`${param}/max_retries`, "5");
  const none = multipathCheck(p);
  assert.equal(none.status, "warn");
  assert.match(none.seen, /CONFIG_NVME_MULTIPATH/);
  await put(`${param}/multipath`, "N");
  const off = multipathCheck(p);
  assert.equal(off.status, "warn");
  assert.match(off.seen, /multipath is off \(nvme_core\.multipath=N\)/);
  assert.match(off.fix!, /nvme_core\.multipath=Y/);
  await put(`${param}/multipath`, "Y");
  assert.equal(multipathCheck(p).status, "ok");
});

Deno.test("host.paths: a connecting, ANA-inaccessible path is a warning naming it and the retry policy", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const p = pathsOf(dir.path);
  await put(`${p.sysfs}/class/nvme/nvme2/reconnect_delay`, "10");
  await put(`${p.sysfs}/class/nvme/nvme2/ctrl_loss_tmo`, "600");
  const checks = await multipathChecks(p);
  // The PCIe drive is not a fabrics subsystem: one check for nvme-subsys1 only.
  assert.deepEqual(checks.map((c) => c.id), ["host.multipath", "host.paths.nvme-subsys1"]);
  const c = checks[1];
  assert.equal(c.status, "warn");
  assert.match(c.seen, new RegExp(`^'${MP_NQN}', iopolicy round-robin, 2 paths: `));
  assert.match(c.seen, /nvme1 rdma 10\.77\.0\.1:4420 live optimized/);
  assert.match(
    c.seen,
    /nvme2 tcp 10\.77\.0\.1:4421 connecting inaccessible \(reconnects every 10 s, gives up 600 s after the loss\)/,
  );
  assert.match(c.fix!, /path nvme2 is connecting/);
});

Deno.test("host.paths: both paths healthy is ok; no usable path to the head is a failure", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const p = pathsOf(dir.path);
  await put(`${p.sysfs}/class/nvme/nvme2/state`, "live");
  await put(`${p.sysfs}/class/nvme/nvme2/nvme1c2n1/ana_state`, "non-optimized");
  const ok = (await multipathChecks(p))[1];
  assert.equal(ok.status, "ok", ok.seen);
  assert.equal(ok.fix, undefined);
  // rdma path down, tcp path inaccessible: nothing carries I/O.
  await put(`${p.sysfs}/class/nvme/nvme1/state`, "resetting");
  await put(`${p.sysfs}/class/nvme/nvme2/nvme1c2n1/ana_state`, "inaccessible");
  const none = (await multipathChecks(p))[1];
  assert.equal(none.status, "fail");
  assert.match(none.fix!, /^no usable path to nvme1n1/);
  assert.match(none.seen, /\(3 problems\)$/);
});
