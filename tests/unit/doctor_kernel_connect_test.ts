/**
 * The doctor's translation of the kernel initiator's answer (errno of the /dev/nvme-fabrics
 * write + the kernel log lines of host and target, as Linux 6.1 prints them).
 */
import assert from "node:assert/strict";
import { classifyKernelConnect } from "../../src/doctor/kernel_connect.ts";

const O = {
  nqn: "nqn.2024-01.io.example:disk1",
  hostnqn: "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001",
  traddr: "10.0.0.2",
  trsvcid: "4420",
};

Deno.test("EIO with 'not allowed' names the host NQN and the allowed_hosts link to add", () => {
  const c = classifyKernelConnect(5, [
    `nvmet: connect by host ${O.hostnqn} for subsystem ${O.nqn} not allowed`,
    `nvme nvme3: Connect for subsystem ${O.nqn} is not allowed, hostnqn: ${O.hostnqn}`,
  ], O);
  assert.equal(c.status, "fail");
  assert.ok(c.seen.includes(`refused host '${O.hostnqn}'`), c.seen);
  assert.ok(
    c.fix!.includes(
      `ln -s /sys/kernel/config/nvmet/hosts/${O.hostnqn} /sys/kernel/config/nvmet/subsystems/${O.nqn}/allowed_hosts/${O.hostnqn}`,
    ),
    c.fix,
  );
});

Deno.test("the host named by the kernel wins over the one we think we sent", () => {
  const other = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002";
  const c = classifyKernelConnect(5, [
    `nvme nvme3: Connect for subsystem ${O.nqn} is not allowed, hostnqn: ${other}`,
  ], O);
  assert.ok(c.seen.includes(`'${other}'`), c.seen);
  assert.ok(c.fix!.includes(`allowed_hosts/${other}`));
});

Deno.test("EIO with 'Invalid Data Parameter' says the subsystem is not on that port", () => {
  const c = classifyKernelConnect(5, [
    `nvmet: connect request for invalid subsystem ${O.nqn}!`,
    `nvme nvme3: Connect Invalid Data Parameter, subsysnqn "${O.nqn}"`,
  ], O);
  assert.equal(c.status, "fail");
  assert.ok(c.seen.includes(`does not export '${O.nqn}' on 10.0.0.2:4420`), c.seen);
  assert.match(c.fix!, /ports\/PORTID\/subsystems/);
});

Deno.test("EIO without a log names both NVMe-level causes and says the log was unreadable", () => {
  const c = classifyKernelConnect(5, [], O);
  assert.match(
    c.seen,
    /not allowed or the subsystem not on that port; the kernel log was not readable/,
  );
});

Deno.test("ECONNRESET points at the RDMA-level verdict; ETIMEDOUT at dropped packets; EINVAL pairing", () => {
  assert.match(
    classifyKernelConnect(104, ["nvme nvme3: rdma connection establishment failed (-104)"], O).seen,
    /could not establish the RDMA connection.*ECONNRESET.*establishment failed/,
  );
  assert.match(classifyKernelConnect(110, [], O).seen, /timed out/);
  const p = classifyKernelConnect(
    22,
    ["nvme_fabrics: found same hostnqn X but different hostid Y"],
    O,
  );
  assert.match(p.fix!, /host ID the kernel already pairs/);
});
