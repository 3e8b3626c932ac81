/**
 * The pieces of scripts/bench/scale.sh that are not shell:
 *
 *   spec S H N [--extra-host] [--drop-last] [--addr A]   a target spec of S subsystems, each with N
 *       null_blk namespaces (/dev/nullb<i>) and allowing its share of H host NQNs (H/S each, none
 *       shared), 2 ports (rdma A:4420, tcp A:4421; A is 10.77.0.1 unless given) exporting every
 *       subsystem. --extra-host allows one more host on every subsystem; --drop-last leaves the
 *       last subsystem out.
 *   replay PLAN.json   the floor: the plan's mkdir/write/symlink/unlink/rmdir calls on the kernel's
 *       configfs, nothing else (no reads, no checks, no rollback), from this one process.
 *   read   the floor of a read: every directory listed, every attribute read, every link read.
 *   empty  nothing: the start-up of a Deno run with these flags.
 *   table RESULTS.tsv   the bench's table (see printTable).
 *   phases SPEC   where a no-op `target up -f SPEC` spends its time, in one process on the live
 *       tree (run it in the guest): each part's milliseconds, the modules' load first.
 *   plan K…   in-process, on any machine: parsing, validating and planning the spec of each size
 *       K (as above) against the live tree it makes, without configfs or start-up (see planBench).
 *   cold SPEC DIR [--one-by-one]   on any machine: `up` of SPEC from empty, each part timed in one
 *       fresh process, and its plan's calls on a tmpfs DIR (see cold).
 *
 * replay and read print the seconds their own calls took (after start-up and parsing), so the
 * bench can report the floor with and without Deno's start-up.
 */
const NVMET = "/sys/kernel/config/nvmet";
/** The lab guest's address (scripts/lab/guest.sh). */
const ADDR = "10.77.0.1";

/** Subsystem S's NQN (also scale_hosts.ts's). */
export function subNqn(s: number): string {
  return `nqn.2026-10.pk.nextgen:scale-${String(s).padStart(4, "0")}`;
}

/** Host H's NQN (also scale_hosts.ts's). */
export function hostNqn(h: number): string {
  return `nqn.2026-10.pk.nextgen:compute-${String(h).padStart(5, "0")}`;
}

function spec(args: string[]): string {
  const [S, H, N] = args.slice(0, 3).map(Number);
  const extra = args.includes("--extra-host");
  const count = args.includes("--drop-last") ? S - 1 : S;
  const share = Math.max(1, Math.floor(H / S));
  const at = args.indexOf("--addr");
  const addr = at >= 0 ? args[at + 1] : ADDR;
  const out: string[] = ["subsystems:"];
  for (let s = 1; s <= count; s++) {
    out.push(`  - nqn: ${subNqn(s)}`, "    allow_any_host: false", "    hosts:");
    for (let h = (s - 1) * share + 1; h <= s * share; h++) out.push(`      - ${hostNqn(h)}`);
    if (extra) out.push(`      - ${hostNqn(H + s)}`);
    out.push("    namespaces:");
    for (let n = 1; n <= N; n++) {
      out.push(`      - {nsid: ${n}, device: /dev/nullb${(s - 1) * N + n - 1}}`);
    }
  }
  out.push("ports:");
  for (const [id, trtype, svc] of [[1, "rdma", 4420], [2, "tcp", 4421]]) {
    out.push(
      `  - id: ${id}`,
      `    trtype: ${trtype}`,
      `    traddr: ${addr}`,
      `    trsvcid: ${svc}`,
      "    subsystems:",
    );
    for (let s = 1; s <= count; s++) out.push(`      - ${subNqn(s)}`);
  }
  return out.join("\n") + "\n";
}

interface Step {
  op: "mkdir" | "rmdir" | "write" | "link" | "unlink";
  path: string;
  value?: string;
  target?: string;
}

const enc = new TextEncoder();

function replay(file: string): number {
  const steps = (JSON.parse(Deno.readTextFileSync(file)) as { steps: Step[] }).steps;
  return calls(steps, NVMET);
}

