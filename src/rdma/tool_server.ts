/**
 * The server of `rdma ping --server` and `rdma bw --server`: listens, then answers ping, bw and
 * (with rping) rping clients one after another until cancelled or enough were served.
 */
import { hostPort } from "../net/address.ts";
import { Listener, Trace } from "./connection.ts";
import { serve } from "./ping_server.ts";
import { rpingServe } from "./rping.ts";
import type { ServedClient } from "./serve.ts";
import { Canceller } from "../wait.ts";

/** Where the server listens, how long it serves, and what it answers. */
export interface ToolServerOptions {
  /** Named in the listening line: "ping" or "bw". */
  kind: string;
  host: string;
  port: number;
  /** Bound on every wait of a client's turn. */
  timeoutMs: number;
  /** Stop after this many clients (0: until cancelled). */
  maxClients: number;
  /** Answer rping clients with buffers up to this size, instead of ping and bw clients. */
  rpingSize?: number;
  /** Record each client's CM events and QP states (ping and bw clients). */
  trace: boolean;
  /** Ends the serving; without one, SIGINT and SIGTERM do (a command's server). */
  cancel?: Canceller;
  note(line: string): void;
}

/** What the server did: where it listened and every client it served. */
export interface ToolServerResult {
  traddr: string;
  trsvcid: number;
  clients: ServedClient[];
}

/** Serves clients until cancelled (SIGINT/SIGTERM) or `maxClients` were served. */
export async function runToolServer(o: ToolServerOptions): Promise<ToolServerResult> {
  using signals = o.cancel ? undefined : new Canceller().onSignals();
  const cancel = o.cancel ?? signals!;
  using listener = new Listener(o.host, o.port);
  o.note(`${o.kind} server listening on ${hostPort(o.host, o.port)} (stop with Ctrl-C)`);
  const common = {
    timeoutMs: o.timeoutMs,
    cancel,
    maxClients: o.maxClients,
    note: o.note,
  };
  const clients = o.rpingSize !== undefined
    ? await rpingServe(listener, { ...common, size: o.rpingSize, trace: new Trace(false) })
    : await serve(listener, { ...common, trace: o.trace });
  return { traddr: o.host, trsvcid: o.port, clients };
}

/** "served 3 client(s) on 0.0.0.0:7174, 0 not ok". */
export function toolServerText(r: ToolServerResult): string {
  const failed = r.clients.filter((c) => c.result !== "ok").length;
  return `served ${r.clients.length} client(s) on ${
    hostPort(r.traddr, r.trsvcid)
  }, ${failed} not ok\n`;
}
