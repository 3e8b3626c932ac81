/**
 * The lossy-link verdict: RDMA port hw_counters read before and after a short transfer; the
 * counters that move only on loss or retransmission decide it.
 */
import assert from "node:assert/strict";
import { lossCheck, movedLossCounters } from "../../src/doctor/loss.ts";
import { readHwCounters } from "../../src/rdma/port_counters.ts";
import { tempDir } from "../helpers.ts";

const BEFORE = {
  rcvd_seq_err: 0,
  out_of_seq_request: 2,
  duplicate_request: 0,
  completer_retry_err: 1,
  rcvd_rnr_err: 0,
  sent_pkts: 100,
  rcvd_pkts: 100,
};
const O = { dev: "rxe0", port: 1, netdev: "fab0", transfer: "32 Identify Controller transfers" };

Deno.test("loss: nothing moved but traffic is ok, naming the watched counters", () => {
  const c = lossCheck(BEFORE, { ...BEFORE, sent_pkts: 500, rcvd_pkts: 700 }, O);
  assert.equal(c.id, "reach.loss");
  assert.equal(c.status, "ok");
  assert.match(c.seen, /^rxe0 port 1: no retransmission or sequence-error counter moved/);
  assert.match(c.seen, /out_of_seq_request/);
  assert.doesNotMatch(c.seen, /sent_pkts|rnr/);
});

Deno.test("loss: moved counters warn that the fabric is not lossless, with each increase", () => {
  const after = { ...BEFORE, out_of_seq_request: 5, duplicate_request: 1, rcvd_rnr_err: 4 };
  assert.deepEqual(movedLossCounters(BEFORE, after), [["duplicate_request", 1], [
    "out_of_seq_request",
    3,
  ]]);
  const c = lossCheck(BEFORE, after, O);
  assert.equal(c.status, "warn");
  assert.match(
    c.seen,
    /^the fabric is not lossless: during 32 Identify Controller transfers, rxe0 port 1 counted duplicate_request \+1, out_of_seq_request \+3/,
  );
  assert.match(c.fix!, /tc -s qdisc show dev fab0/);
  assert.match(c.fix!, /dcb pfc set dev fab0 prio-pfc 3:on/);
});

Deno.test("loss: no hw_counters is a skip; a failed transfer with quiet counters warns", () => {
  assert.equal(lossCheck(undefined, undefined, O).status, "skip");
  const c = lossCheck(BEFORE, BEFORE, { ...O, transferError: "Identify timed out" });
  assert.equal(c.status, "warn");
  assert.match(c.seen, /did not complete \(Identify timed out\)/);
});

Deno.test("hw_counters are read from the sysfs root the doctor is given", async () => {
  await using d = await tempDir();
  const dir = `${d.path}/class/infiniband/rxe0/ports/1/hw_counters`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/rcvd_seq_err`, "3\n");
  await Deno.writeTextFile(`${dir}/duplicate_request`, "0\n");
  assert.deepEqual(readHwCounters(d.path, "rxe0", 1), { rcvd_seq_err: 3, duplicate_request: 0 });
  assert.equal(readHwCounters(d.path, "rxe0", 2), undefined);
});
