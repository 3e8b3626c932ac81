/**
 * The doctor's reachability verdicts: CM event + status + NVMe/RDMA reject status → check, and
 * the admin-queue connect request it sends (facts §6.1, §6.2).
 */
import assert from "node:assert/strict";
import { classifyProbe } from "../../src/doctor/reach.ts";
import {
  adminConnectRequest,
  nvmeAcceptQueueSize,
  nvmeRejectStatus,
  type ProbeOutcome,
} from "../../src/nvme/admin_probe.ts";

function outcome(p: Partial<ProbeOutcome>): ProbeOutcome {
  return {
    traddr: "10.0.0.2",
    trsvcid: 4420,
    stage: "connect",
    event: "REJECTED",
    status: 0,
    privateData: new Uint8Array(0),
    ...p,
  };
}

/** The private data of nvmet's reject: struct nvme_rdma_cm_rej, padded as IB CM REJ carries it. */
function nvmeRej(sts: number, pad = 148): Uint8Array {
  const b = new Uint8Array(pad);
  new DataView(b.buffer).setUint16(2, sts, true);
  return b;
}

Deno.test("the admin-queue request is recfmt 0, qid 0, hrqsize 32, hsqsize 31 in 32 bytes", () => {
  const b = adminConnectRequest();
  assert.equal(b.length, 32);
  const dv = new DataView(b.buffer);
  assert.deepEqual([0, 2, 4, 6].map((o) => dv.getUint16(o, true)), [0, 0, 32, 31]);
  assert.deepEqual([...b.subarray(8)], new Array(24).fill(0));
});

Deno.test("an NVMe/RDMA reject status is read from padded CM private data; other data is not one", () => {
  assert.equal(nvmeRejectStatus(nvmeRej(6)), 6);
  assert.equal(nvmeRejectStatus(nvmeRej(4, 4)), 4);
  assert.equal(nvmeRejectStatus(nvmeRej(0)), undefined);
  assert.equal(nvmeRejectStatus(nvmeRej(99)), undefined);
  assert.equal(nvmeRejectStatus(new TextEncoder().encode("busy\0")), undefined);
  assert.equal(nvmeRejectStatus(new Uint8Array(2)), undefined);
  const rep = new Uint8Array(32);
  new DataView(rep.buffer).setUint16(2, 128, true);
  assert.equal(nvmeAcceptQueueSize(rep), 128);
});

const TABLE: [string, Partial<ProbeOutcome>, string, RegExp][] = [
  [
    "accepted",
    {
      event: "ESTABLISHED",
      privateData: (() => {
        const b = new Uint8Array(32);
        new DataView(b.buffer).setUint16(2, 32, true);
        return b;
      })(),
    },
    "ok",
    /accepted an admin-queue connect.*crqsize 32/,
  ],
  [
    "NVMe-level reject",
    { status: 28, privateData: nvmeRej(6) },
    "warn",
    /listens at 10\.0\.0\.2:4420.*status 6 \(NVME_RDMA_CM_NO_RSC: /,
  ],
  [
    "NVMe-level reject of the size",
    { status: 28, privateData: nvmeRej(4) },
    "warn",
    /INVALID_HSQSIZE/,
  ],
  ["invalid service ID", { status: 8 }, "fail", /nothing listens at 10\.0\.0\.2:4420.*reason 8/],
  ["iWARP refusal", { status: -111 }, "fail", /ECONNREFUSED.*nothing listens/],
  [
    "consumer reject without NVMe data",
    { status: 28, privateData: new TextEncoder().encode("go away\0") },
    "fail",
    /nothing listens at 10\.0\.0\.2:4420 itself.*bound to another address, or what listens there is not an NVMe target/,
  ],
  ["stale connection", { status: 10 }, "fail", /reason 10 \(STALE_CONN\)/],
  [
    "unreachable",
    { event: "UNREACHABLE", status: -110 },
    "fail",
    /UNREACHABLE, ETIMEDOUT.*nothing listens there, or the packets are blocked/,
  ],
  [
    "address error",
    { event: "ADDR_ERROR", stage: "address", status: -113 },
    "fail",
    /cannot resolve 10\.0\.0\.2 to an RDMA device.*EHOSTUNREACH/,
  ],
  ["route error", { event: "ROUTE_ERROR", stage: "route", status: -110 }, "fail", /RDMA route/],
  [
    "timeout",
    { event: "TIMEOUT", timeoutMs: 5000 },
    "fail",
    /no CM answer.*5000 ms.*packets are dropped/,
  ],
  [
    "connect error",
    { event: "CONNECT_ERROR", status: -22 },
    "fail",
    /after the target accepted it/,
  ],
];

for (const [name, p, status, seen] of TABLE) {
  Deno.test(`probe verdict: ${name} → ${status}`, () => {
    const c = classifyProbe(outcome(p));
    assert.equal(c.id, "reach.listener");
    assert.equal(c.status, status, c.seen);
    assert.match(c.seen, seen);
    if (status === "ok") assert.equal(c.fix, undefined);
    else assert.ok(c.fix && c.fix.length > 10, `no fix: ${JSON.stringify(c)}`);
  });
}

Deno.test("a nothing-listening verdict names the port to create at that address and port", () => {
  const c = classifyProbe(outcome({ status: 8, traddr: "192.168.7.9", trsvcid: 4421 }));
  assert.match(c.fix!, /echo 192\.168\.7\.9 > addr_traddr; echo 4421 > addr_trsvcid/);
});

Deno.test("the probe's local side is named in the verdict", () => {
  const c = classifyProbe(
    outcome({ status: 8, src: { addr: "10.0.0.1", device: "mlx5_0", port: 1 } }),
  );
  assert.match(c.seen, /from 10\.0\.0\.1 \(mlx5_0 port 1\)/);
});

Deno.test("a probe that could not start is a skip that says why", () => {
  const c = classifyProbe(
    outcome({ event: "NONE", localError: "Cannot open the RDMA connection manager: ENODEV (19)." }),
  );
  assert.equal(c.status, "skip");
  assert.match(c.seen, /could not run the RDMA-CM probe: Cannot open/);
});
