/**
 * The NVMe/RDMA CM reject (struct nvme_rdma_cm_rej in a REJECTED event's private data): the
 * RDMA layer keeps the bytes on its error, the NVMe layer names the status with a fix hint
 * (include/linux/nvme-rdma.h; nvmet-rdma's nvmet_rdma_parse_cm_connect_req).
 */
import assert from "node:assert/strict";
import { RDMA_CM_EVENT_TYPE as E } from "../../ffi/enums.ts";
import { FailureError, formatError } from "../../src/errors.ts";
import { decodeRdmaCmReject } from "../../src/nvme/capsule.ts";
import { describeRdmaCmReject, RdmaCmRejectError } from "../../src/nvme/status.ts";
import type { CmEvent } from "../../src/rdma/cm.ts";
import { cmEventError, RejectedError } from "../../src/rdma/connection.ts";
import { queueRejectError } from "../../src/nvme/queue.ts";

/** nvmet's reject record, padded to the 148 bytes an IB CM REJ carries (fill after byte 4). */
function rej(sts: number, opts: { recfmt?: number; pad?: number; fill?: number } = {}): Uint8Array {
  const b = new Uint8Array(opts.pad ?? 148).fill(opts.fill ?? 0);
  const dv = new DataView(b.buffer);
  if (b.length >= 2) dv.setUint16(0, opts.recfmt ?? 0, true);
  if (b.length >= 4) dv.setUint16(2, sts, true);
  return b;
}

function event(type: number, status: number, privateData: Uint8Array = new Uint8Array(0)): CmEvent {
  return {
    type,
    name: Object.entries(E).find(([, v]) => v === type)![0],
    status,
    id: null as unknown as Deno.PointerObject,
    listenId: null,
    privateData,
    responderResources: 0,
    initiatorDepth: 0,
  };
}

const NAMES: [number, string][] = [
  [0x01, "NVME_RDMA_CM_INVALID_LEN"],
  [0x02, "NVME_RDMA_CM_INVALID_RECFMT"],
  [0x03, "NVME_RDMA_CM_INVALID_QID"],
  [0x04, "NVME_RDMA_CM_INVALID_HSQSIZE"],
  [0x05, "NVME_RDMA_CM_INVALID_HRQSIZE"],
  [0x06, "NVME_RDMA_CM_NO_RSC"],
  [0x07, "NVME_RDMA_CM_INVALID_IRD"],
  [0x08, "NVME_RDMA_CM_INVALID_ORD"],
  [0x09, "NVME_RDMA_CM_INVALID_CNTLID"],
];

Deno.test("every nvme-rdma.h reject status is named, with its own meaning and a hint", () => {
  const meanings = new Set<string>();
  for (const [sts, name] of NAMES) {
    const info = describeRdmaCmReject(rej(sts), { qid: 1, depth: 32 });
    assert.ok(info, name);
    assert.equal(info.sts, sts);
    assert.equal(info.name, name);
    assert.match(info.meaning, /^[a-z].{20,}[^.]$/, name);
    assert.ok(info.hint.length > 20, name);
    meanings.add(info.meaning);
  }
  assert.equal(meanings.size, NAMES.length);
});

Deno.test("INVALID_HSQSIZE says the queue is too large, and the admin hint names its 32 limit", () => {
  const admin = describeRdmaCmReject(rej(4), { qid: 0, depth: 64 })!;
  assert.equal(
    `${admin.name}: ${admin.meaning}`,
    "NVME_RDMA_CM_INVALID_HSQSIZE: the queue size the host asked for is larger than the target allows",
  );
  assert.match(admin.hint, /admin queue holds at most 32 entries \(NVME_AQ_DEPTH\)/);
  const io = describeRdmaCmReject(rej(4), { qid: 3, depth: 1024 })!;
  assert.match(io.hint, /--qd N.*CAP\.MQES \+ 1/);
  assert.doesNotMatch(io.hint, /admin/);
});

Deno.test("a reject status not in nvme-rdma.h is kept, named by its number", () => {
  const info = describeRdmaCmReject(rej(0x0a))!;
  assert.equal(info.sts, 0x0a);
  assert.equal(info.name, "NVME_RDMA_CM status 0x0a");
  assert.match(info.meaning, /not in nvme-rdma\.h/);
  assert.match(info.hint, /dmesg/);
  assert.equal(describeRdmaCmReject(rej(0x1234))!.name, "NVME_RDMA_CM status 0x1234");
});

Deno.test("short, empty, zero-status and other-format data is not an NVMe/RDMA reject", () => {
  assert.equal(decodeRdmaCmReject(new Uint8Array(0)), undefined);
  assert.equal(decodeRdmaCmReject(new Uint8Array([0, 0, 4])), undefined);
  assert.equal(describeRdmaCmReject(new Uint8Array(0)), undefined);
  assert.equal(describeRdmaCmReject(new Uint8Array([0, 0])), undefined);
  assert.equal(describeRdmaCmReject(rej(4, { recfmt: 1 })), undefined);
  assert.equal(describeRdmaCmReject(rej(0)), undefined);
  // The text an `nvmeof rdma ping` server rejects with.
  assert.equal(describeRdmaCmReject(new TextEncoder().encode("size 0 out of range\0")), undefined);
});

