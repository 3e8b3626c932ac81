/**
 * The flags `rdma ping` and `rdma bw` share: the address, port, timeout and server flags, and how
 * the server's are read (the server itself is src/rdma/tool_server.ts).
 */
import type { CommandResult, OptionValues, RunContext } from "./command.ts";
import { intFlag, stringFlag } from "./parse.ts";

/** rping's port, and so ours. */
export const DEFAULT_PORT = 7174;

/** The flags of both commands, client and server. */
export const PING_SHARED_OPTIONS = {
  server: { type: "boolean", description: "Serve clients one after another until stopped" },
  traddr: {
    type: "string",
    short: "a",
    value: "ADDR",
    description: "Server address (client: where to connect; server: where to listen, default all)",
  },
  port: {
    type: "string",
    short: "p",
    value: "PORT",
    description: `RDMA-CM port (default ${DEFAULT_PORT}, rping's)`,
  },
  timeout: {
    type: "string",
    value: "MS",
    description: "Bound on every wait: resolution, connection, each completion (default 10000)",
  },
  clients: {
    type: "string",
    value: "N",
    description: "Server: stop after N clients (default: serve until SIGINT/SIGTERM)",
  },
} as const;

/** Where --server listens and how long it serves: -a (default all), -p, --timeout, --clients. */
export function serverFlags(
  values: OptionValues,
): { host: string; port: number; timeoutMs: number; maxClients: number } {
  return {
    host: stringFlag(values, "traddr") ?? "0.0.0.0",
    port: intFlag(values, "port", DEFAULT_PORT, 1, 65535),
    timeoutMs: intFlag(values, "timeout", 10000, 1),
    maxClients: intFlag(values, "clients", 0),
  };
}

/**
 * `rdma ping --server` and `rdma bw --server`: answers clients until SIGINT/SIGTERM (or --clients
 * N). The server is loaded only when asked for, so neither command's --help loads the RDMA layer.
 */
export async function runServer(
  ctx: RunContext,
  kind: "ping" | "bw",
  extra: { rpingSize?: number; trace: boolean },
): Promise<CommandResult> {
  const { runToolServer, toolServerText } = await import("../rdma/tool_server.ts");
  const r = await runToolServer({ kind, ...serverFlags(ctx.values), ...extra, note: ctx.note });
  return { data: r, text: toolServerText as (d: unknown) => string };
}
