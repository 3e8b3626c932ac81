/**
 * `nvmeof bench`: NVMe over RDMA I/O from user space, with data landing in registered buffers
 * (no nvme-rdma, no block device): IOPS, MB/s and latency, or `verify` of an LBA pattern.
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { FailureError, UsageError } from "../errors.ts";
import {
  controllerFromFlags,
  HOST_ID_FLAGS,
  TARGET_FLAGS,
  TIMEOUT_FLAG,
} from "../cli/nvme_flags.ts";
import {
  bufferAccess,
  DEFAULT_POLL_MS,
  drive,
  IoWorker,
  mergeResults,
  type Pass,
  type PassResult,
  RW_MODES,
  type RwMode,
  Samples,
  writes,
  xorshift,
} from "../nvme/bench.ts";
import { Controller, KATO_MS } from "../nvme/controller.ts";
import { summarizeLatency } from "../rdma/latency.ts";
import { Canceller } from "../rdma/wait.ts";
import { intFlag, optionalIntFlag } from "../cli/parse.ts";

/** I/O queue entries by default: nvme-cli's and the kernel's NVMF_DEF_QUEUE_SIZE. */
export const DEFAULT_QUEUE_SIZE = 128;

export const BENCH_OPTIONS = {
  ...TARGET_FLAGS,
  nqn: { type: "string", short: "n", value: "NQN", description: "Subsystem to drive" },
  ...HOST_ID_FLAGS,
  nsid: { type: "string", value: "N", description: "Namespace", default: "1" },
  rw: {
    type: "string",
    value: "MODE",
    description: "randread, read, randwrite, write or verify",
    default: "randread",
  },
  bs: { type: "string", value: "BYTES", description: "Bytes per I/O", default: "4096" },
  qd: { type: "string", value: "N", description: "I/Os in flight per queue", default: "32" },
  queues: { type: "string", value: "N", description: "I/O queues", default: "1" },
  "queue-size": {
    type: "string",
    value: "N",
    description:
      "Entries of each I/O queue, as nvme connect's --queue-size (at least --qd; capped at the " +
      "controller's CAP.MQES + 1)",
    default: String(DEFAULT_QUEUE_SIZE),
  },
  time: { type: "string", value: "S", description: "Run for S seconds (default 10)" },
  "poll-ms": {
    type: "string",
    value: "MS",
    description:
      `Busy-poll the completion queues this long after the last completion before sleeping on ` +
      `completion events; 0 sleeps at once (default ${DEFAULT_POLL_MS})`,
  },
  ios: {
    type: "string",
    value: "N",
    description: "Run N I/Os (verify: write N, then read N back; default the whole namespace)",
  },
  "allow-write": {
    type: "boolean",
    description: "Let write, randwrite and verify overwrite the namespace's data",
  },
  timeout: TIMEOUT_FLAG,
} as const;

/** The validated run parameters. */
export function benchParams(v: Record<string, unknown>) {
  const rw = String(v.rw ?? "randread");
  if (!(RW_MODES as readonly string[]).includes(rw)) {
    throw new UsageError(`--rw must be one of ${RW_MODES.join(", ")}, not '${rw}'.`);
  }
  if (writes(rw as RwMode) && !v["allow-write"]) {
    throw new UsageError(`--rw ${rw} overwrites the namespace's data.`, {
      hint: "Add --allow-write if the data on it may be destroyed.",
    });
  }
  if (typeof v.nqn !== "string") {
    throw new UsageError("bench needs the subsystem: -n NQN.");
  }
  const bs = intFlag(v, "bs", 4096, 512, 1 << 20);
  if (bs % 512 !== 0) throw new UsageError(`--bs must be a multiple of 512, not '${bs}'.`);
  if (v.time !== undefined && v.ios !== undefined) {
    throw new UsageError("Give --time or --ios, not both.");
  }
  const qd = intFlag(v, "qd", 32, 1, 1024);
  const queueSize = intFlag(v, "queue-size", DEFAULT_QUEUE_SIZE, 2, 65536);
  if (queueSize < qd) {
    throw new UsageError("--queue-size must be at least --qd (the I/Os kept in flight).");
  }
  if (rw === "verify" && v.time !== undefined) {
    throw new UsageError("--rw verify takes --ios (it writes, then reads the same blocks back).");
  }
  return {
    rw: rw as RwMode,
    nsid: intFlag(v, "nsid", 1, 1, 0xfffffffe),
    bs,
    qd,
    queues: intFlag(v, "queues", 1, 1, 64),
    queueSize,
    time: optionalIntFlag(v, "time", 1, 86400),
    ios: optionalIntFlag(v, "ios", 1, Number.MAX_SAFE_INTEGER),
    pollMs: intFlag(v, "poll-ms", DEFAULT_POLL_MS, 0, 60000),
  };
}

