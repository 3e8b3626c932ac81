/**
 * Wire compatibility with rdma-core's rping (librdmacm/examples/rping.c), both ways.
 *
 * Per iteration the client SENDs {buf be64, rkey be32, size be32} for its start buffer; the
 * server RDMA-READs it, SENDs a go-ahead; the client SENDs the same for its sink buffer; the
 * server RDMA-WRITEs what it read there and SENDs a go-ahead; the client compares. Every
 * control message is exactly 16 bytes (rping checks byte_len). No private data; default port
 * 7174. Waits here use the completion channel (no busy polling): rping is a check, not a benchmark.
 */
import { IBV_ACCESS, IBV_SEND, IBV_WC_OPCODE, IBV_WR } from "../../ffi/enums.ts";
import { FailureError, UsageError } from "../errors.ts";
import {
  accept,
  connect,
  type Connection,
  type Listener,
  type QpSetup,
  type Trace,
} from "./connection.ts";
import { checkCompletion, firstDifference } from "./completion.ts";
import { type ServedClient, serveInTurn, type TurnOptions } from "./serve.ts";
import type { MemoryRegion } from "./verbs.ts";
import { WorkRequest } from "./work_request.ts";
import type { Canceller } from "../wait.ts";

const INFO_SIZE = 16;
/** RPING_MIN_BUFSIZE in rping.c: room for "rdma-ping-%d: " with any int. */
export const RPING_MIN_SIZE = 26;

/** rping's payload for ping number `ping` (RPING_MSG_FMT then A…z cycling, NUL at the end). */
export function rpingPayload(ping: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  const head = new TextEncoder().encode(`rdma-ping-${ping}: `);
  const cc = Math.min(head.length, size - 1);
  out.set(head.subarray(0, cc));
  let c = 65 + (ping % 58);
  for (let i = cc; i < size; i++) {
    out[i] = c;
    c++;
    if (c > 122) c = 65;
  }
  out[size - 1] = 0;
  return out;
}

/** Encodes struct rping_rdma_info (network byte order). */
export function encodeInfo(buf: Uint8Array, addr: bigint, rkey: number, size: number): void {
  const dv = new DataView(buf.buffer, buf.byteOffset, INFO_SIZE);
  dv.setBigUint64(0, addr, false);
  dv.setUint32(8, rkey, false);
  dv.setUint32(12, size, false);
}

export function decodeInfo(buf: Uint8Array): { addr: bigint; rkey: number; size: number } {
  const dv = new DataView(buf.buffer, buf.byteOffset, INFO_SIZE);
  return {
    addr: dv.getBigUint64(0, false),
    rkey: dv.getUint32(8, false),
    size: dv.getUint32(12, false),
  };
}

class PeerGone extends FailureError {}

/** Waits for the next completion of `kind` (send-side or recv) through the completion channel. */
class Completions {
  sends = 0;
  recvs = 0;
  lastRecvLen = 0;
  constructor(readonly conn: Connection, readonly timeoutMs: number, readonly cancel?: Canceller) {
    conn.ep.cq.requestNotify();
  }
  #reap(): void {
    const cq = this.conn.ep.cq;
    for (;;) {
      const n = cq.poll();
      for (let k = 0; k < n; k++) {
        checkCompletion(cq, k, "during rping");
        if (cq.opcode(k) & IBV_WC_OPCODE.RECV) {
          this.recvs++;
          this.lastRecvLen = cq.byteLen(k);
        } else this.sends++;
      }
      if (n < cq.capacity) return;
    }
  }
  async until(done: () => boolean, what: string): Promise<void> {
    const deadline = performance.now() + this.timeoutMs;
    for (;;) {
      this.#reap();
      if (done()) return;
      const ev = this.conn.pollEnd();
      if (ev) throw new PeerGone(`The peer went away (${ev.name}) while waiting for ${what}.`);
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new FailureError(`Timed out after ${this.timeoutMs} ms waiting for ${what}.`);
      }
      await this.conn.ep.cq.waitEvent(Math.min(left, 50), this.cancel);
    }
  }
}

