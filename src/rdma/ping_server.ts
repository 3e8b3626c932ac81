/**
 * The server of `rdma ping` and `rdma bw` (the protocol in src/rdma/ping_protocol.ts): answers
 * clients one after another, registering for each only the memory and access its operation
 * needs, echoing write and send iterations and checking every one.
 */
import { IBV_ACCESS, wcStatusName } from "../../ffi/enums.ts";
import { FailureError } from "../errors.ts";
import {
  accept,
  type Connection,
  type Decision,
  type Listener,
  Trace,
  traceLines,
} from "./connection.ts";
import { CompletionError, firstDifference } from "./completion.ts";
import * as wire from "./ping_protocol.ts";
import { type ServedClient, serveInTurn, type Turn } from "./serve.ts";
import { POLL_MEMORY, Spinner } from "./spin.ts";
import type { MemoryRegion } from "./verbs.ts";
import { WorkRequest } from "./work_request.ts";
import type { Canceller } from "../wait.ts";

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
export function serve(listener: Listener, o: ServeOptions): Promise<ServedClient[]> {
  return serveInTurn(o, (entry) => pingTurn(listener, entry, o));
}

/** What the server set up for a client whose hello it accepted. */
export interface Accepted {
  hello: wire.Hello;
  mr: MemoryRegion;
}

/** One client's turn: accept its hello, serve its operation, explain a failure. */
function pingTurn(listener: Listener, entry: ServedClient, o: ServeOptions): Turn {
  const n = entry.client;
  const trace = new Trace(o.trace);
  let conn: Connection | undefined;
  return {
    async run() {
      let accepted: Accepted | undefined;
      conn = await accept(
        listener,
        { timeoutMs: o.timeoutMs, trace, cancel: o.cancel },
        (pd) => answerHello(pd, entry, (a) => accepted = a),
      );
      if (!conn) {
        entry.result = "rejected";
        o.note(`client ${n}: rejected: ${entry.error}`);
        return;
      }
      const { hello: h, mr } = accepted!;
      o.note(`client ${n}: connected: ${h.op} ${h.size} B × ${h.count}`);
      if (h.op === "write" || h.op === "send") {
        entry.verified = await echoLoop(conn, h, mr, o);
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
    },
    async explain(err) {
      // A client killed mid-run takes its QP and memory with it: the next WRITE can fail on them
      // (IBV_WC_REM_ACCESS_ERR) before its DISCONNECTED is read. Name the cause when it follows.
      if (
        err instanceof CompletionError && conn &&
        await conn.waitDisconnected(2000, o.cancel).catch(() => false)
      ) {
        return `The peer went away during the run: DISCONNECTED, after a work request ` +
          `failed on its torn-down QP or memory (${wcStatusName(err.status)}).`;
      }
      return (err as Error).message;
    },
    end() {
      conn?.close();
      if (trace.enabled) {
        for (const line of traceLines(trace.steps)) o.note(`client ${n}: ${line}`);
      }
    },
  };
}

/**
 * The server's answer to a client's private data: a reject (noted in `entry`) when it is not a
 * ping hello or asks for an impossible size, else the QP and memory its operation needs, with
 * `onAccept` told what was registered.
 */
function answerHello(
  privateData: Uint8Array,
  entry: ServedClient,
  onAccept: (a: Accepted) => void,
): Decision {
  const h = wire.decodeHello(privateData);
  if (!h) {
    entry.error = "not an nvmeof ping client (use --rping for rping)";
    return { reject: entry.error };
  }
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
        maxSendWr: wire.SEND_QUEUE,
        maxRecvWr: 4,
        maxInlineData: h.op === "write" || h.op === "send" ? wire.INLINE_DATA : 0,
      },
      cqe: 16,
      access: h.op === "read"
        ? IBV_ACCESS.REMOTE_READ
        : h.op === "send"
        ? 0
        : IBV_ACCESS.REMOTE_WRITE,
      prepare(ep) {
        const mr = ep.pd.register(len, access);
        if (h.op === "read") mr.bytes.set(wire.pattern(h.size).subarray(0, len));
        if (h.op === "write") {
          // Arm both slots before accepting: the first write may land before ESTABLISHED
          // is read here, and arming it later would erase it.
          const pat = wire.pattern(h.size);
          mr.bytes[h.size - 1] = pat[wire.shift(0) + h.size - 1] ^ 0xff;
          mr.bytes[2 * h.size - 1] = pat[wire.shift(1) + h.size - 1] ^ 0xff;
        }
        if (h.op === "send") {
          for (let s = 0; s < 2; s++) {
            ep.qp.postRecv(new WorkRequest("recv").local(s, mr, s * h.size, h.size).address);
          }
        }
        onAccept({ hello: h, mr });
        return wire.encodeHello({ ...h, addr: mr.addr, rkey: mr.rkey, len });
      },
    },
  };
}

