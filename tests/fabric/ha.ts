/**
 * The failover harness the HA tests share: verified random writes (fio, direct, QD 16) on host1's
 * multipath head while a fault hits one path, and the figures of the run. The fio run, the path
 * poller and the figures are guest_faults.sh's helpers, the same code the benchmark
 * (scripts/bench/ha.sh) measures with.
 */
import assert from "node:assert/strict";
import { haProfile } from "../../src/fabrics/connect_table.ts";
import { jsonOn, keepingLinks, must, on } from "./fabric.ts";

/** The guest helpers for faults and figures (tests/fabric/guest_faults.sh FUNCTION ARGS…). */
export const FAULTS = "tests/fabric/guest_faults.sh";
/** The subsystem guest_faults.sh knows (their g_ctrls, g_host_disconnect). */
export const HA_NQN = "nqn.2024-01.io.nvmeof.ha:bench";

/** The figures of one run (guest_faults.sh's g_report). */
export interface Report {
  errors: number | string;
  writes: number;
  verified: number;
  clat_max_ms: number;
  /** The longest time with no completion from 1 s before the fault to its end. */
  pause_cut_ms: number;
  /** The longest time with no completion after the fault ended. */
  pause_back_ms: number;
  back_s: number | "never";
  /** KiB host1 sent on the faulted path's link once that path was live after the fault. */
  tx_back_kib: number;
  /** The faulted path's controller states, as [seconds since the fault, state]. */
  states: [number, string][];
}

/** How a run sets up and tears down the target and host1's paths. */
export interface Rig {
  /** Makes the target and connects host1; returns the multipath head (/dev/nvmeXn1). */
  up(): Promise<string>;
  /** Undoes up (never throws). */
  down(): Promise<void>;
  /** The io_timeout (ms) each path's namespace queue must have once connected, when one is set. */
  ioTimeoutMs?: number;
}

/** guest_faults.sh's target (two rdma ports) and host1 connected by `nvmeof connect -a A -a B`. */
export const FAULTS_RIG: Rig = {
  ioTimeoutMs: haProfile().ioTimeout! * 1000,
  async up() {
    await must("target", `${FAULTS} target_up`);
    return (await must("host1", `${FAULTS} host_connect nvmeof numa`)).trim();
  },
  async down() {
    await on("host1", `${FAULTS} host_disconnect`);
    await on("target", `${FAULTS} target_down`);
  },
};

/** host1's clock (the clock the figures use), as $EPOCHREALTIME. */
export async function hostClock(): Promise<string> {
  return (await must("host1", "echo $EPOCHREALTIME")).trim();
}

/**
 * One run: RIG up, fio on the head, FAULT on the link of the path carrying the I/O (it returns
 * host1's clock when the fault began and ended, or "carrier"), fio until that path is live again
 * plus 10 s, the figures, then AFTER (while still connected). Always tears down, and puts host1's
 * links back when the fault outlived the run (failing the run).
 */
export function failover(
  tag: string,
  rig: Rig,
  fault: (link: 0 | 1) => Promise<[string, string]>,
  options: { after?: () => Promise<void> } = {},
): Promise<Report & { link: 0 | 1 }> {
  return keepingLinks("host1", () => runFailover(tag, rig, fault, options));
}

