/**
 * One `bench` run against a controller: enable it, check the block size against the namespace
 * and MDTS, connect the I/O queues, keep the controller alive, run the passes (verify: write,
 * then read the same blocks back) and shut down. Returns the figures the command prints.
 */
import { FailureError, UsageError } from "../errors.ts";
import { summarizeLatency } from "../rdma/latency.ts";
import type { Canceller } from "../wait.ts";
import {
  bufferAccess,
  drive,
  type Geometry,
  IoWorker,
  mergeResults,
  type Pass,
  type PassResult,
  Samples,
  xorshift,
} from "./bench.ts";
import { type RwMode, writes } from "./bench_options.ts";
import { Controller, type ControllerOptions, type KeepAliveTimer } from "./controller.ts";
import { type Capabilities, mdtsBytes } from "./identify.ts";
import { timer } from "../timer.ts";

/** What to run: the validated flags of `nvmeof bench`. */
export interface BenchParams {
  rw: RwMode;
  nsid: number;
  bs: number;
  qd: number;
  queues: number;
  /** Entries asked for each I/O queue (nvme connect's --queue-size). */
  queueSize: number;
  time?: number;
  ios?: number;
  pollMs: number;
}

/** What a run gives back: the result, and what the command reports beside it. */
export interface BenchOutcome {
  data: Record<string, unknown>;
  /** The first LBA verify found wrong. */
  mismatch?: number;
  /** Why the run was stopped early (SIGINT received …). */
  stopped?: string;
  /** Seconds the passes ran. */
  seconds: number;
}

/** Runs `p` on the controller `o` names; `o.cancel` (Ctrl-C) ends it early with a partial result. */
export async function runBench(
  o: ControllerOptions & { cancel: Canceller },
  p: BenchParams,
): Promise<BenchOutcome> {
  const cancel = o.cancel;
  const ctrl = await Controller.connect(o);
  const workers: IoWorker[] = [];
  let keepAlive: KeepAliveTimer | undefined;
  try {
    await ctrl.enable();
    const ns = await benchNamespace(ctrl, p);
    const g: Geometry = { nsid: p.nsid, lbaSize: ns.lbaSize, nsze: ns.nsze, bs: p.bs, qd: p.qd };
    const access = bufferAccess(p.rw);
    for (let qid = 1; qid <= p.queues; qid++) {
      const q = await ctrl.connectIoQueue(qid, ioQueueDepth(p, ctrl.cap));
      try {
        workers.push(new IoWorker(q, g, access));
      } catch (err) {
        q.close();
        throw err;
      }
    }
    keepAlive = ctrl.startKeepAlive();
    const ka = keepAlive;
    const passes = benchPasses(p.rw);
    const ios = p.ios ?? (p.rw === "verify" ? ns.chunks : undefined);
    const results: PassFigures[] = [];
    let mismatch: number | undefined;
    for (const pass of passes) {
      if (cancel.reason !== undefined) break;
      const r = await runPass(workers, pass, {
        ios,
        seconds: p.time ?? (ios === undefined ? 10 : undefined),
        chunks: ns.chunks,
        seed: 0x5eed + results.length,
        drive: { timeoutMs: o.timeoutMs, pollMs: p.pollMs },
        stop: () => cancel.reason !== undefined || ka.failure !== undefined,
      });
      if (ka.failure) throw ka.failure;
      results.push(r);
      if (r.all.mismatch !== undefined) mismatch ??= r.all.mismatch;
    }
    keepAlive.stop();
    // After Ctrl-C the admin queue's waits would end at once: just disconnect.
    if (cancel.reason === undefined) await ctrl.shutdown();
    const data = {
      traddr: o.host,
      trsvcid: o.port,
      subnqn: o.subnqn,
      nsid: p.nsid,
      lba_size: ns.lbaSize,
      nsze: ns.nsze,
      rw: p.rw,
      bs: p.bs,
      qd: p.qd,
      queues: p.queues,
      queue_size: workers[0]?.queue.depth ?? p.queueSize,
      passes: results.map((r, i) => ({
        op: passes[i].op,
        ...passSummary(r.all),
        per_queue: r.perQueue.map((q, k) => ({
          qid: workers[k].queue.qid,
          ios: q.ios,
          iops: Math.round(q.ios / (q.seconds || 1e-9)),
        })),
      })),
      ...(p.rw === "verify"
        ? { verified_ios: results[1]?.all.ios ?? 0, mismatch_lba: mismatch ?? null }
        : {}),
      interrupted: cancel.reason !== undefined,
      stopped: cancel.reason ?? null,
      steps: ctrl.steps,
    };
    const seconds = results.reduce((t, r) => t + r.all.seconds, 0);
    return { data, mismatch, stopped: cancel.reason, seconds };
  } finally {
    keepAlive?.stop();
    for (const w of workers.reverse()) w.close();
    ctrl.close();
  }
}