function summary(r: PassResult): Record<string, unknown> {
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

function text(d: Record<string, unknown>): string {
  const lines = [
    `${d.subnqn} nsid ${d.nsid} at ${d.traddr}:${d.trsvcid}: ${d.rw}, bs ${d.bs}, ` +
    `qd ${d.qd} × ${d.queues} queue(s)`,
  ];
  for (const p of d.passes as Record<string, unknown>[]) {
    const l = p.latency_us as Record<string, number>;
    lines.push(
      `${
        String(p.op).padEnd(5)
      } ${p.ios} I/Os in ${p.seconds} s: ${p.iops} IOPS, ${p.mb_s} MB/s; ` +
        `latency µs min ${l.min} median ${l.median} p99 ${l.p99} max ${l.max}`,
    );
    const pq = p.per_queue as { qid: number; ios: number }[];
    if (pq.length > 1) {
      lines.push(`      per queue: ${pq.map((q) => `${q.qid}: ${q.ios} I/Os`).join(", ")}`);
    }
  }
  if (d.rw === "verify") {
    lines.push(
      d.mismatch_lba === null
        ? `verify: all ${d.verified_ios} I/Os read back the pattern`
        : `verify: MISMATCH, first at LBA ${d.mismatch_lba}`,
    );
  }
  if (d.stopped) lines.push(`interrupted (${d.stopped}): partial result`);
  return lines.join("\n") + "\n";
}

export const benchCommand: CommandDetails = {
  description: `
Connects and enables the controller as 'nvmeof probe' does, identifies the namespace, then
connects --queues I/O queues of --qd entries each. Every queue has one registered data buffer of
qd × bs bytes, reused for the whole run: the target RDMA-WRITEs read data into it and
RDMA-READs write data out of it. qd commands stay in flight per queue; Keep Alive goes out on the
admin queue well within the keep-alive timeout. Prints IOPS, MB/s and latency (min, median, p99,
max); a command's latency runs from its post (ibv_post_send) to the poll that finds both its
completion and its send done, the span fio reports as lat. write, randwrite and verify destroy
the namespace's data and need --allow-write. Writes carry a pattern naming each block (every
8-byte word = 0x4e<<56 + LBA·2^16 + byte offset); verify writes it sequentially, reads it back,
and exits 1 naming the first LBA that differs.
JSON gives each pass's figures per queue too (per_queue: qid, ios, iops).

Ctrl-C (SIGINT) or SIGTERM stops issuing, lets the I/Os in flight complete, disconnects, and
prints the partial result over the time that ran, marked interrupted (JSON: "interrupted": true,
"stopped": "SIGINT received"); the exit code is then 1, as for every run that did not finish.
A target that drops a queue or stops answering for --timeout ends the run with exit 1 and an
error naming the queue.`,
  options: BENCH_OPTIONS as unknown as CommandDetails["options"],
  examples: [
    "nvmeof bench -a 10.77.0.1 -n nqn.2024-01.io.example:disk1            # 4 KiB random reads, QD 32, 10 s",
    "nvmeof bench -a 10.77.0.1 -n nqn.2024-01.io.example:disk1 --qd 1 --time 5 -o json",
    "nvmeof bench -a 10.77.0.1 -n nqn.2024-01.io.example:disk1 --rw verify --ios 10000 --allow-write",
  ],
  async run(ctx: RunContext): Promise<CommandResult> {
    const v = ctx.values;
    const p = benchParams(v);
    const target = await controllerFromFlags(v, v.nqn as string);
    using cancel = new Canceller().onSignals();
    const o = { ...target, cancel };
    const ctrl = await Controller.connect(o);
    const workers: IoWorker[] = [];
    let kaTimer: ReturnType<typeof setTimeout> | undefined;
    let kaFailure: unknown;
    try {
      await ctrl.enable();
      const ic = await ctrl.identifyController();
      const ns = await ctrl.identifyNamespace(p.nsid);
      if (ns.nsze === 0n || ns.lbaSize === 0) {
        throw new FailureError(`Namespace ${p.nsid} of '${o.subnqn}' is not active.`);
      }
      if (p.bs % ns.lbaSize !== 0) {
        throw new UsageError(
          `--bs ${p.bs} is not a multiple of namespace ${p.nsid}'s block size ${ns.lbaSize}.`,
        );
      }
      const mdtsBytes = ic.mdts ? (4096 << (ctrl.cap?.mpsmin ?? 0)) * 2 ** ic.mdts : Infinity;
      if (p.bs > mdtsBytes) {
        throw new UsageError(`--bs ${p.bs} exceeds the controller's MDTS of ${mdtsBytes} bytes.`);
      }
      const nsze = Number(ns.nsze);
      const chunks = Math.floor((nsze * ns.lbaSize) / p.bs);
      if (chunks < 1) throw new UsageError(`--bs ${p.bs} is larger than the namespace.`);
      const g = { nsid: p.nsid, lbaSize: ns.lbaSize, nsze, bs: p.bs, qd: p.qd };
      const access = bufferAccess(p.rw);
      for (let qid = 1; qid <= p.queues; qid++) {
        // Like nvme-rdma, open the queue larger than the I/Os kept in flight: hrqsize sizes the
        // target's send queue, and each read's answer takes two of its WRs (RDMA WRITE + SEND),
        // so a queue of exactly qd entries halves what the target can answer at once (QD 32 in
        // the lab: 298-427 IOPS at 32 entries, 558-592 at 128). Only qd slots are used.
        const depth = Math.max(p.qd, Math.min(p.queueSize, (ctrl.cap?.mqes ?? 127) + 1));
        const q = await ctrl.connectIoQueue(qid, depth);
        try {
          workers.push(new IoWorker(q, g, access));
        } catch (err) {
          q.close();
          throw err;
        }
      }
      // Keep Alive within KATO: every third of it, off the I/O path.
      const keepAlive = () => {
        kaTimer = setTimeout(async () => {
          try {
            await ctrl.keepAlive();
            keepAlive();
          } catch (err) {
            kaFailure ??= err;
          }
        }, KATO_MS / 3);
      };
      keepAlive();

      const passes: Pass[] = p.rw === "verify"
        ? [{ op: "write", random: false, check: false }, { op: "read", random: false, check: true }]
        : [{
          op: writes(p.rw) ? "write" : "read",
          random: p.rw.startsWith("rand"),
          check: false,
        }];
      const ios = p.ios ?? (p.rw === "verify" ? chunks : undefined);
      const seconds = p.time ?? (ios === undefined ? 10 : undefined);
      const results: { all: PassResult; perQueue: PassResult[] }[] = [];
      let mismatch: number | undefined;
      for (const pass of passes) {
        if (cancel.reason !== undefined) break;
        // Each queue counts into its own result (per-queue figures), merged after the pass.
        const perQueue: PassResult[] = workers.map(() => ({
          ios: 0,
          bytes: 0,
          seconds: 0,
          latencies: new Samples(),
        }));
        let issued = 0;
        const rng = xorshift(0x5eed + results.length);
        const t0 = performance.now();
        // The run's end comes by timer (the loop yields every few ms), not a clock read per I/O.
        let expired = false;
        const endTimer = seconds === undefined
          ? undefined
          : setTimeout(() => expired = true, seconds * 1000);
        const next = () => {
          if (ios !== undefined && issued >= ios) return -1;
          if (expired) return -1;
          const c = pass.random ? rng() % chunks : issued % chunks;
          issued++;
          return c;
        };
        // One queue failing stops every queue issuing; all drain before anything is closed.
        const stop = () => {
          if (cancel.reason !== undefined || kaFailure !== undefined) return true;
          for (const w of workers) if (w.failure !== undefined) return true;
          return false;
        };
        try {
          workers.forEach((w, i) => w.start(pass, next, perQueue[i], stop));
          await drive(workers, { timeoutMs: o.timeoutMs, pollMs: p.pollMs });
        } finally {
          clearTimeout(endTimer);
          for (const w of workers) w.finish();
        }
        const took = (performance.now() - t0) / 1000;
        if (kaFailure) throw kaFailure;
        for (const r of perQueue) r.seconds = took;
        const out = mergeResults(perQueue, took);
        results.push({ all: out, perQueue });
        if (out.mismatch !== undefined) mismatch ??= out.mismatch;
      }
      clearTimeout(kaTimer);
      kaTimer = undefined;
      // After Ctrl-C the admin queue's waits would end at once: just disconnect.
      if (cancel.reason === undefined) await ctrl.shutdown();
      const data = {
        traddr: o.host,
        trsvcid: o.port,
        subnqn: o.subnqn,
        nsid: p.nsid,
        lba_size: ns.lbaSize,
        nsze,
        rw: p.rw,
        bs: p.bs,
        qd: p.qd,
        queues: p.queues,
        queue_size: workers[0]?.queue.depth ?? p.queueSize,
        passes: results.map((r, i) => ({
          op: passes[i].op,
          ...summary(r.all),
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
      const failed = mismatch !== undefined || cancel.reason !== undefined;
      if (mismatch !== undefined) {
        ctx.note(`Verify failed: LBA ${mismatch} did not read back its pattern.`);
      }
      if (cancel.reason !== undefined) {
        const ran = results.reduce((t, r) => t + r.all.seconds, 0);
        ctx.note(
          `Interrupted (${cancel.reason}): partial result over the ${ran.toFixed(1)} s that ran.`,
        );
      }
      return {
        data,
        text: (d) => text(d as Record<string, unknown>),
        exitCode: failed ? 1 : 0,
      };
    } finally {
      if (kaTimer !== undefined) clearTimeout(kaTimer);
      for (const w of workers.reverse()) w.close();
      ctrl.close();
    }
  },
};
