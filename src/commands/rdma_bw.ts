/**
 * `nvmeof rdma bw`: RDMA WRITE bandwidth with the send queue kept full.
 */
import type { hostPort } from "../net/address.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import type { BwResult } from "../rdma/bw.ts";
import { intFlag, stringFlag } from "../cli/parse.ts";
import { DEFAULT_PORT, PING_SHARED_OPTIONS, runServer } from "../cli/rdma_flags.ts";

function text(r: BwResult, at: typeof hostPort): string {
  return `write ${r.size} B × ${r.iters} to ${at(r.traddr, r.trsvcid)} (depth ${r.depth}) in ` +
    `${r.seconds} s: ${r.bw_mib_s} MiB/s (${r.bw_mb_s} MB/s), ${r.msg_rate_mpps} Mmsg/s\n`;
}

export const rdmaBwCommand: CommandDetails = {
  description:
    "Connects like 'rdma ping', then streams RDMA WRITEs of --size bytes into the server's " +
    "buffer, keeping --depth writes outstanding and asking for a completion every depth/4, and " +
    "prints MiB/s (the unit perftest prints as MB/sec), MB/s and messages/s. Runs --iters " +
    "writes (default 5000, as ib_write_bw) or for --time seconds. The server is the same " +
    "as the ping server: 'nvmeof rdma bw --server' or 'nvmeof rdma ping --server'.",
  options: {
    ...PING_SHARED_OPTIONS,
    size: { type: "string", value: "BYTES", description: "Write size (default 65536)" },
    depth: { type: "string", value: "N", description: "Writes outstanding (default 128)" },
    iters: { type: "string", value: "N", description: "Number of writes (default 5000)" },
    time: { type: "string", value: "S", description: "Run for S seconds instead of --iters" },
  },
  examples: [
    "nvmeof rdma bw --server -a 10.77.0.1",
    "nvmeof rdma bw -a 10.77.0.1                     # 5000 × 64 KiB, depth 128",
    "nvmeof rdma bw -a 10.77.0.1 --size 4096 --time 5 -o json",
  ],
  async run(ctx: RunContext): Promise<CommandResult> {
    const { bwClient } = await import("../rdma/bw.ts");
    const { Canceller } = await import("../wait.ts");
    const { hostPort } = await import("../net/address.ts");
    const v = ctx.values;
    if (v.server) return await runServer(ctx, "bw", { trace: false });
    const host = stringFlag(v, "traddr");
    if (!host) {
      throw new UsageError("Say where to connect: -a ADDR.", {
        hint: "Example: nvmeof rdma bw -a 10.77.0.1 (with 'nvmeof rdma bw --server' there).",
      });
    }
    if (v.iters !== undefined && v.time !== undefined) {
      throw new UsageError("--iters and --time exclude each other.");
    }
    using cancel = new Canceller().onSignals();
    const r = await bwClient({
      host,
      port: intFlag(v, "port", DEFAULT_PORT, 1, 65535),
      size: intFlag(v, "size", 65536, 1, 1 << 30),
      depth: intFlag(v, "depth", 128, 1, 16384),
      iters: v.time !== undefined ? 0 : intFlag(v, "iters", 5000, 1),
      seconds: intFlag(v, "time", 0, 1, 3600),
      timeoutMs: intFlag(v, "timeout", 10000, 1),
      cancel,
    });
    return { data: r, text: (d) => text(d as BwResult, hostPort) };
  },
};
