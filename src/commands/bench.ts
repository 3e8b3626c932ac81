/**
 * `nvmeof bench`: NVMe over RDMA I/O from user space, with data landing in registered buffers
 * (no nvme-rdma, no block device): IOPS, MB/s and latency, or `verify` of an LBA pattern.
 */
import type { hostPort } from "../net/address.ts";
import type { CommandDetails, CommandResult, OptionSpec, RunContext } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import {
  controllerFromFlags,
  HOST_ID_FLAGS,
  TARGET_FLAGS,
  TIMEOUT_FLAG,
} from "../cli/nvme_flags.ts";
import { DEFAULT_POLL_MS, RW_MODES, type RwMode, writes } from "../nvme/bench_options.ts";
import type { BenchParams } from "../nvme/bench_run.ts";
import { intFlag, optionalIntFlag, requiredStringFlag } from "../cli/parse.ts";

/** I/O queue entries by default: nvme-cli's and the kernel's NVMF_DEF_QUEUE_SIZE. */
export const DEFAULT_QUEUE_SIZE = 128;

const NQN_MISSING = "bench needs the subsystem: -n NQN.";

export const BENCH_OPTIONS = {
  ...TARGET_FLAGS,
  nqn: { type: "string", short: "n", value: "NQN", description: "Subsystem to drive" },
  ...HOST_ID_FLAGS,
  nsid: { type: "string", value: "N", description: "Namespace", default: "1" },
  rw: {
    type: "string",
    value: "MODE",
    description: "randread, read, randwrite, write or verify",
    choices: RW_MODES,
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
} satisfies Record<string, OptionSpec>;

/** The validated run parameters. */
export function benchParams(v: Record<string, unknown>): BenchParams {
  const rw = String(v.rw ?? "randread");
  if (!(RW_MODES as readonly string[]).includes(rw)) {
    throw new UsageError(`--rw must be one of ${RW_MODES.join(", ")}, not '${rw}'.`);
  }
  if (writes(rw as RwMode) && !v["allow-write"]) {
    throw new UsageError(`--rw ${rw} overwrites the namespace's data.`, {
      hint: "Add --allow-write if the data on it may be destroyed.",
    });
  }
  requiredStringFlag(v, "nqn", NQN_MISSING);
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

function text(d: Record<string, unknown>, at: typeof hostPort): string {
  const lines = [
    `${d.subnqn} nsid ${d.nsid} at ${
      at(String(d.traddr), String(d.trsvcid))
    }: ${d.rw}, bs ${d.bs}, ` +
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
  options: BENCH_OPTIONS,
  examples: [
    "nvmeof bench -a 10.77.0.1 -n nqn.2024-01.io.example:disk1            # 4 KiB random reads, QD 32, 10 s",
    "nvmeof bench -a 10.77.0.1 -n nqn.2024-01.io.example:disk1 --qd 1 --time 5 -o json",
    "nvmeof bench -a 10.77.0.1 -n nqn.2024-01.io.example:disk1 --rw verify --ios 10000 --allow-write",
  ],
  async run(ctx: RunContext): Promise<CommandResult> {
    const { runBench } = await import("../nvme/bench_run.ts");
    const { Canceller } = await import("../wait.ts");
    const { hostPort } = await import("../net/address.ts");
    const v = ctx.values;
    const p = benchParams(v);
    const target = await controllerFromFlags(v, requiredStringFlag(v, "nqn", NQN_MISSING));
    using cancel = new Canceller().onSignals();
    const r = await runBench({ ...target, cancel }, p);
    if (r.mismatch !== undefined) {
      ctx.note(`Verify failed: LBA ${r.mismatch} did not read back its pattern.`);
    }
    if (r.stopped !== undefined) {
      ctx.note(
        `Interrupted (${r.stopped}): partial result over the ${r.seconds.toFixed(1)} s that ran.`,
      );
    }
    return {
      data: r.data,
      text: (d) => text(d as Record<string, unknown>, hostPort),
      exitCode: r.mismatch !== undefined || r.stopped !== undefined ? 1 : 0,
    };
  },
};
