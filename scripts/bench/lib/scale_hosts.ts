/**
 * The body of scripts/bench/scale_hosts.sh: one storage server at scale with hundreds of live
 * controllers from separate compute nodes, on the lab fabric (nvmet, nvme-rdma and nvme-tcp over
 * rxe, three guests).
 *
 * The storage server gets scale.sh's tree at size K (default 16: 64 subsystems × 4 null_blk
 * namespaces, 512 allowed host NQNs, 8 per subsystem, an rdma and a tcp port serving all). For
 * each count N of PER_NODE (default "0 16 128"), host1 brings its controllers over rdma up to N and
 * host2 over tcp as many, each as a host NQN and host ID of its own, spread over every subsystem.
 * The first FIRST of each node's connects (default 4) are `nvmeof connect` runs, one process each
 * as a user runs them; the rest are the floor: the option string written to /dev/nvme-fabrics by
 * one bash process with no fork.
 *
 * Timed inside the guests (their own clock, no lab round trip) at each N:
 * on the storage server a no-op `up`, `check`, `show`, `down --all` and `up --prune` refusing
 * (asserted: exit 1, both machines named, the nvmet tree unchanged), `target ana` moving port 1's
 * group to inaccessible and back beside the same move as one configfs write (and, on this
 * machine's clock, the move until every rdma path on host1 shows it), `metrics` and `top --once`;
 * on host1 `list --paths` and `list` beside nvme-cli's `list-subsys` and `list`, `metrics` and `top
 * --once` (at N = 0 what needs no connection: the baseline). Then `disconnect-all` on each node
 * and `down --all` of the tree. The table has each figure at each N, the peer's beside it, the
 * cost per controller ((t at the last N - t at 0) / N) and the growth exponent of that increase
 * between the second and the last N: what grows with the controllers, without the start-up.
 *
 * CALLS=1 counts instead of timing: each figure (but the connects and the host's view of an ANA
 * move) is the number of system calls on /sys paths the run made (strace, file calls: open, stat,
 * readlink…), sysfs and configfs alike, which the emulation's noise and the guests' load do not
 * move.
 *
 * A connect the kernel refuses stops that node's connects: the bench says how many were made and
 * the kernel's last lines, and measures at that size (the limit, and what bound it).
 */
import assert from "node:assert/strict";
import type { RunResult } from "../../../tests/helpers.ts";
import { addr, must, type Node, NVMEOF, on } from "../../../tests/fabric/fabric.ts";
import { hostNqn, subNqn } from "./scale.ts";

const K = Number(Deno.env.get("K") ?? "16");
const PER_NODE = (Deno.env.get("PER_NODE") ?? "0 16 128").trim().split(/\s+/).map(Number);
const FIRST = Number(Deno.env.get("FIRST") ?? "4");
/** Count system calls on /sys paths instead of timing (the emulation's noise does not move them). */
const CALLS = Deno.env.get("CALLS") === "1";
const S = K * 4;
const H = K * 32;
const NS = 4;
const ADDR = addr("target", 0);
const SPEC = "/etc/nvmeof/bench-scale.yaml";
const DROP = "/etc/nvmeof/bench-scale-drop.yaml";
const NVMET = "/sys/kernel/config/nvmet";
const LONG = { timeout: 1800 };
/** The collectors' time limit for metrics and top: the guests (and strace) are slow. */
const LIMIT = "--collector-timeout-ms 600000";
const say = (s: string) => console.error(`bench: ${new Date().toISOString().slice(11, 19)} ${s}`);

/** A host ID of its own per host NQN (the kernel refuses one ID under two NQNs). */
const hostId = (h: number) => `5ca1e000-0000-4000-8000-${String(h).padStart(12, "0")}`;

/** One timed run inside a guest: its exit code, seconds by the guest's clock, output. */
interface Timed extends RunResult {
  secs: number;
}

/**
 * Runs SCRIPT on NODE, in a subshell, and times it there (bash's EPOCHREALTIME around it). With
 * CALLS, `secs` is instead the number of its system calls on /sys paths (strace, file calls).
 */