export interface RpingClientOptions {
  host: string;
  port: number;
  size: number;
  count: number;
  timeoutMs: number;
  trace: Trace;
  cancel?: Canceller;
}

export interface RpingResult {
  traddr: string;
  trsvcid: number;
  mode: "rping";
  size: number;
  count: number;
  verified: number;
  last_payload: string;
}

/** Runs rping's client protocol against `rping -s` (or our --rping server). */
export async function rpingClient(o: RpingClientOptions): Promise<RpingResult> {
  if (o.size < RPING_MIN_SIZE) {
    throw new UsageError(`rping needs --size of at least ${RPING_MIN_SIZE} bytes, not ${o.size}.`);
  }
  let recv!: MemoryRegion, send!: MemoryRegion, start!: MemoryRegion, sink!: MemoryRegion;
  const setup: QpSetup = {
    caps: { maxSendWr: 16, maxRecvWr: 2 },
    cqe: 32,
    access: IBV_ACCESS.REMOTE_READ | IBV_ACCESS.REMOTE_WRITE,
    prepare(ep) {
      recv = ep.pd.register(INFO_SIZE, IBV_ACCESS.LOCAL_WRITE);
      send = ep.pd.register(INFO_SIZE, 0);
      start = ep.pd.register(o.size, IBV_ACCESS.REMOTE_READ); // the server reads it
      sink = ep.pd.register(o.size, IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE);
      ep.qp.postRecv(new WorkRequest("recv").local(0, recv, 0, INFO_SIZE).address);
      return undefined;
    },
  };
  const conn = await connect({
    host: o.host,
    port: o.port,
    timeoutMs: o.timeoutMs,
    trace: o.trace,
    cancel: o.cancel,
    conn: { responderResources: 1, initiatorDepth: 1, retryCount: 7, rnrRetryCount: 7 },
  }, setup);
  try {
    const c = new Completions(conn, o.timeoutMs, o.cancel);
    const swr = new WorkRequest("send").local(0, send, 0, INFO_SIZE).op(
      IBV_WR.SEND,
      IBV_SEND.SIGNALED,
    );
    const rwr = new WorkRequest("recv").local(0, recv, 0, INFO_SIZE);
    let last = "";
    for (let ping = 0; ping < o.count; ping++) {
      start.bytes.set(rpingPayload(ping, o.size));
      sink.bytes.fill(0);
      for (
        const [mr, what] of [[start, "the server's RDMA READ"], [
          sink,
          "the server's RDMA WRITE",
        ]] as const
      ) {
        encodeInfo(send.bytes, mr.addr, mr.rkey, o.size);
        const recvs = c.recvs;
        conn.ep.qp.postSend(swr.address);
        await c.until(() => c.recvs > recvs, `the go-ahead after ${what} (ping ${ping})`);
        if (c.lastRecvLen !== INFO_SIZE) {
          throw new FailureError(`The server's go-ahead has ${c.lastRecvLen} bytes, not 16.`);
        }
        conn.ep.qp.postRecv(rwr.address);
      }
      const bad = firstDifference(sink.bytes, start.bytes);
      if (bad >= 0) throw new FailureError(`Data mismatch in ping ${ping} at byte ${bad}.`);
      last = new TextDecoder().decode(sink.bytes.subarray(0, o.size - 1));
    }
    return {
      traddr: o.host,
      trsvcid: o.port,
      mode: "rping",
      size: o.size,
      count: o.count,
      verified: o.count,
      last_payload: last,
    };
  } finally {
    conn.close();
  }
}

/** Options of the rping server. */
export interface RpingServeOptions extends TurnOptions {
  /** The largest buffer a client may offer. */
  size: number;
  timeoutMs: number;
  trace: Trace;
  cancel: Canceller;
}

