/**
 * The wire protocol of `rdma ping` and `rdma bw`, and what both sides build from it.
 *
 * Private data (little-endian, 32 bytes), client → server in the REQ and server → client in the
 * REP: magic "NVMR" u32 @0, version u8 @4, op u8 @5, addr u64 @8, rkey u32 @16, len u32 @20,
 * count u32 @24, size u32 @28.
 *
 * write: the client RDMA-WRITEs iteration i into the server's slot i%2; the server sees the last
 *   byte change (memory polling, like ib_write_lat), echoes the slot into the client's slot i%2
 *   with its own RDMA WRITE, then checks it. The client times the round trip and checks the echo.
 * read: the client RDMA-READs `size` bytes at a per-iteration offset of the server's pattern.
 * send: the client SENDs; the server receives into slot i%2 and SENDs the same bytes back.
 * bw: the client streams RDMA WRITEs into the server's one buffer (src/rdma/bw.ts).
 */
import { IBV_SEND, IBV_WR } from "../../ffi/enums.ts";
import type { Endpoint } from "./connection.ts";
import type { MemoryRegion } from "./verbs.ts";
import { WorkRequest } from "./work_request.ts";

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

/** How many different payloads a run cycles through. */
const SHIFTS = 251;

/** Where iteration i's payload starts in the pattern. */
export function shift(i: number): number {
  return i % SHIFTS;
}

/**
 * Bytes a WRITE or SEND may carry inline in its work request (the NIC copies them at post time,
 * with no local memory key to look up), asked for when the QP is created; what the provider
 * granted is read back and used when the message fits, as ib_write_lat does.
 */
export const INLINE_DATA = 64;

/**
 * How often an inline WRITE/SEND asks for a completion. Reusing its buffer needs none (the payload
 * is copied at post time), and each completion is work for the provider on both sides of every
 * round trip (under emulation, CPU taken from the spinning loops); ib_write_lat signals every post
 * and spins on each. A failed work request completes whether signalled or not, so errors are
 * still seen.
 */
export const SIGNAL_EVERY = 16;
/**
 * Send queue depth of a ping QP: a signalled post first waits for the completions of those
 * before it, so at most 2 × SIGNAL_EVERY - 1 WRs are ever outstanding.
 */
export const SEND_QUEUE = 2 * SIGNAL_EVERY;

/** Whether a WRITE/SEND of `size` bytes on `ep` carries its payload inline. */
export function isInline(ep: Endpoint, size: number): boolean {
  return size <= ep.qp.maxInlineData;
}

/**
 * Whether iteration i of `total` posts a signalled WRITE/SEND: every one when not inline (its
 * buffer slot is rewritten only once its completion is reaped), else every SIGNAL_EVERY-th and
 * the last (the run ends on a confirmed echo).
 */
export function signalled(inline: boolean, i: number, total: number): boolean {
  return !inline || i % SIGNAL_EVERY === SIGNAL_EVERY - 1 || i === total - 1;
}

/**
 * The send WRs of a WRITE/SEND ping, built once: `[unsignalled, signalled]`, each one per buffer
 * slot (the two `size`-byte halves of `mr`), inline when the payload fits; a WRITE goes to the
 * same slot of the peer's buffer at `remote`, a SEND without it.
 */
export function slotSends(
  ep: Endpoint,
  mr: MemoryRegion,
  size: number,
  remote?: { addr: bigint; rkey: number },
): [WorkRequest[], WorkRequest[]] {
  const inline = isInline(ep, size) ? IBV_SEND.INLINE : 0;
  const slots = (flags: number) =>
    [0, 1].map((s) => {
      const wr = new WorkRequest("send").local(s, mr, s * size, size);
      return remote
        ? wr.op(IBV_WR.RDMA_WRITE, flags, remote.addr + BigInt(s * size), remote.rkey)
        : wr.op(IBV_WR.SEND, flags);
    });
  return [slots(inline), slots(inline | IBV_SEND.SIGNALED)];
}

/** The `size`-byte payload of every shift (shift(i) indexes it): views, made once per run. */
export function payloads(size: number): Uint8Array[] {
  const pat = pattern(size);
  return Array.from({ length: SHIFTS }, (_, s) => pat.subarray(s, s + size));
}
