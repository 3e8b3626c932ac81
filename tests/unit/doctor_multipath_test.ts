/**
 * The doctor's multipath checks over a stand-in sysfs: nvme_core.multipath on, off, absent; a
 * subsystem's paths healthy, one path connecting and ANA inaccessible, and none usable.
 */
import assert from "node:assert/strict";
import { multipathCheck, multipathChecks } from "../../src/doctor/multipath.ts";
import type { DoctorPaths } from "../../src/doctor/kernel_paths.ts";
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

Deno.test("host.paths: a path connecting whose target address does not answer ARP names the link, not the target", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const p = pathsOf(dir.path);
  await put(`${p.sysfs}/class/nvme/nvme2/reconnect_delay`, "10");
  await put(`${p.sysfs}/class/nvme/nvme2/state`, "connecting");
  await put(`${p.sysfs}/class/nvme/nvme2/nvme1c2n1/ana_state`, "optimized");
  const arp = (flags: string, mac: string) =>
    "IP address       HW type     Flags       HW address            Mask     Device\n" +
    `10.77.0.1        0x1         ${flags}         ${mac}     *        fab0`;
  // Unanswered (incomplete or failed: Flags without ATF_COM): the link is named, with the -104
  // that each attempt logs and the commands that show the link.
  await put(`${p.proc}/net/arp`, arp("0x0", "00:00:00:00:00:00"));
  const down = (await multipathChecks(p))[1];
  assert.equal(down.status, "warn");
  assert.match(
    down.seen,
    /nvme2 tcp 10\.77\.0\.1:4421 connecting optimized \(reconnects every 10 s; ARP for 10\.77\.0\.1 unanswered on fab0\)/,
  );
  assert.match(
    down.fix!,
    /^path nvme2 is connecting and 10\.77\.0\.1 does not answer ARP on fab0: /,
  );
  assert.match(
    down.fix!,
    /link to the target is still down; check it \(ip link show fab0; ping -I fab0 10\.77\.0\.1\)/,
  );
  // The rdma path in the same state: its attempts' kernel message is named.
  await put(`${p.sysfs}/class/nvme/nvme1/state`, "connecting");
  await put(`${p.sysfs}/class/nvme/nvme2/state`, "live");
  const rdma = (await multipathChecks(p))[1];
  assert.match(
    rdma.fix!,
    /^path nvme1 is connecting and 10\.77\.0\.1 does not answer ARP on fab0: .*'rdma connection establishment failed \(-104\)' after 3 s/,
  );
  // Answered: the neighbour is no suspect; the fix goes back to asking doctor about the target.
  await put(`${p.proc}/net/arp`, arp("0x2", "52:54:00:78:00:12"));
  const up = (await multipathChecks(p))[1];
  assert.match(up.seen, /ARP for 10\.77\.0\.1 answered \(52:54:00:78:00:12 on fab0\)/);
  assert.match(up.fix!, /^path nvme1 is connecting: 'nvmeof doctor -a 10\.77\.0\.1 -s 4420 -n /);
});
