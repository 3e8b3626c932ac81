/**
 * The I/O engine of `nvmeof bench`: per I/O queue one registered buffer of qd × bs (slot i owns
 * bytes i·bs … (i+1)·bs) reused for the whole run, qd commands kept in flight, the target moving
 * data straight into (reads) or out of (writes) that buffer. Also the LBA pattern that `verify`
 * and `write` lay down.
 */
import { IBV_ACCESS } from "../../ffi/enums.ts";
import { FailureError } from "../errors.ts";
import { nextTurn } from "../next_turn.ts";
import { waitAnyReadable } from "../wait.ts";
import type { MemoryRegion } from "../rdma/verbs.ts";
import { IO, type KeyedSgl, rwSqe } from "./capsule.ts";
import { NvmeQueue } from "./queue.ts";
import { NvmeStatusError } from "../fabrics/nvme_status.ts";

import { type RwMode, writes } from "./bench_options.ts";

/**
 * The least access the data buffer needs: reads are RDMA-WRITTEN into it by the target
 * (REMOTE_WRITE, which verbs pairs with LOCAL_WRITE), writes are RDMA-READ from it (REMOTE_READ).
 */
export function bufferAccess(rw: RwMode): number {
  const read = IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE;
  if (rw === "verify") return read | IBV_ACCESS.REMOTE_READ;
  return writes(rw) ? IBV_ACCESS.REMOTE_READ : read;
}

/** High byte of every pattern word's upper half: zeroed or unwritten blocks never match. */
const MAGIC = 0x4e000000;

/** The low 32 bits of block `l`'s pattern word at offset 0: l·2^16 (mod 2^32). */
function patternLow(l: number): number {
  return (l % 65536) * 65536;
}

/** The high 32 bits of block `l`'s pattern words: the magic byte and l·2^16's upper bits. */
function patternHigh(l: number): number {
  return (MAGIC | (Math.floor(l / 65536) & 0xffffff)) >>> 0;
}

/**
 * Fills `buf` (a whole number of `lbaSize` blocks) with the pattern of the blocks starting at
 * `lba`: the 8-byte little-endian word at byte offset o of block l is
 * (0x4e << 56) + l·2^16 + o, so every word names its block and its place in it (LBAs < 2^40).
 */
export function fillPattern(buf: Uint8Array, lba: number, lbaSize: number): void {
  const w = new Uint32Array(buf.buffer, buf.byteOffset, buf.length >>> 2);
  const n = lbaSize >>> 2;
  for (let b = 0; b < buf.length / lbaSize; b++) fillBlock(w, b * n, n, lba + b);
}

/** The first block of `buf` (blocks from `lba`) that does not hold its pattern, or -1. */
export function checkPattern(buf: Uint8Array, lba: number, lbaSize: number): number {
  const w = new Uint32Array(buf.buffer, buf.byteOffset, buf.length >>> 2);
  const n = lbaSize >>> 2;
  for (let b = 0; b < buf.length / lbaSize; b++) {
    if (!holdsBlock(w, b * n, n, lba + b)) return lba + b;
  }
  return -1;
}

/** Writes block `l`'s pattern into its `n` 32-bit words, from `w[at]` (no view per block). */
function fillBlock(w: Uint32Array, at: number, n: number, l: number): void {
  const lo = patternLow(l);
  const hi = patternHigh(l);
  for (let i = 0; i < n; i += 2) {
    w[at + i] = lo + i * 4;
    w[at + i + 1] = hi;
  }
}

/** Whether the `n` 32-bit words from `w[at]` hold block `l`'s pattern. */
function holdsBlock(w: Uint32Array, at: number, n: number, l: number): boolean {
  const lo = patternLow(l);
  const hi = patternHigh(l);
  for (let i = 0; i < n; i += 2) if (w[at + i] !== lo + i * 4 || w[at + i + 1] !== hi) return false;
  return true;
}

