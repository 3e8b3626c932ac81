/**
 * `rdma ping`, the client: a ping-pong of RDMA WRITE, READ or SEND on registered buffers (the
 * protocol in src/rdma/ping_protocol.ts), every iteration's payload verified and timed.
 */
import { IBV_ACCESS, IBV_SEND, IBV_WR } from "../../ffi/enums.ts";
import { FailureError, UsageError } from "../errors.ts";
import {
  connect,
  type Connection,
  type QpSetup,
  type Trace,
  type TraceStep,
} from "./connection.ts";
import { firstDifference } from "./completion.ts";
import { summarizeLatency } from "./latency.ts";
import {
  decodeHello,
  encodeHello,
  type Hello,
  INLINE_DATA,
  isInline,
  pattern,
  payloads,
  SEND_QUEUE,
  shift,
  signalled,
  slotSends,
} from "./ping_protocol.ts";
import { POLL_MEMORY, REAP_EVERY_SPIN, Spinner } from "./spin.ts";
import type { MemoryRegion } from "./verbs.ts";
import { WorkRequest } from "./work_request.ts";
import type { Canceller } from "../wait.ts";

/** Latency figures in microseconds. */
export interface LatencyStats {
  samples: number;
  min_us: number;
  median_us: number;
  p99_us: number;
  max_us: number;
  avg_us: number;
}

/** The figures `rdma ping` prints: µs with two decimals, from samples in ms. */
export function latencyStats(samplesMs: ArrayLike<number>): LatencyStats {
  const s = summarizeLatency(Float64Array.from(samplesMs));
  const us = (ms: number) => Math.round(ms * 1000 * 100) / 100;
  return {
    samples: samplesMs.length,
    min_us: us(s.min),
    median_us: us(s.median),
    p99_us: us(s.p99),
    max_us: us(s.max),
    avg_us: us(s.mean),
  };
}

/** Client options. */
export interface PingOptions {
  host: string;
  port: number;
  op: "write" | "read" | "send";
  size: number;
  count: number;
  /**
   * Untimed iterations first (default 0): the runtime compiles the loop's code on its own worker
   * threads while it runs it the first times, and under emulation each compile job takes a
   * spinning thread's CPU for milliseconds (docs/benchmarks.md has the measurements).
   */
  warmup?: number;
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
  /** Untimed iterations before the `count` timed ones (their payloads are verified too). */
  warmup: number;
  verified: number;
  /** Round-trip times (write, send) or read completion times (read). */
  latency: LatencyStats;
  local_qp_num?: number;
  /** Whether the client's WRITEs/SENDs carried their payload inline (the QP granted enough). */
  inline: boolean;
  trace?: TraceStep[];
}

/** The buffers a ping client's QP setup registers (tx: none for read). */
interface ClientBuffers {
  tx?: MemoryRegion;
  rx?: MemoryRegion;
}

/**
 * A ping client's QP setup, for `count` iterations (warm-up and timed) of `op` on `size` bytes:
 * its prepare registers the two-slot buffers into `buffers` and returns the hello.
 */
function clientSetup(
  op: PingOptions["op"],
  size: number,
  count: number,
  buffers: ClientBuffers,
): QpSetup {
  return {
    caps: { maxSendWr: SEND_QUEUE, maxRecvWr: 4, maxInlineData: op === "read" ? 0 : INLINE_DATA },
    cqe: 16,
    access: op === "write" ? IBV_ACCESS.REMOTE_WRITE : 0,
    prepare(ep) {
      // Least access: tx is only read by the local NIC (0); rx is written locally (read
      // responses, receives) and, for write, remotely.
      buffers.tx = op === "read" ? undefined : ep.pd.register(2 * size, 0);
      const rx = buffers.rx = ep.pd.register(
        2 * size,
        IBV_ACCESS.LOCAL_WRITE | (op === "write" ? IBV_ACCESS.REMOTE_WRITE : 0),
      );
      return encodeHello({ op, addr: rx.addr, rkey: rx.rkey, len: 2 * size, count, size });
    },
  };
}

