/**
 * Where the long iterations of `rdma ping --op write` come from: runs one ping (client and
 * server each in its own process, both this script) recording every iteration's start and
 * length, every event-loop turn of either side's spin loop (when it began and ended) and, with V8's --trace-gc, every garbage collection of either side; then prints a
 * histogram of the round trips and, for the slow ones, which of those overlapped them.
 * Driven by scripts/bench_ping_tail.sh (meant for the lab guest), which keeps the files:
 *
 *   deno run -A --v8-flags=--expose-gc,--trace-gc ping_tail.ts server ADDR PORT OUT.json
 *   deno run -A --v8-flags=--expose-gc,--trace-gc ping_tail.ts client ADDR PORT COUNT SIZE OUT.json [WARMUP]
 *   deno run -A ping_tail.ts report CLIENT.json CLIENT_GC.log SERVER.json SERVER_GC.log
 *
 * Times are absolute (performance.timeOrigin + performance.now(), ms) so the two processes'
 * events line up. V8 stamps its GC lines with ms since its isolate started; each side runs one
 * gc() (reason "testing") before the ping and records when, which aligns its GC lines.
 */
import { Listener, Trace } from "../../src/rdma/connection.ts";
import { pingClient } from "../../src/rdma/ping.ts";
import { serve } from "../../src/rdma/ping_server.ts";
import { Canceller } from "../../src/rdma/wait.ts";

/** What one side recorded. */
interface Record {
  /** Absolute time of the end of the aligning gc(), or undefined without --expose-gc. */
  gcMark?: number;
  /** [start, end] of every event-loop turn of the spin loop, absolute ms. */
  yields: [number, number][];
  /** Client: [start, round trip] of every iteration, absolute ms. */
  samples?: [number, number][];
}

const abs = (t: number) => performance.timeOrigin + t;

/** Records an event-loop turn of a spin loop (performance.now() times). */
function turnInto(rec: Record): (start: number, end: number) => void {
  return (start, end) => rec.yields.push([abs(start), abs(end)]);
}

function markGc(rec: Record): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return;
  gc();
  rec.gcMark = abs(performance.now());
}

/** One GC from a --trace-gc line: when it ended (absolute ms), its pause and kind. */
interface Gc {
  end: number;
  pause: number;
  kind: string;
}

/** The GC lines of a --trace-gc log, aligned by the first "testing" collection (the mark). */
function readGc(path: string, mark: number | undefined): Gc[] {
  const re = /\]\s+(\d+) ms: (.+?) [\d.]+ \([\d.]+\) -> .*? MB, .*?([\d.]+) \/ [\d.]+ ms/;
  const out: Gc[] = [];
  let offset: number | undefined;
  for (const line of Deno.readTextFileSync(path).split("\n")) {
    const m = re.exec(line);
    if (!m) continue;
    const t = Number(m[1]);
    if (offset === undefined) {
      if (mark === undefined || !line.includes("testing")) continue;
      offset = mark - t;
      continue;
    }
    out.push({ end: t + offset, pause: Number(m[3]), kind: m[2] });
  }
  return out;
}

