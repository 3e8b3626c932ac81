/**
 * `rdma ping`: a ping-pong of RDMA WRITE, READ or SEND on registered buffers, with every
 * iteration's payload verified, and the server that answers it (one client after another).
 *
 * Wire protocol (private data, little-endian, 32 bytes), client → server in the REQ and
 * server → client in the REP: magic "NVMR" u32 @0, version u8 @4, op u8 @5, addr u64 @8,
 * rkey u32 @16, len u32 @20, count u32 @24, size u32 @28.
 *
 * write: the client RDMA-WRITEs iteration i into the server's slot i%2; the server sees the last
 *   byte change (memory polling, like ib_write_lat), echoes the slot into the client's slot i%2
 *   with its own RDMA WRITE, then checks it. The client times the round trip and checks the echo.
 * read: the client RDMA-READs `size` bytes at a per-iteration offset of the server's pattern.
 * send: the client SENDs; the server receives into slot i%2 and SENDs the same bytes back.
 */
import { IBV_ACCESS, IBV_SEND, IBV_WR, wcStatusName } from "../../ffi/enums.ts";
import { FailureError, UsageError } from "../errors.ts";
import {
  accept,
  connect,
  type Connection,
  type Endpoint,
  type Listener,
  type QpSetup,
  Trace,
  traceLines,
  type TraceStep,
} from "./connection.ts";
import { CompletionError, firstDifference } from "./completion.ts";
import type { ServedClient } from "./serve.ts";
import { POLL_MEMORY, Spinner } from "./spin.ts";
import type { MemoryRegion } from "./verbs.ts";
import { WorkRequest } from "./verbs.ts";
import type { Canceller } from "./wait.ts";

export type PingOp = "write" | "read" | "send" | "bw";
const OPS: PingOp[] = ["write", "read", "send", "bw"];
const MAGIC = 0x524d564e; // "NVMR"

/** The private data both sides exchange. */
export interface Hello {
  op: PingOp;
  addr: bigint;
  rkey: number;
  len: number;
  count: number;
  size: number;
}

export function encodeHello(h: Hello): Uint8Array {
  const b = new Uint8Array(32);
  const dv = new DataView(b.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint8(4, 1);
  dv.setUint8(5, OPS.indexOf(h.op));
  dv.setBigUint64(8, h.addr, true);
  dv.setUint32(16, h.rkey, true);
  dv.setUint32(20, h.len, true);
  dv.setUint32(24, h.count, true);
  dv.setUint32(28, h.size, true);
  return b;
}

/** Decodes private data; undefined when it is not ours (wrong length, magic or version). */
export function decodeHello(b: Uint8Array): Hello | undefined {
  if (b.length < 32) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.length);
  if (dv.getUint32(0, true) !== MAGIC || dv.getUint8(4) !== 1) return undefined;
  const op = OPS[dv.getUint8(5)];
  if (!op) return undefined;
  return {
    op,
    addr: dv.getBigUint64(8, true),
    rkey: dv.getUint32(16, true),
    len: dv.getUint32(20, true),
    count: dv.getUint32(24, true),
    size: dv.getUint32(28, true),
  };
}

/** The reference bytes: iteration i's payload is PATTERN[shift(i) .. shift(i) + size). */
let patternCache: Uint8Array | undefined;
export function pattern(size: number): Uint8Array {
  if (!patternCache || patternCache.length < size + 256) {
    const p = new Uint8Array(Math.max(size + 256, 4096 + 256));
    for (let k = 0; k < p.length; k++) p[k] = ((k * 7 + (k >> 8) * 13 + 1) & 0xff) || 0x5a;
    patternCache = p;
  }
  return patternCache;
}

/** Where iteration i's payload starts in the pattern. */
export function shift(i: number): number {
  return i % 251;
}

/** Latency figures in microseconds. */
export interface LatencyStats {
  samples: number;
  min_us: number;
  median_us: number;
  p99_us: number;
  max_us: number;
  avg_us: number;
}

export function latencyStats(samplesMs: number[]): LatencyStats {
  const s = [...samplesMs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  const us = (ms: number) => Math.round(ms * 1000 * 100) / 100;
  return {
    samples: s.length,
    min_us: us(s[0] ?? 0),
    median_us: us(q(0.5) ?? 0),
    p99_us: us(q(0.99) ?? 0),
    max_us: us(s[s.length - 1] ?? 0),
    avg_us: us(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)),
  };
}

/**
 * Bytes a WRITE or SEND may carry inline in its work request (the NIC copies them at post time,
 * with no local memory key to look up), asked for when the QP is created; what the provider
 * granted is read back and used when the message fits, as ib_write_lat does.
 */
export const INLINE_DATA = 64;