/**
 * Seconds of STEPS' mkdir/write/symlink/unlink/rmdir calls under ROOT, nothing else. With
 * `onTmpfs`, ROOT is a plain file system: an attribute is created by its write, and a default
 * group configfs makes with its parent (a namespace's `namespaces/`) is made when a call first
 * finds it missing, so the calls are the same as on configfs but for those.
 */
function calls(steps: Step[], root: string, onTmpfs = false): number {
  const t0 = performance.now();
  for (const s of steps) {
    const p = `${root}/${s.path}`;
    if (!onTmpfs) {
      call(s, p, root, false);
      continue;
    }
    try {
      call(s, p, root, true);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      Deno.mkdirSync(p.slice(0, p.lastIndexOf("/")), { recursive: true });
      call(s, p, root, true);
    }
  }
  return (performance.now() - t0) / 1000;
}

/** Step S's one call on path P (under ROOT); a write creates its file when CREATE. */
function call(s: Step, p: string, root: string, create: boolean): void {
  switch (s.op) {
    case "mkdir":
      Deno.mkdirSync(p);
      break;
    case "rmdir":
    case "unlink":
      Deno.removeSync(p);
      break;
    case "link":
      Deno.symlinkSync(`${root}/${s.target}`, p);
      break;
    case "write":
      // One call, as nvmeof's writeAttribute (src/configfs/deno_fs.ts) makes it.
      Deno.writeFileSync(p, enc.encode(s.value === "" ? "\n" : s.value), { create });
      break;
  }
}

function readAll(): number {
  const t0 = performance.now();
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(dir)) {
      const p = `${dir}/${e.name}`;
      if (e.isSymlink) Deno.readLinkSync(p);
      else if (e.isDirectory) walk(p);
      else {
        try {
          Deno.readTextFileSync(p);
        } catch {
          // write-only attributes (revalidate_size)
        }
      }
    }
  };
  walk(NVMET);
  return (performance.now() - t0) / 1000;
}

/** CALLS=1 (scale.sh): every figure of the results is a count of system calls, not seconds. */
const COUNTING = Deno.env.get("CALLS") === "1";

/** Seconds as text with 2 decimals (a second is "1.00"), a count as is; "" stays "". */
function secs(v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return "";
  return COUNTING ? String(v) : v.toFixed(2);
}

/** A ratio as text ("0.75x"). */
function times(r: number): string {
  return `${r.toFixed(2)}x`;
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a === undefined || b === undefined || !(b > 0) ? "" : times(a / b);
}

/**
 * The table of a results file: rows `op K steps nvmeof floor_calls floor_wall nvmetcli [net]
 * [nvmeof/nvmetcli]` (seconds, wall time of each process but floor_calls, the floor's calls alone;
 * the last two the bench's paired figures, when it has them), the first row the start-up of each
 * side (`startup 0 0 nvmeof 0 deno python`). "net" is nvmeof's time less its start-up.
 */