function report(args: string[]): void {
  const [cPath, cGcPath, sPath, sGcPath] = args;
  const c: Record = JSON.parse(Deno.readTextFileSync(cPath));
  const s: Record = JSON.parse(Deno.readTextFileSync(sPath));
  const cGc = readGc(cGcPath, c.gcMark);
  const sGc = readGc(sGcPath, s.gcMark);
  const samples = c.samples!;
  const first = samples[0][0];
  const last = samples[samples.length - 1][0] + samples[samples.length - 1][1];
  const inRun = (t: number) => t >= first && t <= last;
  const us = samples.map(([, ms]) => ms * 1000).sort((a, b) => a - b);
  const median = us[Math.floor(us.length / 2)];
  const total = us.reduce((a, b) => a + b, 0);
  console.log(
    `${samples.length} round trips over ${(last - first).toFixed(0)} ms: median ${
      median.toFixed(1)
    } µs, mean ${(total / us.length).toFixed(1)} µs, p99 ${
      us[Math.ceil(0.99 * us.length) - 1].toFixed(1)
    } µs, max ${us[us.length - 1].toFixed(0)} µs`,
  );
  console.log("\nround trip (µs)      iterations   share of all time");
  const edges = [0, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, Infinity];
  for (let b = 0; b + 1 < edges.length; b++) {
    const inB = us.filter((x) => x >= edges[b] && x < edges[b + 1]);
    if (inB.length === 0) continue;
    const sum = inB.reduce((a, x) => a + x, 0);
    const label = `${edges[b]}-${edges[b + 1] === Infinity ? "" : edges[b + 1]}`;
    console.log(
      `${label.padEnd(18)} ${String(inB.length).padStart(12)}   ${
        (100 * sum / total).toFixed(1).padStart(5)
      } %`,
    );
  }
  const cY = c.yields.filter(([a, f]) => inRun(a) || inRun(f));
  const sY = s.yields.filter(([a, f]) => inRun(a) || inRun(f));
  const cG = cGc.filter((g) => inRun(g.end));
  const sG = sGc.filter((g) => inRun(g.end));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const yLen = (ys: [number, number][]) => sum(ys.map(([a, f]) => f - a));
  console.log(
    `\nduring the run: client yields ${cY.length} (${yLen(cY).toFixed(1)} ms in all), ` +
      `server yields ${sY.length} (${yLen(sY).toFixed(1)} ms), client GCs ${cG.length} (${
        sum(cG.map((g) => g.pause)).toFixed(1)
      } ms paused), server GCs ${sG.length} (${sum(sG.map((g) => g.pause)).toFixed(1)} ms paused)` +
      (c.gcMark === undefined ? " (no GC alignment: run with --expose-gc)" : ""),
  );
  // Time-weighted: how much of the round trips' time passed while a side was in an event-loop
  // turn or a GC pause (intervals merged, so time in two at once counts once).
  const turns = [...cY, ...sY];
  const gcs = [...cG, ...sG].map((g): [number, number] => [g.end - g.pause, g.end]);
  const shares: [string, [number, number][]][] = [
    ["client turns", cY],
    ["server turns", sY],
    ["either side's turns", turns],
    ["either side's GC pauses", gcs],
    ["turns or GC pauses", [...turns, ...gcs]],
  ];
  console.log("\nshare of the round trips' time spent while …");
  for (const limit of [0, 1000]) {
    const its = samples.filter(([, ms]) => ms * 1000 >= limit);
    const all = sum(its.map(([, ms]) => ms));
    const cells = shares.map(([name, ivs]) => {
      const merged = merge(ivs);
      let t = 0;
      for (const [t0, ms] of its) t += overlap(merged, t0, t0 + ms);
      return `${name} ${(100 * t / all).toFixed(1)} %`;
    });
    console.log(
      `  round trips ≥ ${limit} µs (${its.length}, ${all.toFixed(0)} ms): ${cells.join(", ")}`,
    );
  }
}

/** Sorted, disjoint union of intervals. */
function merge(ivs: [number, number][]): [number, number][] {
  const out: [number, number][] = [];
  for (const [a, b] of [...ivs].sort((x, y) => x[0] - y[0])) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** Time of [t0, t1] covered by the merged intervals. */
function overlap(merged: [number, number][], t0: number, t1: number): number {
  let t = 0;
  for (const [a, b] of merged) {
    if (a >= t1) break;
    if (b > t0) t += Math.min(b, t1) - Math.max(a, t0);
  }
  return t;
}

async function main(): Promise<void> {
  const [mode, ...args] = Deno.args;
  const rec: Record = { yields: [] };
  if (mode === "server") {
    const [addr, port, out] = args;
    using cancel = new Canceller().onSignals();
    using listener = new Listener(addr, Number(port));
    markGc(rec);
    console.error("ping_tail server listening");
    await serve(listener, {
      timeoutMs: 60000,
      trace: false,
      cancel,
      maxClients: 1,
      note: (l) => console.error(l),
      onTurn: turnInto(rec),
    });
    Deno.writeTextFileSync(out, JSON.stringify(rec));
  } else if (mode === "client") {
    const [addr, port, count, size, out, warmup] = args;
    markGc(rec);
    // Filled in place: an array per iteration would be garbage the collector stops the loop for.
    const n = Number(count);
    const flat = new Float64Array(2 * n);
    await pingClient({
      host: addr,
      port: Number(port),
      op: "write",
      size: Number(size),
      count: Number(count),
      warmup: Number(warmup ?? 0),
      timeoutMs: 60000,
      trace: new Trace(false),
      onSample: (t0, ms, k) => {
        if (k < 0) return;
        flat[2 * k] = t0;
        flat[2 * k + 1] = ms;
      },
      onTurn: turnInto(rec),
    });
    rec.samples = Array.from({ length: n }, (_, k) => [abs(flat[2 * k]), flat[2 * k + 1]]);
    Deno.writeTextFileSync(out, JSON.stringify(rec));
  } else if (mode === "report") {
    report(args);
  } else {
    console.error("usage: ping_tail.ts server|client|report …");
    Deno.exit(2);
  }
}

await main();
