import assert from "node:assert/strict";
import { EnvironmentError, EXIT, type NvmeofError } from "../../src/errors.ts";
import {
  badTokenFromLog,
  type ConnectAttempt,
  connectError,
} from "../../src/fabrics/connect_errors.ts";
import { isFabricsRecord, parseKmsgRecord } from "../../src/fabrics/kmsg.ts";
import { parseInstanceReply } from "../../src/fabrics/kernel_controller.ts";

const A: ConnectAttempt = {
  transport: "rdma",
  traddr: "10.0.0.2",
  trsvcid: "4420",
  nqn: "nqn.2024-01.io.example:disk1",
  hostnqn: "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001",
};

function text(e: NvmeofError): string {
  return `${e.message}\n${e.hint ?? ""}`;
}

Deno.test("connect maps EALREADY to 'already connected'", () => {
  assert.match(connectError(114, A).message, /already connected.*\(EALREADY\)/);
});

Deno.test("connect maps ECONNRESET to an RDMA-level failure and points to nvmeof doctor", () => {
  const e = connectError(104, A, [
    "nvme nvme2: Connect rejected: status 8 (invalid service ID).",
    "nvme nvme2: rdma connection establishment failed (-104)",
  ]);
  assert.equal(e.exitCode, EXIT.failure);
  assert.match(e.message, /Cannot connect to 'nqn.2024-01.io.example:disk1' at rdma 10.0.0.2:4420/);
  assert.match(e.message, /nothing listens on that address and port.*\(ECONNRESET\)/);
  assert.match(e.hint!, /nvmeof doctor/);
  assert.match(
    e.hint!,
    /Kernel log:\n {2}nvme nvme2: Connect rejected: status 8 \(invalid service ID\)/,
  );
});

Deno.test("connect maps EIO to an NVMe-level refusal naming the host NQN", () => {
  const e = connectError(5, A);
  assert.match(e.message, /host 'nqn.2014-08.org.nvmexpress:uuid:5a1e0000-.*' is not allowed/);
  assert.match(e.message, /\(EIO\)/);
  assert.match(e.hint!, /allowed_hosts/);
});

Deno.test("connect maps EINVAL to the bad token the kernel logged", () => {
  const e = connectError(22, A, [
    "nvme_fabrics: unknown parameter or missing value 'bogus=1' in ctrl creation request",
  ]);
  assert.match(e.message, /refused the option 'bogus=1' \(EINVAL\)/);
  assert.equal(badTokenFromLog(["nvme_fabrics: invalid parameter 'tos=%d'"]), "tos=%d");
});

Deno.test("connect maps the hostnqn/hostid pairing EINVAL to its rule", () => {
  const e = connectError(22, A, ["nvme_fabrics: found same hostnqn nqn.x but different hostid"]);
  assert.match(text(e), /pairs this host NQN.*different partner/s);
  assert.match(e.hint!, /same -q\/--hostnqn and -I\/--hostid/);
});

Deno.test("connect maps a missing transport handler to an environment error (exit 3)", () => {
  const e = connectError(22, A, ["nvme_fabrics: no handler found for transport rdma."]);
  assert.ok(e instanceof EnvironmentError);
  assert.match(e.hint!, /modprobe nvme-rdma/);
  assert.equal(connectError(19, A).exitCode, EXIT.environment);
});

Deno.test("connect maps EACCES/EPERM to 'needs root' (exit 3)", () => {
  for (const errno of [1, 13]) {
    const e = connectError(errno, A);
    assert.equal(e.exitCode, EXIT.environment);
    assert.match(e.hint!, /root/);
  }
});

Deno.test("every errno of facts §1.4 gets its own cause, unknown ones their number", () => {
  const seen = new Set<string>();
  for (const errno of [114, 22, 104, 5, 111, 95, 12, 110, 4]) {
    const m = connectError(errno, A).message;
    assert.ok(!seen.has(m), `${errno} duplicates another message`);
    seen.add(m);
  }
  assert.match(connectError(999, A).message, /errno 999 \(999\)/);
});

Deno.test("a discovery connect says discovery controller", () => {
  assert.match(
    connectError(104, { ...A, discovery: true }).message,
    /discovery controller at rdma 10.0.0.2:4420/,
  );
});

Deno.test("IPv6 addresses are bracketed in messages", () => {
  assert.match(
    connectError(104, { ...A, traddr: "fe80::1%rxe0" }).message,
    /rdma \[fe80::1%rxe0\]:4420/,
  );
});

Deno.test("kmsg records parse; only fabrics ones are kept", () => {
  const r = parseKmsgRecord(
    "3,1234,5678901,-;nvme nvme1: Connect rejected: status 8\n SUBSYSTEM=nvme\n",
  );
  assert.deepEqual(r, {
    priority: 3,
    seq: 1234,
    usec: 5678901,
    message: "nvme nvme1: Connect rejected: status 8",
  });
  assert.equal(parseKmsgRecord("garbage"), undefined);
  assert.ok(isFabricsRecord("nvmet_rdma: enabling port 1"));
  assert.ok(!isFabricsRecord("usb 1-1: new device"));
});

Deno.test("the kernel's reply instance=N,cntlid=M parses; anything else is an error", () => {
  assert.deepEqual(parseInstanceReply("instance=3,cntlid=17\n"), { instance: 3, cntlid: 17 });
  assert.throws(
    () => parseInstanceReply("instance=-1,cntlid=-1,transport=%s"),
    /not 'instance=N,cntlid=M'/,
  );
  assert.throws(() => parseInstanceReply(""), /not 'instance=N,cntlid=M'/);
});