/** A growable list of latencies (µs). */
export class Samples {
  #a = new Float64Array(4096);
  length = 0;
  push(v: number): void {
    if (this.length === this.#a.length) {
      const b = new Float64Array(this.#a.length * 2);
      b.set(this.#a);
      this.#a = b;
    }
    this.#a[this.length++] = v;
  }
  values(): Float64Array {
    return this.#a.subarray(0, this.length);
  }
  /** Adds every sample of `other`. */
  append(other: Samples): void {
    for (const v of other.values()) this.push(v);
  }
}

/** xorshift32: a fast, seedable source of random block numbers. */
export function xorshift(seed: number): () => number {
  let x = (seed >>> 0) || 0x9e3779b9;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** Where the I/Os of one pass go and what they do. */
export interface Pass {
  op: "read" | "write";
  random: boolean;
  /** Check read data against the pattern (verify's read pass). Writes always carry it. */
  check: boolean;
}

export interface Geometry {
  nsid: number;
  lbaSize: number;
  /** Blocks of the namespace. */
  nsze: number;
  bs: number;
  qd: number;
}

export interface PassResult {
  ios: number;
  bytes: number;
  seconds: number;
  latencies: Samples;
  /** First LBA whose data did not match (verify), or undefined. */
  mismatch?: number;
}

/**
 * The figures of one pass over all queues, from each queue's own result: sums, every latency,
 * and the lowest LBA any queue found wrong (verify).
 */
export function mergeResults(parts: readonly PassResult[], seconds: number): PassResult {
  const all: PassResult = { ios: 0, bytes: 0, seconds, latencies: new Samples() };
  for (const r of parts) {
    all.ios += r.ios;
    all.bytes += r.bytes;
    all.latencies.append(r.latencies);
    if (r.mismatch !== undefined) all.mismatch = Math.min(all.mismatch ?? Infinity, r.mismatch);
  }
  return all;
}

/** How `drive` waits for completions. */
export interface DriveOptions {
  /** No completion on a queue with I/O in flight for this long is an error. */
  timeoutMs: number;
  /**
   * Busy-poll the CQs for this long after the last completion before sleeping on their
   * completion channels (0: sleep as soon as a poll finds nothing).
   */
  pollMs: number;
}

/** How often the loop lets the event loop run (Keep Alive timer, signals) and checks health. */
const YIELD_MS = 5;

/**
 * Runs started workers from one loop until every queue has drained: polls each CQ, every
 * YIELD_MS checks for a dropped queue or a queue without progress for `timeoutMs` (throws) and
 * yields one event-loop turn, and after `pollMs` without any completion sleeps on the queues'
 * completion channels. Throws the first failed command once all queues have drained.
 */
export async function drive(workers: readonly IoWorker[], o: DriveOptions): Promise<void> {
  let spins = 0;
  let lastTurn = performance.now();
  for (;;) {
    let inflight = 0;
    for (const w of workers) {
      if (w.inflight > 0) w.queue.reap();
      inflight += w.inflight;
    }
    if (inflight === 0) break;
    if ((++spins & 31) !== 0) continue;
    const now = performance.now();
    let last = 0;
    for (const w of workers) if (w.inflight > 0 && w.lastDone > last) last = w.lastDone;
    if (now - lastTurn >= YIELD_MS) {
      for (const w of workers) if (w.inflight > 0) w.checkHealth(now, o.timeoutMs);
      await nextTurn();
      lastTurn = performance.now();
      continue;
    }
    if (now - last < o.pollMs) continue;
    // Idle: arm every busy CQ, poll once more (a completion may have raced the arming), sleep.
    const busy = workers.filter((w) => w.inflight > 0);
    for (const w of busy) w.queue.conn.ep.cq.requestNotify();
    let got = 0;
    for (const w of busy) got += w.queue.reap();
    if (got > 0) continue;
    await waitAnyReadable(busy.map((w) => w.queue.conn.ep.cq.channelFd), YIELD_MS);
    for (const w of busy) w.queue.conn.ep.cq.takeEvent();
  }
  for (const w of workers) if (w.failure) throw w.failure;
}

/** One I/O queue with its data buffer; `drive` runs any number of them from one loop. */
export class IoWorker implements Disposable {
  readonly queue: NvmeQueue;
  readonly mr: MemoryRegion;
  readonly geometry: Geometry;
  readonly #buf: Uint8Array[];
  readonly #sgl: KeyedSgl[];
  readonly #lba: Float64Array;
  /** Commands in flight in the current pass. */
  inflight = 0;
  /** The first failed command of the current pass. */
  failure: Error | undefined;
  /** performance.now() of the last completion (or of the pass start). */
  lastDone = 0;

  constructor(q: NvmeQueue, g: Geometry, access: number) {
    this.queue = q;
    this.geometry = g;
    this.mr = q.register(g.qd * g.bs, access);
    // Per slot, made once: its bs-sized chunk of the buffer and the keyed SGL pointing at it.
    this.#buf = Array.from(
      { length: g.qd },
      (_, c) => this.mr.bytes.subarray(c * g.bs, (c + 1) * g.bs),
    );
    this.#sgl = Array.from({ length: g.qd }, (_, c) => NvmeQueue.sgl(this.mr, c * g.bs, g.bs));
    this.#lba = new Float64Array(g.qd);
  }

  /**
   * Starts a pass on this queue: issues up to qd I/Os (`next()` gives the bs-sized chunk index,
   * or -1 when done) and keeps qd in flight from each completion until `next()` or `stop()` says
   * no more; records each latency (from the post of the command to the poll that found its
   * completion) into `out`.
   */
  start(pass: Pass, next: () => number, out: PassResult, stop: () => boolean): void {
    const { queue: q, geometry: g } = this;
    if (g.bs % g.lbaSize !== 0) throw new RangeError("bs must be a multiple of the LBA size");
    const nlb = g.bs / g.lbaSize;
    const opcode = pass.op === "read" ? IO.READ : IO.WRITE;
    let done = false;
    this.inflight = 0;
    this.failure = undefined;
    this.lastDone = performance.now();
    const issue = (cid: number): boolean => {
      if (done || stop()) return false;
      const chunk = next();
      if (chunk < 0) {
        done = true;
        return false;
      }
      const lba = chunk * nlb;
      if (pass.op === "write") fillPattern(this.#buf[cid], lba, g.lbaSize);
      else if (pass.check) this.#buf[cid].fill(0xff);
      rwSqe(q.sqes[cid], opcode, cid, g.nsid, lba, nlb, this.#sgl[cid]);
      this.#lba[cid] = lba;
      q.queue(cid); // posted together at the end of this reap, or below
      this.inflight++;
      return true;
    };
    q.onDone = (cid, status) => {
      this.inflight--;
      const now = performance.now();
      this.lastDone = now;
      if (status !== 0) {
        this.failure ??= new NvmeStatusError(
          `${pass.op === "read" ? "Read" : "Write"} of LBA ${this.#lba[cid]}`,
          status,
        );
        return;
      }
      out.latencies.push((now - q.postedAt[cid]) * 1000);
      out.ios++;
      out.bytes += g.bs;
      if (pass.check && out.mismatch === undefined) {
        const bad = checkPattern(
          this.#buf[cid],
          this.#lba[cid],
          g.lbaSize,
        );
        if (bad >= 0) out.mismatch = bad;
      }
      if (!this.failure) issue(cid);
    };
    for (let cid = 0; cid < g.qd; cid++) if (!issue(cid)) break;
    q.flush();
  }

  /** Throws when the target dropped this queue or it made no progress for `timeoutMs`. */
  checkHealth(now: number, timeoutMs: number): void {
    const q = this.queue;
    const end = q.conn.pollEnd();
    if (end) {
      throw new FailureError(`The target dropped I/O queue ${q.qid} during the run: ${end.name}.`);
    }
    if (now - this.lastDone > timeoutMs) {
      throw new FailureError(
        `${this.inflight} I/Os got no answer within ${timeoutMs} ms on queue ${q.qid}.`,
        { hint: "The target stopped answering; check that it is still up (--timeout MS)." },
      );
    }
  }

  /** Ends the pass on this queue (after drain or failure). */
  finish(): void {
    this.queue.onDone = undefined;
  }

  close(): void {
    this.mr.close();
    this.queue.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
