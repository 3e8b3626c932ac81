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