/** The server half of write and send: wait for iteration i in slot i%2, echo it, check it. */
async function echoLoop(conn: Connection, h: wire.Hello, mr: MemoryRegion, o: ServeOptions) {
  const ep = conn.ep;
  const size = h.size;
  const total = h.count;
  const pat = wire.pattern(size);
  const expected = wire.payloads(size);
  const spin = new Spinner(conn, {
    timeoutMs: o.timeoutMs,
    cancel: o.cancel,
    when: "while serving",
    total,
  });
  const rwr = [0, 1].map((s) => new WorkRequest("recv").local(s, mr, s * size, size));
  const bytes = mr.bytes;
  const got = [bytes.subarray(0, size), bytes.subarray(size, 2 * size)];
  const inline = wire.isInline(ep, size);
  // Built once so the echo goes out as soon as the client's data is seen.
  const echoes = wire.slotSends(ep, mr, size, h.op === "write" ? h : undefined);
  // What ends each wait, and the state it reads (set per iteration: no closure per iteration).
  let last = 0, want = 0, received = 0;
  const landed = () => Atomics.load(bytes, last) === want;
  // Completions of iteration i may have been reaped already while waiting for i-1's echo.
  const arrived = () => spin.recvs > received;
  let wait: Promise<void> | undefined;
  let verified = 0;
  for (let i = 0; i < total; i++) {
    // The event loop's turns come here, between iterations (a long wait still takes them too).
    wait = spin.between();
    if (wait) await wait;
    const slot = i & 1;
    const from = wire.shift(i);
    const signal = wire.signalled(inline, i, total);
    if (signal) {
      // Before the wait for the client, not between its data and the echo.
      wait = spin.beforeSignalled(i);
      if (wait) await wait;
    }
    const echo = echoes[signal ? 1 : 0][slot].address;
    spin.progress();
    if (h.op === "write") {
      // Spin on the write's last byte; the CQ (errors, echo completions) every 16 spins.
      last = slot * size + size - 1;
      want = pat[from + size - 1];
      // The other slot's echo (i-1) has reached the client once the client wrote i: its last
      // byte is re-armed for i+1 then, before the echo of i lets the client write i+1 there.
      const rearm = (1 - slot) * size + size - 1;
      const armed = pat[wire.shift(i + 1) + size - 1] ^ 0xff;
      wait = spin.until(landed, "the next write", i, POLL_MEMORY);
      if (wait) await wait;
      if (i + 1 < total) bytes[rearm] = armed;
      ep.qp.postSend(echo);
    } else {
      received = i;
      wait = spin.until(arrived, "the next send", i);
      if (wait) await wait;
      ep.qp.postSend(echo);
      ep.qp.postRecv(rwr[slot].address);
    }
    const bad = firstDifference(got[slot], expected[from]);
    if (bad >= 0) {
      throw new FailureError(`Payload mismatch from the client in iteration ${i} at byte ${bad}.`);
    }
    verified++;
  }
  // The last echo is signalled: its completion confirms the run.
  wait = spin.drain(total - 1);
  if (wait) await wait;
  return verified;
}
