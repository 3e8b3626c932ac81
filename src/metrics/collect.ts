/**
 * One collection: every collector (host, block, rdma, target, agent) once, each under its own time
 * limit, plus the families that describe the collection itself: which collectors succeeded, how
 * long each took, and the build. A collector that fails or is late yields
 * `nvmeof_scrape_collector_success 0` and none of its families; the collection never throws.
 */
import { KernelConfigfs } from "../configfs/io.ts";
import { fileKind } from "../configfs/libc_fs.ts";
import { type LiveTree, readTree } from "../configfs/nvmet.ts";
import type { SubsystemInfo } from "../fabrics/sysfs.ts";
import { hostPaths } from "../host_paths.ts";
import type { PeerSources } from "../target/connected.ts";
import { kernelSources } from "../target/peers.ts";
import { timer } from "../timer.ts";
import { VERSION } from "../version.ts";
import { collectAgent } from "./agent.ts";
import { collectBlock } from "./block.ts";
import { DEFAULT_COLLECTOR_TIMEOUT_MS } from "./defaults.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";
import { collectHostPaths, fabricsSubsystems } from "./host.ts";
import { collectRdma } from "./rdma.ts";
import { collectTarget, CreatedControllers } from "./target.ts";

/** Where the kernel's nvmet tree is. */
export const DEFAULT_NVMET_ROOT = "/sys/kernel/config/nvmet";
/** The collectors, in the order their families are exported. */
export const COLLECTORS = ["host", "block", "rdma", "target", "agent"] as const;
/** A collector's name (the `collector` label). */
export type CollectorName = typeof COLLECTORS[number];

/** Options of collectFamilies. */
export interface CollectOptions {
  /** Roots, defaulting to hostPaths() (src/host_paths.ts) and /sys/kernel/config/nvmet. */
  sysfs?: string;
  proc?: string;
  dev?: string;
  /** The nvmet root (`<configfs>/nvmet`), read only. */
  configfs?: string;
  /** Each collector's own time limit. */
  timeoutMs?: number;
  /** Where the agent keeps its state (default the runtime directory, NVMEOF_LOCK_DIR). */
  runDir?: string;
  /** Where the target's connections are read (default: the kernel's, below the roots). */
  peers?: PeerSources;
  /**
   * The kernel log's controller count, kept across collections by a caller that collects again
   * (the exporter, top): each collection then reads only what the log added. Without it, each
   * collection reads the whole log.
   */
  created?: CreatedControllers;
  /** Told why a collector failed or was late, so a caller can say it (stderr, a log). */
  onCollectorError?: (collector: CollectorName, reason: string) => void;
}

/**
 * The kernel log's controller count (from /dev/kmsg below `dev`, default the host's /dev), for a
 * caller that collects again and again to pass as `created`. Close it (or `using`).
 */
export function createdControllers(dev = hostPaths().dev): CreatedControllers {
  return new CreatedControllers(`${dev}/kmsg`);
}

/** The outline of the nvmet tree at `root` (what the collectors read of it), read only; undefined when nvmet is not loaded there. */
function nvmetTree(root: string): LiveTree | undefined {
  if (fileKind(root, { follow: true }) !== "dir") return undefined;
  return readTree(new KernelConfigfs(root), "outline");
}

/** The outcome of one collector. */
interface Outcome {
  name: CollectorName;
  families: MetricFamily[];
  ok: boolean;
  seconds: number;
  /** Why it is not ok. */
  reason?: string;
}

const US_PER_MS = 1000;
const US_PER_SECOND = 1_000_000;

/** Runs one collector; late (past `timeoutMs`) or failed is not ok, and its families are dropped. */
async function runCollector(
  name: CollectorName,
  fn: () => Promise<MetricFamily[]>,
  timeoutMs: number,
): Promise<Outcome> {
  const t0 = performance.now();
  const limit = timer(timeoutMs);
  const late = limit.done.then(() => undefined);
  let families: MetricFamily[] | undefined;
  let reason: string | undefined;
  try {
    // The work starts in a later task, so that the time limit holds for its asynchronous parts.
    families = await Promise.race([Promise.resolve().then(fn), late]);
  } catch (err) {
    families = undefined;
    reason = err instanceof Error ? err.message : String(err);
  } finally {
    limit.cancel();
  }
  const ms = performance.now() - t0;
  const ok = families !== undefined && ms <= timeoutMs;
  if (!ok) reason ??= `it took longer than its limit of ${timeoutMs} ms`;
  // Microseconds are more than a scrape's timing can tell; the rest is float noise in the output.
  const seconds = Math.round(ms * US_PER_MS) / US_PER_SECOND;
  return { name, families: ok ? families! : [], ok, seconds, reason };
}