/** Send flags of a WRITE/SEND of `size` bytes on `ep`: signaled, and inline when it fits. */
function sendFlags(ep: Endpoint, size: number): number {
  return IBV_SEND.SIGNALED | (size <= ep.qp.maxInlineData ? IBV_SEND.INLINE : 0);
}

/**
 * One send WR per buffer slot (the two `size`-byte halves of `mr`), built once: a WRITE to the
 * same slot of the peer's buffer at `remote`, or a SEND without it.
 */
function slotSends(
  mr: MemoryRegion,
  size: number,
  flags: number,
  remote?: { addr: bigint; rkey: number },
): WorkRequest[] {
  return [0, 1].map((s) => {
    const wr = new WorkRequest("send").local(s, mr, s * size, size);
    return remote
      ? wr.op(IBV_WR.RDMA_WRITE, flags, remote.addr + BigInt(s * size), remote.rkey)
      : wr.op(IBV_WR.SEND, flags);
  });
}

/** Client options. */
export interface PingOptions {
  host: string;
  port: number;
  op: "write" | "read" | "send";
  size: number;
  count: number;
  timeoutMs: number;
  trace: Trace;
  cancel?: Canceller;
}

/** The client's result. */
export interface PingResult {
  traddr: string;
  trsvcid: number;
  op: string;
  size: number;
  count: number;
  verified: number;
  /** Round-trip times (write, send) or read completion times (read). */
  latency: LatencyStats;
  local_qp_num?: number;
  /** Whether the client's WRITEs/SENDs carried their payload inline (the QP granted enough). */
  inline: boolean;
  trace?: TraceStep[];
}

/** Runs the client side of a ping. */
export async function pingClient(o: PingOptions): Promise<PingResult> {
  if (o.size < 1 || o.size > 1 << 30) {
    throw new UsageError(`--size must be 1 … 2^30, not ${o.size}.`);
  }
  const trace = o.trace;
  const pat = pattern(o.size);
  let tx: MemoryRegion | undefined, rx: MemoryRegion | undefined;
  const setup: QpSetup = {
    caps: { maxSendWr: 4, maxRecvWr: 4, maxInlineData: o.op === "read" ? 0 : INLINE_DATA },
    cqe: 16,
    access: o.op === "write" ? IBV_ACCESS.REMOTE_WRITE : 0,
    prepare(ep) {
      // Least access: tx is only read by the local NIC (0); rx is written locally (read
      // responses, receives) and, for write, remotely.
      tx = o.op === "read" ? undefined : ep.pd.register(2 * o.size, 0);
      rx = ep.pd.register(
        2 * o.size,
        IBV_ACCESS.LOCAL_WRITE | (o.op === "write" ? IBV_ACCESS.REMOTE_WRITE : 0),
      );
      return encodeHello({
        op: o.op,
        addr: rx.addr,
        rkey: rx.rkey,
        len: 2 * o.size,
        count: o.count,
        size: o.size,
      });
    },
  };
  const conn = await connect({
    host: o.host,
    port: o.port,
    timeoutMs: o.timeoutMs,
    trace,
    cancel: o.cancel,
  }, setup);
  try {
    const peer = decodeHello(conn.peerData);
    if (!peer) {
      throw new FailureError("The server's reply is not an nvmeof ping reply.", {
        hint: "Is the peer 'nvmeof rdma ping --server'? For rdma-core's rping use --rping.",
      });
    }
    const samples = await runClientLoop(conn, o, peer, tx, rx!, pat);
    trace.add("call", "rdma_disconnect");
    const result: PingResult = {
      traddr: o.host,
      trsvcid: o.port,
      op: o.op,
      size: o.size,
      count: o.count,
      verified: samples.length,
      latency: latencyStats(samples),
      local_qp_num: conn.ep.qp.qpNum,
      inline: o.op !== "read" && o.size <= conn.ep.qp.maxInlineData,
    };
    conn.close();
    if (trace.enabled) result.trace = trace.steps;
    return result;
  } finally {
    conn.close();
  }
}

