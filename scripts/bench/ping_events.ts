/**
 * One line of scripts/bench_ping_events.sh: the round trips of one latency run, from
 * `ib_write_lat -U` (its unsorted one-way µs per iteration, doubled) or from
 * scripts/bench/ping_tail.ts's client record (`samples`: [start, ms] per iteration). Prints the
 * median, average, p99 and p99.9, and for each threshold the share of the iterations at or over it
 * and how many such iterations came per second of the loop's time: a stall the platform makes at
 * a fixed rate (the guest's timer tick) comes as often per second to either tool, and its share
 * of the iterations grows with the tool's round trip.
 *
 *   deno run --allow-read ping_events.ts perftest|nvmeof FILE [LABEL]
 *
 * perftest: ib_write_lat -U's lines (write_peer client's RECORD has the same form); nvmeof:
 * ping_tail.ts's record. LABEL names the line (default the form's name).
 */

const THRESHOLDS_US = [100, 200, 300, 500, 1000];

/** The round trips (µs) in a file of `tool`'s output. */
export function roundTrips(tool: string, text: string): number[] {
  if (tool === "perftest") {
    const out: number[] = [];
    for (const line of text.split("\n")) {
      const m = /^\s*\d+,\s*([\d.eE+-]+)\s*$/.exec(line);
      if (m) out.push(2 * Number(m[1]));
    }
    return out;
  }
  const rec = JSON.parse(text) as { samples: [number, number][] };
  return rec.samples.map(([, ms]) => ms * 1000);
}

/** The report line for `rt` (µs). */
export function eventsLine(tool: string, rt: number[]): string {
  const sorted = [...rt].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  const seconds = rt.reduce((a, b) => a + b, 0) / 1e6;
  const cells = THRESHOLDS_US.map((t) => {
    const n = rt.filter((x) => x >= t).length;
    return `≥${t} ${(100 * n / rt.length).toFixed(2)}% ${(n / seconds).toFixed(0)}/s`;
  });
  return `${tool.padEnd(11)} ${String(rt.length).padStart(6)} RTs in ${
    (seconds * 1000).toFixed(0).padStart(5)
  } ms: median ${q(0.5).toFixed(1)} avg ${(seconds * 1e6 / rt.length).toFixed(1)} p99 ${
    q(0.99).toFixed(1)
  } p99.9 ${q(0.999).toFixed(1)} µs | ${cells.join("  ")}`;
}

if (import.meta.main) {
  const [tool, path, label = tool] = Deno.args;
  if ((tool !== "perftest" && tool !== "nvmeof") || !path) {
    console.error("usage: ping_events.ts perftest|nvmeof FILE [LABEL]");
    Deno.exit(2);
  }
  const rt = roundTrips(tool, Deno.readTextFileSync(path));
  if (rt.length === 0) {
    console.error(`ping_events: no iterations in ${path}`);
    Deno.exit(1);
  }
  console.log(eventsLine(label, rt));
}