/** failover's run itself, before host1's links are checked. */
async function runFailover(
  tag: string,
  rig: Rig,
  fault: (link: 0 | 1) => Promise<[string, string]>,
  options: { after?: () => Promise<void> },
): Promise<Report & { link: 0 | 1 }> {
  try {
    const dev = await rig.up();
    assert.match(dev, /^\/dev\/nvme\d+n1$/);
    // Both paths live before the fault.
    const before = await must(
      "host1",
      `${FAULTS} ctrls | while read n a; do echo "$a $(cat /sys/class/nvme/$n/state)"; done`,
    );
    assert.deepEqual(before.trim().split("\n").sort(), ["10.78.0.1 live", "10.78.1.1 live"]);
    if (rig.ioTimeoutMs !== undefined) {
      // The I/O timeout connect set on each path's namespace queue, as the kernel reads it back.
      const t = await must(
        "host1",
        `${FAULTS} ctrls | while read n a; do echo "$a $(cat /sys/class/nvme/$n/nvme*c*n1/queue/io_timeout)"; done`,
      );
      const want = [`10.78.0.1 ${rig.ioTimeoutMs}`, `10.78.1.1 ${rig.ioTimeoutMs}`];
      assert.deepEqual(t.trim().split("\n").sort(), want);
      // And `list --paths` shows each path's, as the kernel reads it back.
      const listed = (await listedPaths()).map((p) => `${p.address.traddr} ${p.io_timeout}`);
      assert.deepEqual(listed.sort(), want, "list --paths -o json's io_timeout per path");
    }
    const work = `/tmp/ha_test/${tag}`;
    await must("host1", `rm -rf ${work}; ${FAULTS} io_start ${dev} ${work} 400`);
    await new Promise((r) => setTimeout(r, 8000));
    const link = Number((await must("host1", `${FAULTS} busy_link ${work}`)).trim()) as 0 | 1;
    const addr = `10.78.${link}.1`;
    const [cutAt, backAt] = await fault(link);
    await must("host1", `${FAULTS} io_finish ${work} ${addr} 90`, { timeout: 600 });
    const r = JSON.parse(
      await must("host1", `${FAULTS} report ${work} ${cutAt} ${backAt} ${addr}`),
    ) as Report;
    console.log(`${tag}: link ${link}: ${JSON.stringify(r)}`);
    await options.after?.();
    return { ...r, link };
  } finally {
    await on("host1", "pkill -INT -x fio");
    await rig.down();
  }
}

/** Zero fio errors, writes verified, and no completion gap during the fault of BOUND ms or more. */
export function assertIoClean(r: Report, boundMs: number): void {
  assert.equal(r.errors, 0, "fio saw an error");
  assert.ok(r.writes > 0 && r.verified > 0, `writes ${r.writes}, verified ${r.verified}`);
  assert.ok(
    r.pause_cut_ms < boundMs,
    `no completion for ${r.pause_cut_ms} ms during the fault (bound ${boundMs})`,
  );
}

/** One path of HA_NQN's head in `nvmeof list --paths -o json` on host1. */
export interface PathState {
  transport: string;
  traddr: string;
  state: string;
  ana_state?: string;
}

/** One path of HA_NQN's head, as `nvmeof list --paths -o json` prints it. */
interface ListedPath {
  transport: string;
  address: { traddr?: string };
  state: string;
  ana_state?: string;
  io_timeout?: number;
}

/** The paths of HA_NQN's head in host1's `nvmeof list --paths -o json`. */
async function listedPaths(): Promise<ListedPath[]> {
  const v = await jsonOn<
    { subsystems: { subsysnqn: string; namespaces: { paths: ListedPath[] }[] }[] }
  >("host1", ["list", "--paths"]);
  const sub = v.subsystems.find((s) => s.subsysnqn === HA_NQN);
  assert.ok(sub, `list --paths shows no ${HA_NQN}`);
  return sub.namespaces[0].paths;
}

/** HA_NQN's paths as host1's `nvmeof list --paths -o json` shows them, by target address. */
export async function listPaths(): Promise<PathState[]> {
  return (await listedPaths()).map((p) => ({
    transport: p.transport,
    traddr: p.address.traddr ?? "",
    state: p.state,
    ...(p.ana_state ? { ana_state: p.ana_state } : {}),
  })).sort((a, b) => a.traddr.localeCompare(b.traddr));
}

/**
 * I/Os (reads and writes) completed on each path of host1's head so far, by the path's target
 * address: fields 1 and 5 of the per-path device's stat (nvme<subsys>c<controller>n1). Which path
 * carries the I/O, counted by the kernel itself rather than guessed from link bytes (keep-alives
 * also cross a link); reads count too, since fio's verify phases only read.
 */
export async function pathIos(): Promise<Record<string, number>> {
  const out = await must(
    "host1",
    `${FAULTS} ctrls | while read n a; do set -- $(cat /sys/block/nvme*c\${n#nvme}n1/stat); echo "$a $(($1 + $5))"; done`,
  );
  return Object.fromEntries(
    out.trim().split("\n").map((l) => l.split(" ")).map(([a, w]) => [a, Number(w)]),
  );
}

/** How many I/Os each path completed between BEFORE and AFTER (pathIos). */
export function iosBetween(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((a) => [a, after[a] - (before[a] ?? 0)]));
}
