/**
 * `rdma bw`: streamed RDMA WRITEs with the send queue kept full (`depth` outstanding), one
 * completion requested every `depth/4` writes, all into the server's one buffer (as
 * ib_write_bw does). The server side is the ping server (src/rdma/ping_server.ts): it registers
 * `size` bytes with REMOTE_WRITE and waits for the client to disconnect.
 */
import { IBV_SEND, IBV_WR } from "../../ffi/enums.ts";
import { IBV_SEND_WR } from "../../ffi/structs.ts";
import { FailureError } from "../errors.ts";
import { connect, Trace } from "./connection.ts";
import { checkCompletion } from "./completion.ts";
import { decodeHello, encodeHello } from "./ping_protocol.ts";
import type { MemoryRegion } from "./verbs.ts";
import { WorkRequest } from "./work_request.ts";
import type { Canceller } from "../wait.ts";

export interface BwOptions {
  host: string;
  port: number;
  size: number;
  depth: number;
  /** Number of writes, or 0 to run for `seconds`. */
  iters: number;
  seconds: number;
  timeoutMs: number;
  cancel?: Canceller;
}

export interface BwResult {
  traddr: string;
  trsvcid: number;
  op: "write";
  size: number;
  depth: number;
  iters: number;
  seconds: number;
  bytes: number;
  /** MiB/s (2^20 bytes per second: the unit perftest prints as MB/sec). */
  bw_mib_s: number;
  /** 10^6 bytes per second. */
  bw_mb_s: number;
  msg_rate_mpps: number;
}

export async function bwClient(o: BwOptions): Promise<BwResult> {
  let tx: MemoryRegion | undefined;
  const conn = await connect({
    host: o.host,
    port: o.port,
    timeoutMs: o.timeoutMs,
    trace: new Trace(false),
    cancel: o.cancel,
  }, {
    caps: { maxSendWr: o.depth, maxRecvWr: 1 },
    cqe: o.depth + 16,
    access: 0,
    prepare(ep) {
      tx = ep.pd.register(o.size, 0);
      for (let k = 0; k < o.size; k++) tx.bytes[k] = k & 0xff;
      return encodeHello({ op: "bw", addr: 0n, rkey: 0, len: 0, count: o.iters, size: o.size });
    },
  });
  try {
    const peer = decodeHello(conn.peerData);
    if (!peer || peer.len < o.size) {
      throw new FailureError("The server's reply is not an nvmeof bw reply for this size.");
    }
    const ep = conn.ep;
    const cq = ep.cq;
    const wr = new WorkRequest("send").local(0, tx!, 0, o.size).op(
      IBV_WR.RDMA_WRITE,
      0,
      peer.addr,
      peer.rkey,
    );
    const flagsOff = IBV_SEND_WR.send_flags;
    const sig = Math.max(1, Math.floor(o.depth / 4));
    let total = o.iters > 0 ? o.iters : Number.MAX_SAFE_INTEGER;
    const endAt = o.iters > 0 ? Infinity : performance.now() + o.seconds * 1000;
    let posted = 0;
    let completed = 0;
    let lastProgress = performance.now();
    let spins = 0;
    const t0 = performance.now();
    while (completed < total) {
      while (posted < total && posted - completed < o.depth) {
        const n = posted + 1;
        const signaled = n % sig === 0 || n === total;
        wr.view.setUint32(flagsOff, signaled ? IBV_SEND.SIGNALED : 0, true);
        wr.view.setUint32(0, n, true);
        ep.qp.postSend(wr.address);
        posted = n;
      }
      const got = cq.poll();
      for (let k = 0; k < got; k++) {
        checkCompletion(cq, k, "during the bandwidth run");
        completed = cq.wrId(k);
      }
      if (got > 0) lastProgress = performance.now();
      if ((++spins & 1023) === 0) {
        const now = performance.now();
        if (now > endAt && total === Number.MAX_SAFE_INTEGER) {
          // Time is up: the last posted write must be signaled so the drain can end.
          total = posted % sig === 0 ? posted : posted + 1;
          if (total > posted) {
            wr.view.setUint32(flagsOff, IBV_SEND.SIGNALED, true);
            wr.view.setUint32(0, total, true);
            ep.qp.postSend(wr.address);
            posted = total;
          }
        }
        if (now - lastProgress > o.timeoutMs) {
          throw new FailureError(
            `No write completed for ${o.timeoutMs} ms (${completed} of ${posted} done).`,
            { hint: "The server stopped answering; check that it is still running." },
          );
        }
        if (conn.pollEnd()) {
          throw new FailureError(`The server went away after ${completed} writes.`);
        }
        o.cancel?.check();
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const bytes = completed * o.size;
    return {
      traddr: o.host,
      trsvcid: o.port,
      op: "write",
      size: o.size,
      depth: o.depth,
      iters: completed,
      seconds: Math.round(seconds * 1e6) / 1e6,
      bytes,
      bw_mib_s: Math.round((bytes / seconds / 1048576) * 100) / 100,
      bw_mb_s: Math.round((bytes / seconds / 1e6) * 100) / 100,
      msg_rate_mpps: Math.round((completed / seconds / 1e6) * 1e6) / 1e6,
    };
  } finally {
    conn.close();
  }
}