async function timed(node: Node, script: string): Promise<Timed> {
  const r = await on(
    node,
    CALLS
      ? `cat > /tmp/bench.sh <<'BENCH'\n${script}\nBENCH\n` +
        `strace -f -qq --seccomp-bpf -e trace=%file -o /tmp/bench.strace bash /tmp/bench.sh ` +
        `>/tmp/bench.out 2>/tmp/bench.err; rc=$?; cat /tmp/bench.out; cat /tmp/bench.err >&2; ` +
        `echo "@@ $rc 0 $(grep -c '"/sys/' /tmp/bench.strace)" >&2`
      : `t0=$EPOCHREALTIME; ( ${script}\n) >/tmp/bench.out 2>/tmp/bench.err; rc=$?; ` +
        `t1=$EPOCHREALTIME; cat /tmp/bench.out; cat /tmp/bench.err >&2; echo "@@ $rc $t0 $t1" >&2`,
    LONG,
  );
  const m = /@@ (\d+) ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  if (!m) throw new Error(`${node}: ${script}: no timing (exit ${r.code}): ${r.stderr}`);
  return {
    code: Number(m[1]),
    stdout: r.stdout,
    stderr: r.stderr.slice(0, m.index),
    secs: Number(m[3]) - Number(m[2]),
  };
}

/** `nvmeof ARGS` on NODE, timed, exit 0 required unless CODE says otherwise. */
async function nvmeof(node: Node, args: string, code = 0): Promise<Timed> {
  const r = await timed(node, `${NVMEOF} ${args}`);
  if (r.code !== code) {
    throw new Error(`${node}: nvmeof ${args}: exit ${r.code}, not ${code}: ${r.stderr}`);
  }
  return r;
}

/** A digest of every path, link target and readable attribute value of the nvmet tree. */
function treeDigest(): Promise<string> {
  return must(
    "target",
    `cd ${NVMET} && { find . -printf '%p %l\\n'; grep -rs . . ; } | sort | md5sum`,
  );
}

/** The compute nodes' share: host K of subsystem S is (S-1)*8 + K; host1 takes 1.., host2 5... */
const NODES: { node: Node; trtype: "rdma" | "tcp"; svc: number; first: number }[] = [
  { node: "host1", trtype: "rdma", svc: 4420, first: 1 },
  { node: "host2", trtype: "tcp", svc: 4421, first: 5 },
];

/** The host numbers NODE connects as, round robin over the subsystems: [subsystem, host]. */
function plan(first: number, count: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < count; i++) {
    const s = (i % S) + 1;
    const k = Math.floor(i / S);
    if (k >= 4) {
      throw new Error(`PER_NODE ${count} is more than 4 hosts per subsystem at K ${K}`);
    }
    out.push([s, (s - 1) * 8 + first + k]);
  }
  return out;
}

/** The connect option string of host H to subsystem S. */
function optionString(n: typeof NODES[number], s: number, h: number): string {
  return `nqn=${subNqn(s)},transport=${n.trtype},traddr=${ADDR},trsvcid=${n.svc},` +
    `hostnqn=${hostNqn(h)},hostid=${hostId(h)},nr_io_queues=1,queue_size=32`;
}

interface Connected {
  node: Node;
  made: number;
  nvmeofSecs: number[];
  floorSecs: number;
  floorCount: number;
  stopped?: string;
}

/**
 * NODE's connects from FROM up to COUNT: those below FIRST by `nvmeof connect`, the rest by the
 * floor, until one is refused.
 */