Deno.test("only the first 4 bytes are read: exactly 4, or padding of any content after them", () => {
  assert.deepEqual(decodeRdmaCmReject(rej(6, { pad: 4 })), { recfmt: 0, sts: 6 });
  assert.deepEqual(decodeRdmaCmReject(rej(6, { fill: 0xff })), { recfmt: 0, sts: 6 });
  // A view into a larger buffer (the event's copy) is read at its own offset.
  const big = new Uint8Array(200).fill(0xee);
  big.set(rej(5, { pad: 4 }), 50);
  assert.deepEqual(decodeRdmaCmReject(big.subarray(50)), { recfmt: 0, sts: 5 });
});

Deno.test("cmEventError keeps a REJECTED event's private data and reason, message unchanged", () => {
  const data = rej(4);
  const err = cmEventError(event(E.REJECTED, 28, data), "10.0.0.2:4420");
  assert.ok(err instanceof RejectedError);
  assert.equal(err.reason, 28);
  assert.equal(err.reasonName, "CONSUMER_DEFINED");
  assert.deepEqual(err.rejectData, data);
  assert.equal(
    err.message,
    "Connection to 10.0.0.2:4420 rejected: REJECTED, reason 28 (CONSUMER_DEFINED).",
  );
  assert.equal(err.hint, "The server refused the request; see its message.");

  const none = cmEventError(event(E.REJECTED, 8), "10.0.0.2:4420");
  assert.ok(none instanceof RejectedError);
  assert.equal(none.rejectData.length, 0);
  assert.equal(none.reasonName, "INVALID_SERVICE_ID");
  assert.match(none.hint!, /Nothing listens/);

  const text = cmEventError(event(E.REJECTED, 28), "h:1", "busy");
  assert.match(text.message, /: the peer says "busy"\.$/);

  for (const type of [E.ADDR_ERROR, E.UNREACHABLE, E.CONNECT_ERROR]) {
    const other = cmEventError(event(type, -110), "h:1");
    assert.ok(other instanceof FailureError);
    assert.ok(!(other instanceof RejectedError));
  }
});

Deno.test("RdmaCmRejectError names the queue, the status and its meaning, and keeps the cause", () => {
  const data = rej(4);
  const cause = cmEventError(event(E.REJECTED, 28, data), "10.77.0.1:4420");
  const info = describeRdmaCmReject(data, { qid: 0, depth: 64 })!;
  const err = new RdmaCmRejectError("10.77.0.1:4420", { qid: 0, depth: 64 }, { info, data }, {
    cause,
  });
  assert.ok(err instanceof FailureError);
  assert.equal(err.exitCode, 1);
  assert.equal(err.qid, 0);
  assert.equal(err.reject.name, "NVME_RDMA_CM_INVALID_HSQSIZE");
  assert.equal(err.rejectData, data);
  assert.equal(err.cause, cause);
  assert.equal(
    err.message,
    "The target at 10.77.0.1:4420 refused NVMe queue 0 (depth 64): NVME_RDMA_CM_INVALID_HSQSIZE " +
      "(4): the queue size the host asked for is larger than the target allows.",
  );
  const text = formatError(err, true);
  assert.match(text, /^error: The target at .*INVALID_HSQSIZE/);
  assert.match(text, /\n {2}The admin queue holds at most 32 entries/);
  assert.match(text, /caused by: Connection to 10\.77\.0\.1:4420 rejected: REJECTED, reason 28/);
});

Deno.test("probe and bench at a port with no listener hear of the NVMe/RDMA target, not rdma ping", () => {
  const q = { host: "10.0.0.2", port: 4420, qid: 0, depth: 32 };
  const cause = cmEventError(event(E.REJECTED, 8), "10.0.0.2:4420") as RejectedError;
  assert.match(cause.hint ?? "", /rdma ping --server/); // the RDMA layer's, for its own peers
  const err = queueRejectError(cause, q);
  assert.ok(err instanceof RejectedError);
  assert.equal(err.reason, 8);
  assert.equal(err.message, cause.message);
  assert.equal(err.cause, cause);
  assert.doesNotMatch(err.hint ?? "", /rdma ping|server/);
  assert.match(err.hint ?? "", /^No NVMe\/RDMA target listens on 10\.0\.0\.2:4420\./);
  assert.match(err.hint ?? "", /nvmeof target show/);
  const v6 = queueRejectError(cause, { ...q, host: "fd00::2" });
  assert.match(v6.hint ?? "", /listens on \[fd00::2\]:4420\./);
});

Deno.test("queueRejectError names an NVMe/RDMA reject record and passes other rejects through", () => {
  const q = { host: "10.0.0.2", port: 4420, qid: 1, depth: 128 };
  const nvme = queueRejectError(
    cmEventError(event(E.REJECTED, 28, rej(4)), "10.0.0.2:4420") as RejectedError,
    q,
  );
  assert.ok(nvme instanceof RdmaCmRejectError);
  const other = cmEventError(event(E.REJECTED, 28), "10.0.0.2:4420") as RejectedError;
  assert.equal(queueRejectError(other, q), other);
});