/**
 * Runs every collector (host, block, rdma, target, agent) once; a failed or late one yields its
 * nvmeof_scrape_collector_success 0 and no families; never throws for a collector's failure.
 */
export async function collectFamilies(o: CollectOptions = {}): Promise<MetricFamily[]> {
  const host = hostPaths();
  const sysfs = o.sysfs ?? host.sysfs;
  const proc = o.proc ?? host.proc;
  const dev = o.dev ?? host.dev;
  const nvmet = o.configfs ?? DEFAULT_NVMET_ROOT;
  const timeoutMs = o.timeoutMs ?? DEFAULT_COLLECTOR_TIMEOUT_MS;
  using ownCreated = o.created ? undefined : createdControllers(dev);
  const created = o.created ?? ownCreated!;
  const paths = { sysfs, dev, etcNvme: host.etcNvme };
  // The block and target collectors both read the nvmet tree: one read serves the collection.
  let read: { tree: LiveTree | undefined } | undefined;
  const tree = () => (read ??= { tree: nvmetTree(nvmet) }).tree;
  // The host and block collectors both read every fabrics subsystem (hundreds of paths on a
  // compute node): one read serves both.
  let fabrics: Promise<SubsystemInfo[]> | undefined;
  const subsystems = () => fabrics ??= fabricsSubsystems(paths);
  const runs: Record<CollectorName, () => Promise<MetricFamily[]>> = {
    host: () => collectHostPaths(paths, subsystems),
    block: () => collectBlock({ paths, target: tree, subsystems }),
    rdma: () => collectRdma(sysfs),
    target: () =>
      collectTarget({
        tree,
        proc,
        peers: o.peers ?? kernelSources({ proc, sysfs }),
        created: () => created.read(),
      }),
    agent: () => collectAgent(o.runDir),
  };
  const outcomes: Outcome[] = [];
  for (const name of COLLECTORS) {
    const outcome = await runCollector(name, runs[name], timeoutMs);
    if (!outcome.ok) o.onCollectorError?.(name, outcome.reason!);
    outcomes.push(outcome);
  }
  return [...metaFamilies(outcomes), ...outcomes.flatMap((r) => r.families)];
}

/** nvmeof_build_info, nvmeof_scrape_collector_success and nvmeof_scrape_duration_seconds. */
function metaFamilies(outcomes: Outcome[]): MetricFamily[] {
  const set = new FamilySet();
  set.family("nvmeof_build_info", "gauge", "The nvmeof version: 1.")({ version: VERSION }, 1);
  const success = set.family(
    "nvmeof_scrape_collector_success",
    "gauge",
    "1 when the collector succeeded within its time limit, else 0.",
  );
  const duration = set.family(
    "nvmeof_scrape_duration_seconds",
    "gauge",
    "How long the collector took.",
  );
  for (const r of outcomes) {
    success({ collector: r.name }, r.ok ? 1 : 0);
    duration({ collector: r.name }, r.seconds);
  }
  return set.families();
}

/**
 * Says a collector's failure once when it starts failing (with why) and once when it works again,
 * not at every collection: for collections repeated by the exporter.
 */
export class CollectorFailureLog {
  readonly #say: (line: string) => void;
  readonly #failing = new Map<CollectorName, string>();
  readonly #thisTime = new Set<CollectorName>();

  constructor(say: (line: string) => void) {
    this.#say = say;
  }

  /** For CollectOptions.onCollectorError. */
  readonly failed = (name: CollectorName, reason: string): void => {
    this.#thisTime.add(name);
    if (this.#failing.get(name) !== reason) {
      this.#say(`the ${name} collector failed, its families are left out: ${reason}`);
    }
    this.#failing.set(name, reason);
  };

  /** After each collection: the collectors that failed before and not in this one work again. */
  collected(): void {
    for (const name of this.#failing.keys()) {
      if (this.#thisTime.has(name)) continue;
      this.#failing.delete(name);
      this.#say(`the ${name} collector works again`);
    }
    this.#thisTime.clear();
  }
}
