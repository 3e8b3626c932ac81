/**
 * The servers of the RDMA tools (ping and bw, rping) answer clients one after another, each with
 * its own connection and memory, released before the next client is accepted.
 */

/** One client a server handled. */
export interface ServedClient {
  client: number;
  op: string;
  size: number;
  count: number;
  verified: number;
  result: "ok" | "rejected" | "failed";
  error?: string;
}

/** One client's turn at a server. */
export interface Turn {
  /** Accepts the client and serves it, filling in its entry. */
  run(): Promise<void>;
  /** The message for a failure of `run` (default: the error's own). */
  explain?(err: unknown): Promise<string>;
  /** Releases what the turn holds; called after `run` (and `explain`) whatever happened. */
  end(): void;
}

/** How long a server serves, and where it reports. */
export interface TurnOptions {
  /** Stop after this many clients (0: until cancelled). */
  maxClients: number;
  note(line: string): void;
}

/** Client `n`'s entry before its hello is read. */
function servedClient(n: number): ServedClient {
  return { client: n, op: "?", size: 0, count: 0, verified: 0, result: "ok" };
}

/**
 * Serves clients in turn until cancelled (a CancelledError out of a turn) or `maxClients` were
 * served: `begin` makes each client's turn around its entry in the list returned. A failed turn
 * is marked and noted, and the next client is served.
 */
export async function serveInTurn(
  o: TurnOptions,
  begin: (entry: ServedClient) => Turn,
): Promise<ServedClient[]> {
  const served: ServedClient[] = [];
  for (let n = 1; o.maxClients === 0 || n <= o.maxClients; n++) {
    const entry = servedClient(n);
    const turn = begin(entry);
    try {
      await turn.run();
    } catch (err) {
      if ((err as Error).name === "CancelledError") break;
      entry.result = "failed";
      entry.error = turn.explain ? await turn.explain(err) : (err as Error).message;
      o.note(`client ${n}: failed: ${entry.error}`);
    } finally {
      turn.end();
    }
    served.push(entry);
  }
  return served;
}