async function runClientLoop(
  conn: Connection,
  o: PingOptions,
  peer: Hello,
  tx: MemoryRegion | undefined,
  rx: MemoryRegion,
  pat: Uint8Array,
): Promise<number[]> {
  const ep = conn.ep;
  const size = o.size;
  const spin = new Spinner(conn, {
    timeoutMs: o.timeoutMs,
    cancel: o.cancel,
    when: "during the ping",
    total: o.count,
  });
  const samples: number[] = [];
  // A read sets up its WR each iteration (its source moves with shift(i)).
  const readWr = new WorkRequest("send");
  const rwr = [new WorkRequest("recv"), new WorkRequest("recv")];
  rwr.forEach((r, s) => r.local(s, rx, s * size, size));
  if (o.op === "read" && peer.len < size + 251) {
    throw new FailureError(`The server's buffer (${peer.len} bytes) is smaller than needed.`);
  }
  const flags = sendFlags(ep, size);
  const sends = o.op === "read"
    ? []
    : slotSends(tx!, size, flags, o.op === "write" ? peer : undefined);
  for (let i = 0; i < o.count; i++) {
    const slot = i & 1;
    const off = slot * size;
    const expect = pat.subarray(shift(i), shift(i) + size);
    const last = off + size - 1;
    rx.bytes[last] = expect[size - 1] ^ 0xff;
    if (tx) tx.bytes.set(expect, off);
    let wr: WorkRequest;
    if (o.op === "read") {
      wr = readWr.local(i, rx, off, size).op(
        IBV_WR.RDMA_READ,
        IBV_SEND.SIGNALED,
        peer.addr + BigInt(shift(i)),
        peer.rkey,
      );
    } else {
      wr = sends[slot];
      if (o.op === "send") ep.qp.postRecv(rwr[slot].address);
    }
    const sendsBefore = spin.sends;
    const recvsBefore = spin.recvs;
    const sent = () => spin.sends !== sendsBefore;
    spin.progress();
    const t0 = performance.now();
    ep.qp.postSend(wr.address);
    let wait: Promise<void> | undefined;
    if (o.op === "write") {
      // Spin on the echo's last byte.
      const bytes = rx.bytes;
      const want = expect[size - 1];
      wait = spin.until(() => Atomics.load(bytes, last) === want, "the echo", i, POLL_MEMORY);
    } else if (o.op === "read") {
      wait = spin.until(sent, "the read completion", i);
    } else {
      wait = spin.until(() => spin.recvs !== recvsBefore, "the echo", i);
    }
    if (wait) await wait;
    samples.push(performance.now() - t0);
    // Reap our own send completion before reusing the WR and checking the bytes.
    wait = spin.until(sent, "a send completion", i);
    if (wait) await wait;
    const got = rx.bytes.subarray(off, off + size);
    const bad = firstDifference(got, expect);
    if (bad >= 0) {
      throw new FailureError(
        `Payload mismatch in iteration ${i} (${o.op}, ${size} bytes) at byte ${bad}: ` +
          `expected 0x${expect[bad].toString(16)}, got 0x${got[bad].toString(16)}.`,
      );
    }
  }
  return samples;
}

/** Server options. */
export interface ServeOptions {
  timeoutMs: number;
  trace: boolean;
  cancel: Canceller;
  /** Stop after this many clients (0: until cancelled). */
  maxClients: number;
  note(line: string): void;
}