/** The namespace's block size and blocks, and how many bs-sized chunks it holds, checked. */
async function benchNamespace(
  ctrl: Controller,
  p: BenchParams,
): Promise<{ lbaSize: number; nsze: number; chunks: number }> {
  const ic = await ctrl.identifyController();
  const ns = await ctrl.identifyNamespace(p.nsid);
  if (ns.nsze === 0n || ns.lbaSize === 0) {
    throw new FailureError(`Namespace ${p.nsid} of '${ctrl.options.subnqn}' is not active.`);
  }
  if (p.bs % ns.lbaSize !== 0) {
    throw new UsageError(
      `--bs ${p.bs} is not a multiple of namespace ${p.nsid}'s block size ${ns.lbaSize}.`,
    );
  }
  const mdts = mdtsBytes(ic.mdts, ctrl.cap);
  if (mdts !== undefined && p.bs > mdts) {
    throw new UsageError(`--bs ${p.bs} exceeds the controller's MDTS of ${mdts} bytes.`);
  }
  const nsze = Number(ns.nsze);
  const chunks = Math.floor((nsze * ns.lbaSize) / p.bs);
  if (chunks < 1) throw new UsageError(`--bs ${p.bs} is larger than the namespace.`);
  return { lbaSize: ns.lbaSize, nsze, chunks };
}

/**
 * The entries of each I/O queue. Like nvme-rdma, open the queue larger than the I/Os kept in
 * flight: hrqsize sizes the target's send queue, and each read's answer takes two of its WRs
 * (RDMA WRITE + SEND), so a queue of exactly qd entries halves what the target can answer at
 * once (QD 32 in the lab: 298-427 IOPS at 32 entries, 558-592 at 128). Only qd slots are used.
 */
export function ioQueueDepth(
  p: { qd: number; queueSize: number },
  cap: Capabilities | undefined,
): number {
  return Math.max(p.qd, Math.min(p.queueSize, (cap?.mqes ?? 127) + 1));
}

/** The passes of a mode: verify writes sequentially, then reads back and checks. */
function benchPasses(rw: RwMode): Pass[] {
  if (rw === "verify") {
    return [{ op: "write", random: false, check: false }, {
      op: "read",
      random: false,
      check: true,
    }];
  }
  return [{ op: writes(rw) ? "write" : "read", random: rw.startsWith("rand"), check: false }];
}

/** A pass's figures over all queues and per queue. */
interface PassFigures {
  all: PassResult;
  perQueue: PassResult[];
}

/** How one pass runs. */
interface PassPlan {
  /** I/Os to issue, or undefined to run for `seconds`. */
  ios: number | undefined;
  seconds: number | undefined;
  /** bs-sized chunks of the namespace. */
  chunks: number;
  /** Seed of the random chunk source. */
  seed: number;
  drive: { timeoutMs: number; pollMs: number };
  /** Stop issuing (Ctrl-C, Keep Alive failed). */
  stop(): boolean;
}

/** Runs one pass on every queue until the I/Os or the time are done, and drains them. */
async function runPass(
  workers: readonly IoWorker[],
  pass: Pass,
  plan: PassPlan,
): Promise<PassFigures> {
  // Each queue counts into its own result (per-queue figures), merged after the pass.
  const perQueue: PassResult[] = workers.map(() => ({
    ios: 0,
    bytes: 0,
    seconds: 0,
    latencies: new Samples(),
  }));
  const { ios, seconds, chunks } = plan;
  let issued = 0;
  const rng = xorshift(plan.seed);
  const t0 = performance.now();
  // The run's end comes by timer (the loop yields every few ms), not a clock read per I/O.
  let expired = false;
  const endTimer = seconds === undefined ? undefined : timer(seconds * 1000);
  endTimer?.done.then(() => expired = true);
  const next = () => {
    if (ios !== undefined && issued >= ios) return -1;
    if (expired) return -1;
    const c = pass.random ? rng() % chunks : issued % chunks;
    issued++;
    return c;
  };
  // One queue failing stops every queue issuing; all drain before anything is closed.
  const stop = () => {
    if (plan.stop()) return true;
    for (const w of workers) if (w.failure !== undefined) return true;
    return false;
  };
  try {
    workers.forEach((w, i) => w.start(pass, next, perQueue[i], stop));
    await drive(workers, plan.drive);
  } finally {
    endTimer?.cancel();
    for (const w of workers) w.finish();
  }
  const took = (performance.now() - t0) / 1000;
  for (const r of perQueue) r.seconds = took;
  return { all: mergeResults(perQueue, took), perQueue };
}

/** A pass's figures as printed: IOPS, MB/s and latency (µs, one decimal). */
function passSummary(r: PassResult): Record<string, unknown> {
  const lat = summarizeLatency(r.latencies.values());
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    ios: r.ios,
    bytes: r.bytes,
    seconds: Math.round(r.seconds * 1000) / 1000,
    iops: Math.round(r.ios / (r.seconds || 1e-9)),
    mb_s: round(r.bytes / 1e6 / (r.seconds || 1e-9)),
    latency_us: {
      min: round(lat.min),
      median: round(lat.median),
      p99: round(lat.p99),
      max: round(lat.max),
      mean: round(lat.mean),
    },
  };
}
