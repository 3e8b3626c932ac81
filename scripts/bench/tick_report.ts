/**
 * One line of scripts/bench_ping_ticks.sh: from a kernel trace (tracefs `trace`, mono clock, with
 * the client's markers BEGIN, "S k µs", END), how long the timer tick's handler took on the
 * client's CPU (the CPU the markers came from) and on the other one, how many round trips of
 * 200 and 300 µs or more came per second of loop time, and what share of them held a tick on the
 * client's CPU, on the other CPU, or no traced event at all (IRQ, IPI, softirq, switch, fault).
 *
 *   deno run --allow-read tick_report.ts TRACE LABEL
 */

interface Ev {
  cpu: number;
  /** µs */
  t: number;
  name: string;
  rest: string;
}

const LINE = /^\s*.+?-\d+\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$/;
/** Events that take the CPU from a spinning thread (entries, switches, faults). */
const TAKES_CPU = /(_entry|^sched_switch|^page_fault_user|^page_fault_kernel)$/;

export function parse(text: string): Ev[] {
  const out: Ev[] = [];
  for (const line of text.split("\n")) {
    const m = LINE.exec(line);
    if (m) out.push({ cpu: +m[1], t: +m[2] * 1e6, name: m[3], rest: m[4] });
  }
  return out;
}

const median = (a: number[]) => a.length ? [...a].sort((x, y) => x - y)[a.length >> 1] : NaN;

/** The report line of one trace. */
export function tickLine(label: string, evs: Ev[]): string {
  const marks = evs.filter((e) => e.name === "tracing_mark_write");
  const begin = marks.find((e) => e.rest.startsWith("BEGIN"));
  const end = marks.find((e) => e.rest.startsWith("END"));
  if (!begin || !end) throw new Error(`${label}: the trace has no BEGIN and END markers`);
  const loop = evs.filter((e) => e.t >= begin.t && e.t <= end.t);
  const seconds = (end.t - begin.t) / 1e6;
  const client = begin.cpu;
  const ticks: Record<"client" | "other", number[]> = { client: [], other: [] };
  const open = new Map<number, number>();
  for (const e of loop) {
    if (e.name === "local_timer_entry") open.set(e.cpu, e.t);
    else if (e.name === "local_timer_exit" && open.has(e.cpu)) {
      ticks[e.cpu === client ? "client" : "other"].push(e.t - open.get(e.cpu)!);
      open.delete(e.cpu);
    }
  }
  const slow = marks.filter((e) => e.rest.startsWith("S ") && e.t >= begin.t && e.t <= end.t)
    .map((e) => ({ end: e.t, us: Number(e.rest.split(" ")[2]) }));
  const cells = [200, 300].map((thr) => {
    const set = slow.filter((s) => s.us >= thr);
    let tickC = 0, tickO = 0, none = 0;
    for (const s of set) {
      const inside = loop.filter((e) => e.t >= s.end - s.us && e.t <= s.end);
      if (inside.some((e) => e.name === "local_timer_entry" && e.cpu === client)) tickC++;
      if (inside.some((e) => e.name === "local_timer_entry" && e.cpu !== client)) tickO++;
      if (!inside.some((e) => TAKES_CPU.test(e.name))) none++;
    }
    const pct = (x: number) => `${set.length ? (100 * x / set.length).toFixed(0) : "-"}%`;
    return `≥${thr} ${(set.length / seconds).toFixed(0)}/s (tick client ${pct(tickC)} other ${
      pct(tickO)
    } none ${pct(none)})`;
  });
  return `${label.padEnd(10)} tick µs median: client CPU ${
    median(ticks.client).toFixed(0)
  }, other ${median(ticks.other).toFixed(0)} | ${cells.join("  ")}`;
}

if (import.meta.main) {
  const [path, label] = Deno.args;
  if (!label) {
    console.error("usage: tick_report.ts TRACE LABEL");
    Deno.exit(2);
  }
  console.log(tickLine(label, parse(Deno.readTextFileSync(path))));
}