/** Runs the client side of a ping. */
export async function pingClient(o: PingOptions): Promise<PingResult> {
  if (o.size < 1 || o.size > 1 << 30) {
    throw new UsageError(`--size must be 1 … 2^30, not ${o.size}.`);
  }
  const trace = o.trace;
  const warmup = o.warmup ?? 0;
  const buffers: ClientBuffers = {};
  const conn = await connect({
    host: o.host,
    port: o.port,
    timeoutMs: o.timeoutMs,
    trace,
    cancel: o.cancel,
  }, clientSetup(o.op, o.size, warmup + o.count, buffers));
  try {
    const peer = decodeHello(conn.peerData);
    if (!peer) {
      throw new FailureError("The server's reply is not an nvmeof ping reply.", {
        hint: "Is the peer 'nvmeof rdma ping --server'? For rdma-core's rping use --rping.",
      });
    }
    const samples = await runClientLoop(conn, o, warmup, peer, buffers.tx, buffers.rx!);
    trace.add("call", "rdma_disconnect");
    const result: PingResult = {
      traddr: o.host,
      trsvcid: o.port,
      op: o.op,
      size: o.size,
      count: o.count,
      warmup,
      verified: samples.length,
      latency: latencyStats(samples),
      local_qp_num: conn.ep.qp.qpNum,
      inline: o.op !== "read" && isInline(conn.ep, o.size),
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
  warmup: number,
  peer: Hello,
  tx: MemoryRegion | undefined,
  rx: MemoryRegion,
): Promise<Float64Array> {
  const ep = conn.ep;
  const op = o.op;
  const size = o.size;
  const total = warmup + o.count;
  const spin = new Spinner(conn, {
    timeoutMs: o.timeoutMs,
    cancel: o.cancel,
    when: "during the ping",
    total,
  });
  const samples = new Float64Array(o.count);
  // Everything the loop touches is made here: an iteration allocates nothing (no garbage for the
  // collector's threads to take a CPU from the spinning loops for, later).
  const expected = payloads(size);
  const pat = pattern(size);
  const got = [rx.bytes.subarray(0, size), rx.bytes.subarray(size, 2 * size)];
  const rwr = [new WorkRequest("recv"), new WorkRequest("recv")];
  rwr.forEach((r, s) => r.local(s, rx, s * size, size));
  const reading = op === "read";
  if (reading && peer.len < size + 251) {
    throw new FailureError(`The server's buffer (${peer.len} bytes) is smaller than needed.`);
  }
  // A read's WR per slot is built once; an iteration only moves its source, shift(i) bytes into
  // the server's pattern, to an address made here (no BigInt made per iteration).
  const readWrs = reading
    ? [0, 1].map((s) =>
      new WorkRequest("send").local(s, rx, s * size, size)
        .op(IBV_WR.RDMA_READ, IBV_SEND.SIGNALED, peer.addr, peer.rkey)
    )
    : [];
  const readFrom = reading ? expected.map((_, from) => peer.addr + BigInt(from)) : [];
  const inline = !reading && isInline(ep, size);
  const sends = reading ? [[], []] : slotSends(ep, tx!, size, op === "write" ? peer : undefined);
  // What ends the timed wait: write spins on the echo's last byte, read on its completion, send
  // on the echo's receive; the state they read is set per iteration.
  const bytes = rx.bytes;
  let last = 0, want = 0, sendsBefore = 0, recvsBefore = 0;
  const answered = op === "write"
    ? () => Atomics.load(bytes, last) === want
    : reading
    ? () => spin.sends !== sendsBefore
    : () => spin.recvs !== recvsBefore;
  const what = reading ? "the read completion" : "the echo";
  const pace = op === "write" ? POLL_MEMORY : REAP_EVERY_SPIN;
  let wait: Promise<void> | undefined;
  for (let i = 0; i < total; i++) {
    // The event loop's turns come here, between round trips, not inside a timed one.
    wait = spin.between();
    if (wait) await wait;
    const slot = i & 1;
    const off = slot * size;
    const from = shift(i);
    const expect = expected[from];
    last = off + size - 1;
    want = pat[from + size - 1];
    bytes[last] = want ^ 0xff;
    let wr: WorkRequest;
    if (reading) {
      wr = readWrs[slot];
      wr.setRemote(readFrom[from]);
      spin.signalled++;
    } else {
      const signal = signalled(inline, i, total);
      if (signal) {
        // The completions signalled before this one first: the send queue stays bounded and a
        // non-inline slot is rewritten (below) only after the NIC read it.
        wait = spin.beforeSignalled(i);
        if (wait) await wait;
      }
      if (tx) tx.bytes.set(expect, off);
      wr = sends[signal ? 1 : 0][slot];
      if (op === "send") ep.qp.postRecv(rwr[slot].address);
    }
    sendsBefore = spin.sends;
    recvsBefore = spin.recvs;
    spin.progress();
    const t0 = performance.now();
    ep.qp.postSend(wr.address);
    wait = spin.until(answered, what, i, pace);
    if (wait) await wait;
    // A warm-up iteration runs the same code as a timed one: its time goes to slot 0, which
    // timed iteration 0 overwrites. A path first taken at the first timed iteration had the
    // runtime deoptimize this function and compile it again there: an iteration of 11-13 ms
    // under emulation (docs/benchmarks.md).
    const ms = performance.now() - t0;
    const k = i - warmup;
    samples[k < 0 ? 0 : k] = ms;
    const bad = firstDifference(got[slot], expect);
    if (bad >= 0) {
      throw new FailureError(
        `Payload mismatch in iteration ${i} (${op}, ${size} bytes) at byte ${bad}: ` +
          `expected 0x${expect[bad].toString(16)}, got 0x${got[slot][bad].toString(16)}.`,
      );
    }
  }
  // The last send is signalled: its completion confirms the run before the disconnect.
  wait = spin.drain(total - 1);
  if (wait) await wait;
  return samples;
}
