/**
 * What `rdma ping` and `rdma bw` share: the address, port, timeout and server flags, and the
 * server mode (`--server`) both run, which answers ping, bw and (with --rping) rping clients.
 */
import type { CommandResult, RunContext } from "./command.ts";
import { intFlag, stringFlag } from "./parse.ts";
import type { ServedClient } from "../rdma/serve.ts";

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

interface ServerResult {
  traddr: string;
  trsvcid: number;
  clients: ServedClient[];
}

function serverText(r: ServerResult): string {
  const failed = r.clients.filter((c) => c.result !== "ok").length;
  return `served ${r.clients.length} client(s) on ${r.traddr}:${r.trsvcid}, ${failed} not ok\n`;
}

/** Runs the server side until SIGINT/SIGTERM (or --clients N): shared by ping and bw. */
export async function runServer(ctx: RunContext, kind: string): Promise<CommandResult> {
  const { Listener, Trace } = await import("../rdma/connection.ts");
  const { serve } = await import("../rdma/ping_server.ts");
  const { rpingServe } = await import("../rdma/rping.ts");
  const { Canceller } = await import("../rdma/wait.ts");
  const v = ctx.values;
  const host = stringFlag(v, "traddr") ?? "0.0.0.0";
  const port = intFlag(v, "port", DEFAULT_PORT, 1, 65535);
  using cancel = new Canceller().onSignals();
  using listener = new Listener(host, port);
  ctx.note(`${kind} server listening on ${host}:${port} (stop with Ctrl-C)`);
  const common = {
    timeoutMs: intFlag(v, "timeout", 10000, 1),
    cancel,
    maxClients: intFlag(v, "clients", 0),
    note: ctx.note,
  };
  const clients = v.rping
    ? await rpingServe(listener, {
      ...common,
      size: intFlag(v, "size", 65536, 1, 1 << 30),
      trace: new Trace(false),
    })
    : await serve(listener, { ...common, trace: v.trace === true });
  return {
    data: { traddr: host, trsvcid: port, clients },
    text: serverText as (d: unknown) => string,
  };
}
