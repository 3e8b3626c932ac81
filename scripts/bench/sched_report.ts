/**
 * Who took the CPU from a ping's spinning threads: reads a kernel trace of sched_switch events
 * (tracefs `trace`, as scripts/bench_ping_sched.sh records it) and prints how often and how long
 * the spinning threads were preempted (switched out while still runnable), and what ran on their
 * CPU while they waited, by kind: the other spinner, the tool's own other threads (by name), the
 * kernel's softirq and worker threads, anything else. Only the ping's loop counts: the LOOP_MS
 * before the client's thread last ran (iterations × average round trip), or without LOOP_MS the
 * longest stretch in which the client's thread never went to sleep.
 *
 *   deno run -A sched_report.ts TRACE LABEL SERVER_PID,CLIENT_PID OWN_THREADS_REGEX [LOOP_MS]
 */

interface Switch {
  cpu: number;
  /** ms */
  t: number;
  prevComm: string;
  prevPid: number;
  prevState: string;
  nextPid: number;
}

/** The longest stretch [start, end] (ms) in which `pid` ran or waited to run but never slept. */
function awakeStretch(switches: Switch[], pid: number): [number, number] {
  let best: [number, number] = [0, 0];
  let from: number | undefined;
  for (const s of switches) {
    if (s.nextPid === pid && from === undefined) from = s.t;
    if (s.prevPid === pid && !s.prevState.startsWith("R") && from !== undefined) {
      if (s.t - from > best[1] - best[0]) best = [from, s.t];
      from = undefined;
    }
  }
  const end = switches.at(-1)?.t ?? 0;
  if (from !== undefined && end - from > best[1] - best[0]) best = [from, end];
  return best;
}

interface Spell {
  pid: number;
  cpu: number;
  start: number;
}

/** What a thread that ran while a spinner waited counts as. */
function kind(pid: number, comm: string, spinners: Set<number>, own: RegExp): string {
  if (spinners.has(pid)) return "the other spinner";
  if (pid === 0) return "idle";
  if (comm.startsWith("ksoftirqd")) return "kernel: ksoftirqd";
  if (comm.startsWith("kworker")) return "kernel: kworker";
  if (own.test(comm)) return `own thread: ${comm}`;
  return `other: ${comm}`;
}

const LINE =
  /\[(\d+)\]\s+(?:\S+\s+)?([\d.]+): sched_switch: prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/;

function main(): void {
  const [path, label, pidList, ownRe, loopMs] = Deno.args;
  if (!path || !label || !pidList || !ownRe) {
    console.error("usage: sched_report.ts TRACE LABEL PID,PID OWN_THREADS_REGEX");
    Deno.exit(2);
  }
  const pids = pidList.split(",").map(Number);
  const spinners = new Set(pids);
  const own = new RegExp(ownRe);
  const all: Switch[] = [];
  for (const line of Deno.readTextFileSync(path).split("\n")) {
    const m = LINE.exec(line);
    if (!m) continue;
    all.push({
      cpu: Number(m[1]),
      t: Number(m[2]) * 1000,
      prevComm: m[3],
      prevPid: Number(m[4]),
      prevState: m[5],
      nextPid: Number(m[7]),
    });
  }
  const client = pids[pids.length - 1];
  const lastRan = all.findLast((s) => s.prevPid === client)?.t ?? 0;
  const [w0, w1] = loopMs ? [lastRan - Number(loopMs), lastRan] : awakeStretch(all, client);
  const lastSwitch = new Map<number, number>();
  const onSince = new Map<number, number>();
  const open = new Map<number, Spell>();
  const instead = new Map<string, number>();
  /** The same, by quarter of the loop: what wakes early (start-up work) and what keeps on. */
  const quarters = new Map<string, number[]>();
  const spells: number[] = [];
  let onCpu = 0;
  let sleeps = 0;
  for (const { cpu, t, prevComm, prevPid, prevState, nextPid } of all) {
    if (t < w0 || t > w1) {
      lastSwitch.set(cpu, t);
      continue;
    }
    const since = lastSwitch.get(cpu);
    if (since !== undefined) {
      for (const s of open.values()) {
        if (s.cpu !== cpu || t <= s.start) continue;
        const k = kind(prevPid, prevComm, spinners, own);
        const ms = t - Math.max(since, s.start);
        instead.set(k, (instead.get(k) ?? 0) + ms);
        const q = Math.min(3, Math.floor((4 * (t - w0)) / (w1 - w0)));
        const byQ = quarters.get(k) ?? [0, 0, 0, 0];
        byQ[q] += ms;
        quarters.set(k, byQ);
      }
    }
    lastSwitch.set(cpu, t);
    if (spinners.has(prevPid)) {
      const from = onSince.get(prevPid) ?? w0;
      onCpu += t - from;
      onSince.delete(prevPid);
      if (prevState.startsWith("R")) open.set(prevPid, { pid: prevPid, cpu, start: t });
      else if (/^[SD]/.test(prevState)) sleeps++;
    }
    if (spinners.has(nextPid)) {
      onSince.set(nextPid, t);
      const s = open.get(nextPid);
      if (s) {
        spells.push(t - s.start);
        open.delete(nextPid);
      }
    }
  }
  for (const from of onSince.values()) onCpu += w1 - from;
  const off = spells.reduce((a, b) => a + b, 0);
  const longest = spells.length ? Math.max(...spells) : 0;
  const atLeast = (ms: number) => spells.filter((d) => d >= ms).length;
  console.log(
    `${label}: the client's loop, ${((w1 - w0) / 1000).toFixed(2)} s` +
      (loopMs ? "" : " without a sleep"),
  );
  console.log(
    `  spinners preempted ${spells.length} times, ${off.toFixed(1)} ms off CPU while runnable ` +
      `(${onCpu > 0 ? ((100 * off) / (onCpu + off)).toFixed(1) : "?"}% of their time), longest ` +
      `${longest.toFixed(2)} ms; spells ≥ 1 ms: ${atLeast(1)}, ≥ 5 ms: ${atLeast(5)}; ` +
      `went to sleep ${sleeps} times`,
  );
  const rows = [...instead.entries()].sort((a, b) => b[1] - a[1]);
  console.log("  what ran on their CPU meanwhile (ms; then by quarter of the loop):");
  for (const [k, ms] of rows.slice(0, 12)) {
    const q = (quarters.get(k) ?? []).map((x) => x.toFixed(0)).join(" / ");
    console.log(`    ${ms.toFixed(1).padStart(9)}  ${k}  (${q})`);
  }
}

main();