async function connectNode(
  n: typeof NODES[number],
  from: number,
  count: number,
): Promise<Connected> {
  await must(n.node, `modprobe nvme-${n.trtype}`);
  const all = plan(n.first, count).slice(from);
  const out: Connected = { node: n.node, made: from, nvmeofSecs: [], floorSecs: 0, floorCount: 0 };
  const first = Math.max(0, FIRST - from);
  for (const [s, h] of all.slice(0, first)) {
    const r = await timed(
      n.node,
      `${NVMEOF} connect -t ${n.trtype} -a ${ADDR} -s ${n.svc} -n ${subNqn(s)} -q ${hostNqn(h)} ` +
        `-I ${hostId(h)} -i 1 -Q 32`,
    );
    if (r.code !== 0) {
      out.stopped = `nvmeof connect ${out.made + 1}: ${r.stderr.trim()}`;
      return out;
    }
    out.nvmeofSecs.push(r.secs);
    out.made++;
  }
  const rest = all.slice(first).map(([s, h]) => optionString(n, s, h));
  if (rest.length === 0) return out;
  // One bash, no fork: open, write the option string, read the answer, close; stop at a refusal.
  const script = `n=0; t0=$EPOCHREALTIME
while read -r o; do
  exec 3<>/dev/nvme-fabrics || break
  printf '%s\\n' "$o" >&3 2>/tmp/bench.fail || { exec 3>&-; break; }
  read -r line <&3; exec 3>&-; n=$((n+1))
done <<'OPTS'
${rest.join("\n")}
OPTS
t1=$EPOCHREALTIME; echo "$n $t0 $t1"; [ -s /tmp/bench.fail ] && { cat /tmp/bench.fail; dmesg | tail -n 5; }; true`;
  const r = await must(n.node, script, LONG);
  const [written, t0, t1] = r.split("\n")[0].split(" ").map(Number);
  out.floorCount = written;
  out.floorSecs = t1 - t0;
  out.made += written;
  if (written < rest.length) {
    out.stopped = `connect ${out.made + 1}: ${r.split("\n").slice(1).join(" ")}`;
  }
  return out;
}

/** Waits until NODE has COUNT live controllers of the bench's subsystems; the seconds waited. */
async function waitLive(node: Node, count: number): Promise<number> {
  const r = await timed(
    node,
    `for i in $(seq 600); do n=0; for c in /sys/class/nvme/nvme*; do ` +
      `read -r q < $c/subsysnqn 2>/dev/null; case "$q" in nqn.2026-10.pk.nextgen:scale-*) ` +
      `read -r st < $c/state; [ "$st" = live ] && n=$((n+1));; esac; done; ` +
      `[ $n -ge ${count} ] && exit 0; sleep 0.5; done; echo "$n live" >&2; exit 1`,
  );
  if (r.code !== 0) throw new Error(`${node}: not ${count} live controllers: ${r.stderr}`);
  return r.secs;
}

/** Waits until every path on host1 (its rdma controllers) reports STATE (builtins: no fork per file). */
async function hostSees(state: string): Promise<void> {
  const r = await on(
    "host1",
    `for i in $(seq 1200); do bad=0; for p in /sys/class/nvme/nvme*/nvme*c*n*/ana_state; do ` +
      `read -r v < $p; [ "$v" = ${state} ] || { bad=1; break; }; done; [ $bad = 0 ] && exit 0; sleep 0.05; done; exit 1`,
    LONG,
  );
  if (r.code !== 0) throw new Error(`host1: the paths did not all become ${state}`);
}

/** One row of the table: an operation's seconds at each count, and the peer's beside them. */
interface Row {
  what: string;
  at: Map<number, { nvmeof: number; peer?: number }>;
}
const rows = new Map<string, Row>();