function printTable(file: string): void {
  const num = (v: string | undefined) => (v === undefined || v === "" ? undefined : Number(v));
  const rows = Deno.readTextFileSync(file).trim().split("\n").map((l) => l.split("\t"));
  const [, , , stN, , stD, stP, stU, stDown, stC] = rows[0];
  // Each operation's start-up: its command with nothing to do on an empty tree.
  const own: Record<string, string | undefined> = { show: stN, check: stC, down: stDown };
  const startOf = (op: string) => num(op in own ? own[op] : stU) ?? num(stN) ?? 0;
  const unit = COUNTING ? "calls" : "s";
  console.log(
    `start-up, each command with nothing to do (empty tree): nvmeof target show ${
      secs(num(stN))
    } ${unit}, up (empty spec) ${secs(num(stU))} ${unit}, down --all ${
      secs(num(stDown))
    } ${unit}, check (empty spec) ${secs(num(stC))} ${unit}`,
  );
  console.log(
    `start-up of the others: empty Deno run ${secs(num(stD))} ${unit}` +
      (stP ? `, python3 import of nvmetcli's modules ${secs(num(stP))} ${unit}` : ""),
  );
  console.log(
    "net: up, noop, add-host and prune less a run of up (empty spec) just before each, the median " +
      "of the differences; show, check and down less their start-up's median",
  );
  if (rows.slice(1).some((r) => r[8])) {
    console.log(
      "nvmeof/nvmetcli: the median of the ratios of nvmeof's command to nvmetcli's run just after " +
        "it, on the same tree (clear on the tree of down's row)",
    );
  }
  const head = [
    "operation",
    "K",
    "steps",
    "nvmeof",
    "net",
    "floor",
    "floor+st",
    "nvmetcli",
    "net/floor",
    "wall/floor+st",
    "nvmeof/nvmetcli",
  ];
  const lines = [head];
  const byOp = new Map<string, Array<{ k: number; net?: number; wall?: number; floor?: number }>>();
  for (const r of rows.slice(1)) {
    const [op, k, steps, n, fc, fw, c, paired, pairedPeer] = r;
    const wall = num(n);
    // The bench's paired figure when it has one (scale.sh tmn), else less the start-up's median.
    const net = wall === undefined ? undefined : Math.max(0, num(paired) ?? wall - startOf(op));
    lines.push([
      op,
      k,
      steps,
      secs(wall),
      secs(net),
      secs(num(fc)),
      secs(num(fw)),
      secs(num(c)),
      ratio(net, num(fc)),
      ratio(wall, num(fw)),
      // The median of the ratios of runs paired with nvmetcli's (scale.sh tmpeer), when there are.
      pairedPeer ? times(Number(pairedPeer)) : ratio(wall, num(c)),
    ]);
    if (!byOp.has(op)) byOp.set(op, []);
    byOp.get(op)!.push({ k: Number(k), net, wall, floor: num(fc) });
  }
  const widths = head.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? "").length)));
  for (const l of lines) {
    console.log(l.map((c, i) => (i < 1 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  "));
  }
  console.log("growth exponent log(t_last/t_first)/log(K_last/K_first): nvmeof net, wall; floor");
  for (const [op, list] of byOp) {
    if (list.length < 2) continue;
    const a = list[0], b = list[list.length - 1];
    const e = (x?: number, y?: number) =>
      x && y && x > 0 && y > 0 ? (Math.log(y / x) / Math.log(b.k / a.k)).toFixed(2) : "-";
    console.log(
      `  ${op.padEnd(9)} ${e(a.net, b.net)}  ${e(a.wall, b.wall)}  ${e(a.floor, b.floor)}`,
    );
  }
}

/** Laps of one clock: each lap(WHAT) adds [WHAT, the milliseconds since the last lap or the start]. */
function stopwatch(): { laps: [string, number][]; lap: (what: string) => void } {
  const laps: [string, number][] = [];
  let t = performance.now();
  return {
    laps,
    lap(what: string) {
      const now = performance.now();
      laps.push([what, now - t]);
      t = now;
    },
  };
}

/**
 * `up` of SPEC from empty in one fresh process, each part's milliseconds in order (the modules
 * loaded first, not timed): its parse, its validation (without the devices), the derived
 * identities hashed ahead (not with `--one-by-one`: the plan then derives them one by one), the
 * plan, the report; then the plan's calls on a plain file system under DIR (tmpfs: see calls),
 * which it empties. The same code natively and in the lab guest tells how much slower the
 * emulator runs each side (docs/benchmarks.md, "Target at scale").
 */
async function cold(args: string[]): Promise<void> {
  const [file, dir] = args;
  const { parseSpecText, validateSpec } = await import("../../../src/target/spec.ts");
  const { identitiesToDerive, planUp } = await import("../../../src/target/plan.ts");
  const { hashAhead } = await import("../../../src/target/identity.ts");
  const { planResult, planText, specCounts } = await import("../../../src/target/report.ts");
  const text = Deno.readTextFileSync(file);
  const empty = { hosts: [], subsystems: [], ports: [] };
  const { laps, lap } = stopwatch();
  const spec = validateSpec(await parseSpecText(text, file), { checkFiles: false });
  lap("parse+validate");
  if (!args.includes("--one-by-one")) await hashAhead(identitiesToDerive(empty, spec));
  lap("hash ahead");
  const steps = planUp(empty, spec, { prune: false });
  lap("plan");
  planText("apply", "No changes")(planResult(steps, { dryRun: false, summary: specCounts(spec) }));
  lap("report");
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch {
    // not there
  }
  for (const top of ["", "/hosts", "/subsystems", "/ports"]) Deno.mkdirSync(dir + top);
  laps.push(["calls on tmpfs", calls(steps, dir, true) * 1000]);
  Deno.removeSync(dir, { recursive: true });
  const ms = Object.fromEntries(laps.map(([what, t]) => [what, +t.toFixed(2)]));
  console.log(JSON.stringify({ steps: steps.length, ...ms }));
}

/** The parts of a no-op `target up -f FILE` (src/target/up.ts), timed in order on the live tree. */
async function phases(file: string): Promise<void> {
  const { laps: out, lap } = stopwatch();
  const { loadSpecFile, parseSpecText, validateSpec } = await import(
    "../../../src/target/spec.ts"
  );
  const { kernelTargetEnv } = await import("../../../src/target/env.ts");
  const { readTree } = await import("../../../src/configfs/nvmet.ts");
  const { planUp } = await import("../../../src/target/plan.ts");
  const { refuseWhileConnected } = await import("../../../src/target/connected.ts");
  const { planResult, planText, specCounts, specWarnings } = await import(
    "../../../src/target/report.ts"
  );
  lap("load the modules");
  const text = Deno.readTextFileSync(file);
  const raw = await parseSpecText(text, file);
  lap("parse the spec (the product's parse)");
  // For comparison, what the product's parse leaves alone when the spec is plain YAML.
  const { parseDocument } = await import("yaml");
  lap("(not in up) load the yaml library");
  parseDocument(text);
  lap("(not in up) parse the spec with the yaml library");
  validateSpec(raw, { checkFiles: false });
  lap("validate the spec, without the devices");
  const spec = await loadSpecFile(file);
  lap("read, parse and validate the spec (all of it, again)");
  const env = kernelTargetEnv();
  const io = env.open("/sys/kernel/config", { prepare: true, transports: ["rdma", "tcp"] })!;
  lap("open nvmet (modules, mount)");
  const live = readTree(io);
  lap("read the live tree");
  specWarnings(spec);
  const steps = planUp(live, spec, { prune: false });
  lap("plan");
  await refuseWhileConnected(live, steps, { sources: () => env.peers() });
  lap("who is connected to what goes");
  planText("apply", "No changes")(planResult(steps, { dryRun: false, summary: specCounts(spec) }));
  lap("the report");
  for (const [what, ms] of out) console.log(`${ms.toFixed(0).padStart(7)} ms  ${what}`);
  console.log(`${steps.length} step(s)`);
}

/**
 * Milliseconds of the in-process steps of `target up`, `show` and `down` at each size, on a live
 * tree built from the spec (what readTree would read back): parse and validate the spec, plan it
 * from empty, plan the no-op, plan `--prune` without one subsystem, plan `down --all` and find
 * what it cuts off, render `show`. The median of 5 runs each. Imports nvmeof's own modules.
 */
async function planBench(sizes: number[]): Promise<void> {
  const { parse, stringify } = await import("yaml");
  const { validateSpec } = await import("../../../src/target/spec.ts");
  const { SPEC_TEXT: keys } = await import("../../../src/target/schema.ts");
  const { OUTSIDE, readPlainYaml, writePlainYaml } = await import(
    "../../../src/target/spec_yaml.ts"
  );
  const { planDown, planUp } = await import("../../../src/target/plan.ts");
  const { affected } = await import("../../../src/target/connected.ts");
  const { treeToSpec } = await import("../../../src/target/show.ts");
  type Live = import("../../../src/configfs/nvmet.ts").LiveTree;
  const median = (f: () => unknown) => {
    const t: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      f();
      t.push(performance.now() - t0);
    }
    return t.sort((a, b) => a - b)[2];
  };
  const rows: string[][] = [[
    "K",
    "subsystems",
    "hosts",
    "steps",
    "parse",
    "(library)",
    "validate",
    "plan up",
    "no-op",
    "prune 1",
    "down+cut",
    "show",
    "(library)",
  ]];
  for (const k of sizes) {
    const S = 4 * k, H = 32 * k;
    const text = spec([String(S), String(H), "4"]);
    const raw = readPlainYaml(text, keys);
    if (raw === OUTSIDE) throw new Error("the plain reader left the spec to the YAML library");
    const sp = validateSpec(raw, { checkFiles: false });
    const live: Live = {
      hosts: sp.subsystems.flatMap((s) => s.hosts).map((nqn) => ({
        nqn,
        dhchap_supported: false,
        dhchap_key_set: false,
      })),
      subsystems: sp.subsystems.map((s) => ({
        nqn: s.nqn,
        attr: { allow_any_host: "0", serial: "0123456789abcdef" },
        allowed_hosts: [...s.hosts],
        namespaces: s.namespaces.map((n) => ({
          name: String(n.nsid),
          nsid: n.nsid,
          device_path: n.device,
          device_uuid: "",
          device_nguid: "",
          enable: true,
        })),
      })),
      ports: sp.ports.map((p) => ({
        name: String(p.id),
        id: p.id,
        attr: {
          addr_trtype: p.trtype,
          addr_adrfam: "ipv4",
          addr_traddr: p.traddr ?? "",
          addr_trsvcid: String(p.trsvcid),
        },
        subsystems: [...p.subsystems],
        ana_groups: [],
        referrals: [],
      })),
    };
    const empty: Live = { hosts: [], subsystems: [], ports: [] };
    const gone = sp.subsystems[0].nqn;
    const less = {
      ...sp,
      subsystems: sp.subsystems.slice(1),
      ports: sp.ports.map((p) => ({ ...p, subsystems: p.subsystems.filter((s) => s !== gone) })),
    };
    if (planUp(live, sp).length) throw new Error("the built tree does not match its spec");
    rows.push([
      String(k),
      String(S),
      String(H),
      String(planUp(empty, sp).length),
      ...[
        () => readPlainYaml(text, keys),
        () => parse(text),
        () => validateSpec(raw, { checkFiles: false }),
        () => planUp(empty, sp),
        () => planUp(live, sp),
        () => planUp(live, less, { prune: true }),
        () => affected(live, planDown(live, { all: true })),
        () => writePlainYaml(treeToSpec(live)),
        () => stringify(treeToSpec(live), { lineWidth: 0 }),
      ].map((f) => median(f).toFixed(1)),
    ]);
  }
  console.log(
    "in-process milliseconds (median of 5), no configfs, no start-up; (library): the YAML library's parse or write of the same, which nvmeof no longer runs for these specs:",
  );
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i])).join("  "));
}

if (import.meta.main) {
  const [cmd, ...args] = Deno.args;
  switch (cmd) {
    case "spec":
      await Deno.stdout.write(enc.encode(spec(args)));
      break;
    case "replay":
      console.log(replay(args[0]).toFixed(3));
      break;
    case "read":
      console.log(readAll().toFixed(3));
      break;
    case "empty":
      break;
    case "table":
      printTable(args[0]);
      break;
    case "plan":
      await planBench(args.map(Number));
      break;
    case "phases":
      await phases(args[0]);
      break;
    case "cold":
      await cold(args);
      break;
    default:
      console.error(
        "usage: scale.ts spec S H N [--extra-host] [--drop-last] [--addr A] | replay PLAN.json | read | empty | table FILE | plan K… | phases SPEC | cold SPEC DIR [--one-by-one]",
      );
      Deno.exit(2);
  }
}
