/**
 * The client half of scripts/bench_ping_jit.sh: one `rdma ping --op write` through the ping's own
 * client code, writing a marker line to stdout (unbuffered, so it lands among V8's --trace-opt,
 * --trace-deopt and --trace-gc lines in order) when the timed loop begins and ends, for every
 * timed iteration over SLOW_MS and for every event-loop turn the spin loop takes. Last, a RESULT
 * line with the one-way median, average, p99 and maximum (µs).
 *
 *   deno run -A --v8-flags=--trace-opt,... ping_jit.ts ADDR PORT COUNT WARMUP [SIZE]
 */
import { Trace } from "../../src/rdma/connection.ts";
import { pingClient } from "../../src/rdma/ping.ts";

const SLOW_MS = 2;

async function main(): Promise<void> {
  const [host, port, count, warmup, size] = Deno.args;
  if (!host || !port || !count || !warmup) {
    console.error("usage: ping_jit.ts ADDR PORT COUNT WARMUP [SIZE]");
    Deno.exit(2);
  }
  const n = Number(count);
  const enc = new TextEncoder();
  const mark = (line: string) =>
    Deno.stdout.writeSync(enc.encode(`=== ${performance.now().toFixed(1)} ms: ${line}\n`));
  let done = 0;
  const r = await pingClient({
    host,
    port: Number(port),
    op: "write",
    size: Number(size ?? 64),
    count: n,
    warmup: Number(warmup),
    timeoutMs: 10000,
    trace: new Trace(false),
    onTurn: (start, end) => mark(`event-loop turn of ${(end - start).toFixed(2)} ms`),
    onSample: (_start, ms, k) => {
      if (k < 0) return;
      if (done === 0) mark("timed loop begins");
      done++;
      if (ms > SLOW_MS) mark(`iteration ${done} took ${ms.toFixed(2)} ms`);
      if (done === n) mark("timed loop ends");
    },
  });
  const l = r.latency;
  console.log(
    `RESULT one-way µs: median ${l.median_us / 2} average ${l.avg_us / 2} p99 ${l.p99_us / 2} ` +
      `max ${l.max_us / 2}`,
  );
}

await main();