/** Serves ping and bw clients one after another until cancelled. */
export async function serve(listener: Listener, o: ServeOptions): Promise<ServedClient[]> {
  const served: ServedClient[] = [];
  for (let n = 1; o.maxClients === 0 || n <= o.maxClients; n++) {
    const trace = new Trace(o.trace);
    let hello: Hello | undefined;
    let mr: MemoryRegion | undefined;
    let conn: Connection | undefined;
    const entry: ServedClient = {
      client: n,
      op: "?",
      size: 0,
      count: 0,
      verified: 0,
      result: "ok",
    };
    try {
      conn = await accept(listener, { timeoutMs: o.timeoutMs, trace, cancel: o.cancel }, (pd) => {
        hello = decodeHello(pd);
        if (!hello) {
          entry.error = "not an nvmeof ping client (use --rping for rping)";
          return { reject: entry.error };
        }
        const h = hello;
        if (h.size < 1 || h.size > 1 << 30) {
          entry.error = `size ${h.size} out of range`;
          return { reject: entry.error };
        }
        entry.op = h.op;
        entry.size = h.size;
        entry.count = h.count;
        const len = h.op === "read" ? h.size + 251 : h.op === "bw" ? h.size : 2 * h.size;
        const access = h.op === "read"
          ? IBV_ACCESS.REMOTE_READ
          : h.op === "send"
          ? IBV_ACCESS.LOCAL_WRITE
          : IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE;
        return {
          setup: {
            caps: {
              maxSendWr: 4,
              maxRecvWr: 4,
              maxInlineData: h.op === "write" || h.op === "send" ? INLINE_DATA : 0,
            },
            cqe: 16,
            access: h.op === "read"
              ? IBV_ACCESS.REMOTE_READ
              : h.op === "send"
              ? 0
              : IBV_ACCESS.REMOTE_WRITE,
            prepare(ep) {
              mr = ep.pd.register(len, access);
              if (h.op === "read") mr.bytes.set(pattern(h.size).subarray(0, len));
              if (h.op === "write") {
                // Arm both slots before accepting: the first write may land before ESTABLISHED
                // is read here, and arming it later would erase it.
                const pat = pattern(h.size);
                mr.bytes[h.size - 1] = pat[shift(0) + h.size - 1] ^ 0xff;
                mr.bytes[2 * h.size - 1] = pat[shift(1) + h.size - 1] ^ 0xff;
              }
              if (h.op === "send") {
                for (let s = 0; s < 2; s++) {
                  ep.qp.postRecv(new WorkRequest("recv").local(s, mr, s * h.size, h.size).address);
                }
              }
              return encodeHello({ ...h, addr: mr.addr, rkey: mr.rkey, len });
            },
          },
        };
      });
      if (!conn) {
        entry.result = "rejected";
        o.note(`client ${n}: rejected: ${entry.error}`);
        served.push(entry);
        continue;
      }
      const h = hello!;
      o.note(`client ${n}: connected: ${h.op} ${h.size} B × ${h.count}`);
      if (h.op === "write" || h.op === "send") {
        entry.verified = await echoLoop(conn, h, mr!, o);
      }
      // write and send end with the last echo; read and bw are driven by the client alone,
      // so their end is the client's DISCONNECTED (its death also ends the connection).
      const gone = await conn.waitDisconnected(
        h.op === "write" || h.op === "send" ? o.timeoutMs : 2 ** 31 - 1,
        o.cancel,
      );
      if (!gone) throw new FailureError("The client did not disconnect in time.");
      if (h.op === "read" || h.op === "bw") entry.verified = h.count;
      o.note(`client ${n}: ${h.op} ${h.size} B × ${h.count}: ok`);
    } catch (err) {
      if ((err as Error).name === "CancelledError") {
        conn?.close();
        break;
      }
      entry.result = "failed";
      entry.error = (err as Error).message;
      // A client killed mid-run takes its QP and memory with it: the next WRITE can fail on them
      // (IBV_WC_REM_ACCESS_ERR) before its DISCONNECTED is read. Name the cause when it follows.
      if (
        err instanceof CompletionError && conn &&
        await conn.waitDisconnected(2000, o.cancel).catch(() => false)
      ) {
        entry.error = `The peer went away during the run: DISCONNECTED, after a work request ` +
          `failed on its torn-down QP or memory (${wcStatusName(err.status)}).`;
      }
      o.note(`client ${n}: failed: ${entry.error}`);
    } finally {
      conn?.close();
      if (trace.enabled) {
        for (const line of traceLines(trace.steps)) o.note(`client ${n}: ${line}`);
      }
    }
    served.push(entry);
  }
  return served;
}

/** The server half of write and send: wait for iteration i in slot i%2, echo it, check it. */
async function echoLoop(conn: Connection, h: Hello, mr: MemoryRegion, o: ServeOptions) {
  const ep = conn.ep;
  const size = h.size;
  const pat = pattern(size);
  const spin = new Spinner(conn, {
    timeoutMs: o.timeoutMs,
    cancel: o.cancel,
    when: "while serving",
    total: h.count,
  });
  const rwr = [0, 1].map((s) => new WorkRequest("recv").local(s, mr, s * size, size));
  const bytes = mr.bytes;
  const flags = sendFlags(ep, size);
  // Built once so the echo goes out as soon as the client's data is seen.
  const echoes = slotSends(mr, size, flags, h.op === "write" ? h : undefined);
  let verified = 0;
  for (let i = 0; i < h.count; i++) {
    const slot = i & 1;
    const off = slot * size;
    const expect = pat.subarray(shift(i), shift(i) + size);
    spin.progress();
    let wait: Promise<void> | undefined;
    if (h.op === "write") {
      // Spin on the write's last byte; the CQ (errors, echo completions) every 16 spins.
      const want = expect[size - 1];
      const landed = () => Atomics.load(bytes, off + size - 1) === want;
      wait = spin.until(landed, "the next write", i, POLL_MEMORY);
      if (wait) await wait;
      // The other slot's echo (i-1) has reached the client, since the client wrote i: re-arm it
      // before the echo of i lets the client write i+1 there.
      if (i + 1 < h.count) {
        bytes[(1 - slot) * size + size - 1] = pat[shift(i + 1) + size - 1] ^ 0xff;
      }
      ep.qp.postSend(echoes[slot].address);
    } else {
      // Completions of iteration i may have been reaped already while waiting for i-1's echo.
      wait = spin.until(() => spin.recvs > i, "the next send", i);
      if (wait) await wait;
      ep.qp.postSend(echoes[slot].address);
      ep.qp.postRecv(rwr[slot].address);
    }
    const got = bytes.subarray(off, off + size);
    const bad = firstDifference(got, expect);
    if (bad >= 0) {
      throw new FailureError(`Payload mismatch from the client in iteration ${i} at byte ${bad}.`);
    }
    verified++;
    const sends = spin.sends;
    wait = spin.until(() => spin.sends !== sends || spin.sends >= i + 1, "an echo completion", i);
    if (wait) await wait;
  }
  return verified;
}