/** Records an operation's figure at controller count N (with CALLS, only those that are counts). */
function record(n: number, what: string, nvmeofSecs: number, peer?: number) {
  if (CALLS && (what.includes("lab clock") || what.startsWith("connect,"))) return;
  const r = rows.get(what) ?? { what, at: new Map() };
  r.at.set(n, { nvmeof: nvmeofSecs, peer });
  rows.set(what, r);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const samples = (exposition: string) =>
  exposition.split("\n").filter((l) => l && !l.startsWith("#")).length;

/** With N controllers on each node: the refusals, and `target ana` beside one configfs write. */
async function refusals(n: number): Promise<void> {
  const before = await treeDigest();
  const down = await nvmeof("target", "target down --all", 1);
  assert.match(down.stderr, /Hosts are still connected/);
  for (const x of NODES) assert.ok(down.stderr.includes(addr(x.node, 0)), down.stderr);
  record(n, "target down --all, refused (target)", down.secs);
  const prune = await nvmeof("target", `target up --prune -f ${DROP}`, 1);
  assert.match(prune.stderr, /Hosts are still connected.*nothing was changed/s);
  record(n, "target up --prune, refused (target)", prune.secs);
  assert.equal(await treeDigest(), before, "a refusal changed the nvmet tree");
  say(`refusal: ${down.stderr.trim()}`);

  // ANA: port 1's group to inaccessible and back, by nvmeof and by one configfs write; the
  // host's view on this machine's clock from the command's start (the lab's round trip in both).
  const group = `${NVMET}/ports/1/ana_groups/1/ana_state`;
  const ana: Record<string, number[]> = {};
  const moves: [string, string, string][] = [
    [
      "nvmeof",
      `${NVMEOF} target ana --port 1 --state inaccessible`,
      `${NVMEOF} target ana --port 1 --state optimized`,
    ],
    ["write", `echo inaccessible > ${group}`, `echo optimized > ${group}`],
  ];
  for (const [name, to, back] of moves) {
    const figures: number[] = [];
    for (const [cmd, state] of [[to, "inaccessible"], [back, "optimized"]]) {
      const t0 = performance.now();
      const r = await timed("target", cmd);
      if (r.code !== 0) throw new Error(`target: ${cmd}: exit ${r.code}: ${r.stderr}`);
      await hostSees(state);
      figures.push(r.secs, (performance.now() - t0) / 1000);
    }
    ana[name] = figures;
    say(
      `${name}: ANA move ${figures[0].toFixed(2)} s, on host1 ${figures[1].toFixed(2)} s; back ` +
        `${figures[2].toFixed(2)} s, on host1 ${figures[3].toFixed(2)} s`,
    );
  }
  const [nv, wr] = [ana.nvmeof, ana.write];
  record(n, "target ana: port 1 to inaccessible (target)", nv[0], wr[0]);
  record(n, "  ... every path on host1 inaccessible (lab clock)", nv[1], wr[1]);
  record(n, "target ana: back to optimized (target)", nv[2], wr[2]);
  record(n, "  ... every path on host1 optimized (lab clock)", nv[3], wr[3]);
}

/** Everything timed with N controllers per compute node live (at 0: what needs none). */
async function measure(n: number): Promise<void> {
  // The storage server under them.
  const dry = await nvmeof("target", `target up -f ${SPEC} --dry-run -o json`);
  assert.deepEqual(JSON.parse(dry.stdout).steps, [], "a second up plans steps");
  const noop = await nvmeof("target", `target up -f ${SPEC}`);
  assert.match(noop.stdout, /^No changes/);
  record(n, "no-op target up (target)", noop.secs);
  record(n, "target check (target)", (await nvmeof("target", `target check -f ${SPEC}`)).secs);
  record(n, "target show (target)", (await nvmeof("target", "target show")).secs);
  if (n > 0) await refusals(n);
  const tm = await nvmeof("target", `metrics ${LIMIT}`);
  assert.doesNotMatch(
    tm.stdout,
    /^nvmeof_scrape_collector_success\{.*\} 0$/m,
    "a collector failed",
  );
  for (const port of ["1", "2"]) {
    const m = new RegExp(
      `^nvmeof_target_port_connections\\{[^}]*port="${port}"[^}]*\\} (\\d+)$`,
      "m",
    ).exec(tm.stdout);
    assert.equal(Number(m?.[1] ?? 0), 2 * n, `port ${port}'s queues in the metrics`);
  }
  say(`target metrics: ${samples(tm.stdout)} samples, ${2 * n} queues on each port`);
  record(n, "metrics (target)", tm.secs);
  record(n, "top --once (target)", (await nvmeof("target", `top --once ${LIMIT}`)).secs);

  // A compute node with its controllers.
  const paths = await nvmeof("host1", "list --paths -o json");
  const listed = JSON.parse(paths.stdout) as { subsystems: { controllers: unknown[] }[] };
  assert.equal(listed.subsystems.reduce((a, s) => a + s.controllers.length, 0), n);
  const cli = await timed("host1", "nvme list-subsys -o json");
  record(n, "list --paths -o json (host1)", paths.secs, cli.secs);
  record(n, "list --paths (host1)", (await nvmeof("host1", "list --paths")).secs);
  const ns = await nvmeof("host1", "list -o json");
  const nsCli = await timed("host1", "nvme list -o json");
  record(n, "list -o json (host1)", ns.secs, nsCli.secs);
  const hm = await nvmeof("host1", `metrics ${LIMIT}`);
  assert.doesNotMatch(
    hm.stdout,
    /^nvmeof_scrape_collector_success\{.*\} 0$/m,
    "a collector failed",
  );
  say(`host1 metrics: ${samples(hm.stdout)} samples`);
  record(n, "metrics (host1)", hm.secs);
  record(n, "top --once (host1)", (await nvmeof("host1", `top --once ${LIMIT}`)).secs);
}

/**
 * The table: each row's figures at each count, the peer's and the ratio; the cost per controller
 * ((t at the last count - t at 0) / count, in ms) and the exponent of that increase between the
 * second and the last count, log(d_hi/d_lo)/log(N_hi/N_lo): what grows with the controllers.
 */
function table(counts: number[]): string[] {
  const f = (v?: number) => v === undefined ? "" : v.toFixed(CALLS ? 0 : 2);
  const head = ["operation"];
  for (const n of counts) head.push(`nvmeof@${n}`, `peer@${n}`, `ratio@${n}`);
  head.push(CALLS ? "calls/ctrl" : "ms/ctrl", "exponent");
  const out = [head];
  const hi = counts[counts.length - 1];
  const lo = counts.find((n) => n > 0 && n < hi);
  for (const r of rows.values()) {
    const line = [r.what];
    for (const n of counts) {
      const a = r.at.get(n);
      line.push(f(a?.nvmeof), f(a?.peer), a?.peer ? `${(a.nvmeof / a.peer).toFixed(2)}x` : "");
    }
    const base = r.at.get(0)?.nvmeof;
    const top = r.at.get(hi)?.nvmeof;
    const mid = lo === undefined ? undefined : r.at.get(lo)?.nvmeof;
    const [dHi, dLo] = base === undefined || top === undefined
      ? [undefined, undefined]
      : [top - base, mid === undefined ? undefined : mid - base];
    line.push(
      dHi === undefined || hi === 0 ? "" : (dHi / hi * (CALLS ? 1 : 1000)).toFixed(1),
      dHi !== undefined && dLo !== undefined && dHi > 0 && dLo > 0
        ? (Math.log(dHi / dLo) / Math.log(hi / lo!)).toFixed(2)
        : "",
    );
    out.push(line);
  }
  const widths = head.map((_, i) => Math.max(...out.map((l) => (l[i] ?? "").length)));
  return out.map((l) =>
    l.map((c, i) => i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])).join("  ")
  );
}