/** Serves rping clients (`rping -c`) one after another until cancelled. */
export function rpingServe(listener: Listener, o: RpingServeOptions): Promise<ServedClient[]> {
  return serveInTurn(o, (entry) => {
    entry.op = "rping";
    let conn: Connection | undefined;
    return {
      async run() {
        let bufs: ServerBuffers | undefined;
        conn = await accept(listener, {
          timeoutMs: o.timeoutMs,
          trace: o.trace,
          cancel: o.cancel,
          conn: { responderResources: 1, initiatorDepth: 1 },
        }, () => ({
          setup: {
            caps: { maxSendWr: 16, maxRecvWr: 2 },
            cqe: 32,
            access: 0, // the rping client never reads or writes the server's memory
            prepare(ep) {
              bufs = {
                recv: ep.pd.register(INFO_SIZE, IBV_ACCESS.LOCAL_WRITE),
                send: ep.pd.register(INFO_SIZE, 0),
                buf: ep.pd.register(o.size, IBV_ACCESS.LOCAL_WRITE), // RDMA READ lands here
              };
              ep.qp.postRecv(new WorkRequest("recv").local(0, bufs.recv, 0, INFO_SIZE).address);
              return undefined;
            },
          },
        }));
        if (!conn) return;
        await serveRpingClient(conn, bufs!, entry, o);
        o.note(`client ${entry.client}: rping ${entry.size} B × ${entry.count}: ok`);
      },
      end() {
        conn?.close();
      },
    };
  });
}

/** The server's registered memory: control messages in and out, and the data buffer. */
interface ServerBuffers {
  recv: MemoryRegion;
  send: MemoryRegion;
  buf: MemoryRegion;
}

/**
 * rping's server loop on one connection: per ping, RDMA-READ the client's start buffer, go-ahead,
 * RDMA-WRITE it into the client's sink buffer, go-ahead; the client's disconnect while it waits
 * for the next start buffer is the normal end.
 */
async function serveRpingClient(
  cn: Connection,
  { recv, send, buf }: ServerBuffers,
  entry: ServedClient,
  o: RpingServeOptions,
): Promise<void> {
  const c = new Completions(cn, o.timeoutMs, o.cancel);
  const rwr = new WorkRequest("recv").local(0, recv, 0, INFO_SIZE);
  const go = new WorkRequest("send").local(0, send, 0, INFO_SIZE).op(
    IBV_WR.SEND,
    IBV_SEND.SIGNALED,
  );
  const rdma = new WorkRequest("send");
  let posted = 0; // signaled sends posted: completions arrive in order
  /** Posts one signaled RDMA READ or WRITE of `len` bytes against `remote` and waits for it. */
  const transfer = async (
    ping: number,
    opcode: number,
    len: number,
    remote: { addr: bigint; rkey: number },
    what: string,
  ) => {
    rdma.local(ping, buf, 0, len).op(opcode, IBV_SEND.SIGNALED, remote.addr, remote.rkey);
    cn.ep.qp.postSend(rdma.address);
    const after = ++posted;
    await c.until(() => c.sends >= after, what);
  };
  for (let ping = 0;; ping++) {
    // Wait for the client's start buffer; its disconnect here is the normal end.
    try {
      const r0 = c.recvs;
      await c.until(() => c.recvs > r0, "the client's start buffer");
    } catch (err) {
      if (err instanceof PeerGone) return;
      throw err;
    }
    const src = decodeInfo(recv.bytes);
    cn.ep.qp.postRecv(rwr.address);
    if (src.size > o.size) {
      throw new FailureError(
        `The client's buffer (${src.size} B) is larger than --size ${o.size}.`,
      );
    }
    entry.size = src.size;
    await transfer(ping, IBV_WR.RDMA_READ, src.size, src, "the RDMA READ");
    const r1 = c.recvs;
    cn.ep.qp.postSend(go.address);
    posted++;
    await c.until(() => c.recvs > r1, "the client's sink buffer");
    const dst = decodeInfo(recv.bytes);
    cn.ep.qp.postRecv(rwr.address);
    await transfer(ping, IBV_WR.RDMA_WRITE, Math.min(src.size, dst.size), dst, "the RDMA WRITE");
    cn.ep.qp.postSend(go.address);
    posted++;
    entry.count = entry.verified = ping + 1;
  }
}
