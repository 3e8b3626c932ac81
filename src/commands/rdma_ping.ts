/**
 * `nvmeof rdma ping`: an RC connection over RDMA-CM and a verified ping-pong of RDMA WRITE, READ
 * or SEND; `--server` answers clients one after another; `--rping` speaks rdma-core's rping.
 */
import type { hostPort } from "../net/address.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { intFlag, stringFlag } from "../cli/parse.ts";
import { NvmeofError, UsageError } from "../errors.ts";
import type { Trace, traceLines } from "../rdma/connection.ts";
import { DEFAULT_PORT, PING_SHARED_OPTIONS, runServer } from "../cli/rdma_flags.ts";
import type { PingResult } from "../rdma/ping.ts";
import type { RpingResult } from "../rdma/rping.ts";

/** Attaches the trace so far to an error (so a failed connect still shows its steps). */
function withTrace(err: unknown, trace: Trace, lines: typeof traceLines): unknown {
  if (!trace.enabled || !(err instanceof NvmeofError) || trace.steps.length === 0) return err;
  const text = lines(trace.steps).join("\n");
  Object.defineProperty(err, "hint", {
    value: `${err.hint ? err.hint + "\n" : ""}trace so far:\n${text}`,
  });
  return err;
}

function clientText(r: PingResult, lines: typeof traceLines, at: typeof hostPort): string {
  const out: string[] = [];
  if (r.trace) out.push(...lines(r.trace), "");
  const l = r.latency;
  out.push(
    `${r.op} ${r.size} B to ${at(r.traddr, r.trsvcid)}: ${r.verified}/${r.count} verified` +
      (r.warmup ? ` (after ${r.warmup} untimed)` : ""),
    `${r.op === "read" ? "read" : "round trip"} µs: min ${l.min_us}  median ${l.median_us}  ` +
      `p99 ${l.p99_us}  max ${l.max_us}  avg ${l.avg_us}`,
  );
  return out.join("\n") + "\n";
}

function rpingText(r: RpingResult, at: typeof hostPort): string {
  return `rping ${r.size} B × ${r.count} with ${
    at(r.traddr, r.trsvcid)
  }: ${r.verified} verified\n` +
    `last: ${r.last_payload}\n`;
}

export const rdmaPingCommand: CommandDetails = {
  description:
    "Connects an RC queue pair over RDMA-CM (resolve address and route, connect/accept with " +
    "private data carrying each side's buffer address, rkey and length), then runs COUNT " +
    "iterations of the chosen operation on registered buffers, checks every iteration's " +
    "payload, and prints min/median/p99/max latency. write: the client RDMA-WRITEs, the " +
    "server sees the bytes arrive and RDMA-WRITEs them back (round trip, like ib_write_lat " +
    "which prints half of it). read: the client RDMA-READs from the server. send: SEND and " +
    "echo SEND.\n\n" +
    "The queue pair is moved RESET → INIT → RTR → RTS by nvmeof itself (rdma_init_qp_attr + " +
    "ibv_modify_qp), so --trace can show each CM event and each state read back with " +
    "ibv_query_qp, with path MTU, PSNs and QP numbers.\n\n" +
    "--rping speaks rdma-core's rping protocol instead (SEND of buffer info in network byte " +
    "order, RDMA READ, RDMA WRITE, go-ahead SENDs; 16-byte control messages; port 7174), so " +
    "either side can be rping itself. Sizes as rping's -S (default 64; the server accepts " +
    "clients up to its --size, default 64 KiB).\n\n" +
    "--server serves clients one after another until SIGINT/SIGTERM, releasing every " +
    "resource after each. Memory is registered with the least access each side needs. Every " +
    "wait is bounded by --timeout; failures name the CM event or completion status.",
  options: {
    ...PING_SHARED_OPTIONS,
    count: {
      type: "string",
      short: "c",
      value: "COUNT",
      description: "Iterations (default 1000; 10 with --rping, like rping -C)",
    },
    warmup: {
      type: "string",
      value: "N",
      description: "Untimed iterations before the timed ones (default 0; measuring: 2000 or more)",
    },
    size: { type: "string", value: "BYTES", description: "Payload size (default 64)" },
    op: { type: "string", value: "OP", description: "write, read or send (default write)" },
    trace: {
      type: "boolean",
      description: "Show CM events and QP transitions with timestamps",
    },
    rping: {
      type: "boolean",
      description:
        "Speak rdma-core's rping protocol (client: against rping -s; server: for rping -c)",
    },
  },
  examples: [
    "nvmeof rdma ping --server -a 10.77.0.1          # serve until Ctrl-C",
    "nvmeof rdma ping -a 10.77.0.1 -c 1000 --size 4096 --op write",
    "nvmeof rdma ping -a 10.77.0.1 -c 5000 --warmup 5000 -o json  # latency once the code is compiled",
    "nvmeof rdma ping -a 10.77.0.1 --op read --trace  # RESET → INIT → RTR → RTS, timed",
    "nvmeof rdma ping -a 10.77.0.1 --op send -o json",
    "nvmeof rdma ping --rping -a 10.77.0.1 -c 10     # against: rping -s -a 10.77.0.1 -v -C 10",
    "nvmeof rdma ping --server --rping -a 10.77.0.1  # for: rping -c -a 10.77.0.1 -C 10 -v -V",
  ],
  async run(ctx: RunContext): Promise<CommandResult> {
    const { Trace, traceLines } = await import("../rdma/connection.ts");
    const { Canceller } = await import("../wait.ts");
    const { pingClient } = await import("../rdma/ping.ts");
    const { rpingClient } = await import("../rdma/rping.ts");
    const { hostPort } = await import("../net/address.ts");
    const v = ctx.values;
    if (v.server) {
      return await runServer(ctx, "ping", {
        ...(v.rping ? { rpingSize: intFlag(v, "size", 65536, 1, 1 << 30) } : {}),
        trace: v.trace === true,
      });
    }
    const host = stringFlag(v, "traddr");
    if (!host) {
      throw new UsageError("Say where to connect: -a ADDR.", {
        hint: "Example: nvmeof rdma ping -a 10.77.0.1 (with 'nvmeof rdma ping --server' there).",
      });
    }
    const op = stringFlag(v, "op") ?? "write";
    if (op !== "write" && op !== "read" && op !== "send") {
      throw new UsageError(`--op must be write, read or send, not '${op}'.`);
    }
    const trace = new Trace(v.trace === true);
    using cancel = new Canceller().onSignals();
    try {
      if (v.rping && v.op !== undefined) {
        throw new UsageError("--rping has its own fixed operations: drop --op.");
      }
      if (v.rping && v.warmup !== undefined) {
        throw new UsageError("--rping times nothing, so it has no --warmup: drop it.");
      }
      const common = {
        host,
        port: intFlag(v, "port", DEFAULT_PORT, 1, 65535),
        size: intFlag(v, "size", 64, 1, 1 << 30),
        timeoutMs: intFlag(v, "timeout", 10000, 1),
        trace,
        cancel,
      };
      if (v.rping) {
        const r = await rpingClient({ ...common, count: intFlag(v, "count", 10, 1) });
        return { data: r, text: (d) => rpingText(d as RpingResult, hostPort) };
      }
      const r = await pingClient({
        ...common,
        op,
        count: intFlag(v, "count", 1000, 1),
        warmup: intFlag(v, "warmup", 0, 0, 1 << 24),
      });
      return { data: r, text: (d) => clientText(d as PingResult, traceLines, hostPort) };
    } catch (err) {
      throw withTrace(err, trace, traceLines);
    }
  },
};
