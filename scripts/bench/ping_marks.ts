/**
 * nvmeof's write-ping client (src/rdma/ping.ts's own code) for scripts/bench_ping_ticks.sh: writes
 * markers into a kernel trace (tracefs trace_marker) as the C peer's client does with MARK: BEGIN
 * after the first timed round trip, "S k µs" after each of 200 µs or more, END after the last, so
 * the trace shows which kernel events fell inside the slow ones. Then writes its record in
 * scripts/bench/ping_tail.ts's form for ping_events.ts.
 *
 *   deno run -A ping_marks.ts ADDR PORT COUNT SIZE WARMUP MARK_FILE OUT.json
 */
import { Trace } from "../../src/rdma/connection.ts";
import { pingClient } from "../../src/rdma/ping.ts";
import { Canceller } from "../../src/rdma/wait.ts";

const [addr, port, count, size, warmup, markPath, out] = Deno.args;
if (!out) {
  console.error("usage: ping_marks.ts ADDR PORT COUNT SIZE WARMUP MARK_FILE OUT.json");
  Deno.exit(2);
}
const n = Number(count);
const mark = Deno.openSync(markPath, { write: true });
const enc = new TextEncoder();
const BEGIN = enc.encode("BEGIN\n"), END = enc.encode("END\n");
// Made before the loop: a sample costs no allocation (a marker's text only for a slow one).
const starts = new Float64Array(n), times = new Float64Array(n);
using cancel = new Canceller().onSignals();
await pingClient({
  host: addr,
  port: Number(port),
  op: "write",
  size: Number(size),
  count: n,
  warmup: Number(warmup),
  timeoutMs: 10000,
  trace: new Trace(false),
  cancel,
  onSample(t0, ms, k) {
    if (k < 0) return;
    starts[k] = t0;
    times[k] = ms;
    if (k === 0) mark.writeSync(BEGIN);
    if (ms >= 0.2) mark.writeSync(enc.encode(`S ${k} ${(ms * 1000).toFixed(1)}\n`));
    if (k === n - 1) mark.writeSync(END);
  },
});
mark.close();
const samples = Array.from(starts, (t, k) => [t, times[k]]);
Deno.writeTextFileSync(out, JSON.stringify({ yields: [], samples }));