async function main(): Promise<void> {
  // The tree: S subsystems of NS null_blk namespaces, H hosts, both ports on the storage server.
  say(`storage server: ${S} subsystems x ${NS} null_blk namespaces, ${H} hosts, 2 ports`);
  const lib = `. scripts/lib.sh && find_deno && "$deno" run "\${NVMEOF_RUN_FLAGS[@]}" ` +
    `"\${NVMEOF_PERMS[@]}" scripts/bench/lib/scale.ts`;
  await must(
    "target",
    `set -e; modprobe -r null_blk 2>/dev/null || true; modprobe null_blk nr_devices=${S * NS}; ` +
      `modprobe nvmet-rdma; modprobe nvmet-tcp; mkdir -p /etc/nvmeof; ` +
      `for i in $(seq 100); do [ -b /dev/nullb${S * NS - 1} ] && break; sleep 0.1; done; ` +
      `${lib} spec ${S} ${H} ${NS} --addr ${ADDR} > ${SPEC}; ` +
      `${lib} spec ${S} ${H} ${NS} --addr ${ADDR} --drop-last > ${DROP}`,
  );
  await nvmeof("target", "target show");
  const start = await nvmeof("target", "target show");
  const up = await nvmeof("target", `target up -f ${SPEC}`);
  const unit = CALLS ? "calls" : "s";
  say(
    `up from empty ${up.secs.toFixed(2)} ${unit} (start-up: an empty show ${
      start.secs.toFixed(2)
    } ${unit})`,
  );

  const connects: Record<string, { nvmeof: number[]; floor: number; floorCount: number }> = {};
  const counts: number[] = [];
  let stopped = "";
  let have = 0;
  for (const want of PER_NODE) {
    const made = await Promise.all(NODES.map((x) => connectNode(x, have, want)));
    for (const c of made) {
      const acc = connects[c.node] ??= { nvmeof: [], floor: 0, floorCount: 0 };
      acc.nvmeof.push(...c.nvmeofSecs);
      acc.floor += c.floorSecs;
      acc.floorCount += c.floorCount;
      say(`${c.node}: ${c.made} controllers${c.stopped ? `; stopped at ${c.stopped}` : ""}`);
      if (c.stopped) stopped = `${c.node}: ${c.stopped}`;
    }
    const n = Math.min(...made.map((c) => c.made));
    for (const x of NODES) await waitLive(x.node, made.find((c) => c.node === x.node)!.made);
    say(`${made.reduce((a, c) => a + c.made, 0)} controllers live`);
    if (n < want) {
      // The limit: measure at what the smaller side holds, and go no further.
      counts.push(n);
      await measure(n);
      break;
    }
    counts.push(n);
    await measure(n);
    have = n;
  }
  for (const [node, c] of Object.entries(connects)) {
    const trtype = NODES.find((x) => x.node === node)!.trtype;
    record(
      counts.find((n) => n > 0) ?? 0,
      `connect, one controller (${node}, ${trtype})`,
      median(c.nvmeof),
      c.floorCount ? c.floor / c.floorCount : undefined,
    );
  }

  // Away again.
  const last = counts[counts.length - 1];
  for (const x of NODES) {
    record(last, `disconnect-all (${x.node})`, (await nvmeof(x.node, "disconnect-all")).secs);
  }
  await must(
    "target",
    `for i in $(seq 300); do rdma res show cm_id | grep -q 'state CONNECT' || ` +
      `ss -Htn state established '( sport = :4421 )' | grep -q . || exit 0; sleep 0.2; done; exit 1`,
    LONG,
  );
  record(last, "target down --all (target)", (await nvmeof("target", "target down --all")).secs);
  record(last, "target up from empty (target)", up.secs);
  record(last, "start-up: target show of an empty tree (target)", start.secs);

  console.log(
    `scale with hosts: the storage server at ${K}x (${S} subsystems x ${NS} null_blk namespaces, ` +
      `${H} allowed hosts, 2 ports); N controllers on each of host1 (rdma) and host2 (tcp), ` +
      `${stopped ? `stopped by a refused connect (${stopped})` : "every connect made"}; ` +
      `${CALLS ? "system calls on /sys paths (CALLS=1)" : "seconds inside the guests"}; ${
        CALLS ? "calls" : "ms"
      }/ctrl: (t at the last N - t at 0) / N; exponent: ` +
      `log(d_hi/d_lo)/log(N_hi/N_lo) of d = t - t at 0`,
  );
  for (const l of table(counts)) console.log(l);
}

try {
  await main();
} finally {
  await on("host1", `${NVMEOF} disconnect-all >/dev/null 2>&1; true`, LONG);
  await on("host2", `${NVMEOF} disconnect-all >/dev/null 2>&1; true`, LONG);
  await on(
    "target",
    `${NVMEOF} target down --all --force >/dev/null 2>&1; rm -f ${SPEC} ${DROP}; true`,
    LONG,
  );
}
