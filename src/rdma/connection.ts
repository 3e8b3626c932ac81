/**
 * RC connections over RDMA-CM with the queue pair driven by hand (rdma_init_qp_attr +
 * ibv_modify_qp, as rping -q does), so every transition RESET → INIT → RTR → RTS can be read
 * back and traced. A Connection owns everything made for it and releases it in reverse order;
 * a setup that fails midway unwinds through a DisposableStack.
 */
import {
  IB_CM_REJ,
  IB_CM_REJ_REASON,
  IBV_QP_ATTR_MASK as MASK,
  IBV_QPS,
  qpStateName,
  RDMA_CM_EVENT_TYPE as E,
} from "../../ffi/enums.ts";
import { IBV_QP_ATTR as QA } from "../../ffi/structs.ts";
import { errnoName, FailureError } from "../errors.ts";
import { hostPort, sockaddr } from "../net/address.ts";
import { type CmEvent, CmId, type ConnParam, EventChannel, samePointer } from "./cm.ts";
import { CompletionQueue, ProtectionDomain, type QpCaps, type QpInfo, QueuePair } from "./verbs.ts";
import type { Canceller } from "../wait.ts";

/** One traced step: a CM event, a QP transition read back with ibv_query_qp, or a call. */
export interface TraceStep {
  /** Microseconds since the trace began. */
  t_us: number;
  kind: "cm_event" | "qp_state" | "call";
  name: string;
  detail?: Record<string, unknown>;
}

/** Collects trace steps when enabled (free otherwise). */
export class Trace {
  readonly enabled: boolean;
  readonly steps: TraceStep[] = [];
  readonly #t0 = performance.now();

  constructor(enabled: boolean) {
    this.enabled = enabled;
  }

  add(kind: TraceStep["kind"], name: string, detail?: Record<string, unknown>): void {
    if (!this.enabled) return;
    this.steps.push({
      t_us: Math.round((performance.now() - this.#t0) * 1000),
      kind,
      name,
      detail,
    });
  }
}

/** Text lines of a trace. */
export function traceLines(steps: TraceStep[]): string[] {
  return steps.map((s) => {
    const t = (s.t_us / 1000).toFixed(3).padStart(9);
    const d = s.detail ? " " + Object.entries(s.detail).map(([k, v]) => `${k}=${v}`).join(" ") : "";
    const tag = s.kind === "cm_event" ? "cm " : s.kind === "qp_state" ? "qp " : "   ";
    return `${t} ms  ${tag} ${s.name}${d}`;
  });
}

/** What both sides set up for a connection. */
export interface Endpoint {
  pd: ProtectionDomain;
  cq: CompletionQueue;
  qp: QueuePair;
}

/** How to size and guard the QP. */
export interface QpSetup {
  caps: QpCaps;
  cqe: number;
  /** The QP access flags this side grants its peer (least: 0 unless the peer reads/writes). */
  access: number;
  /** Registers memory and posts receives before the connection is made; returns private data. */
  prepare(ep: Endpoint, peerData: Uint8Array | undefined): Uint8Array | undefined;
}

/** An established connection and everything it owns. */
export class Connection implements Disposable {
  readonly id: CmId;
  readonly channel: EventChannel;
  readonly ep: Endpoint;
  readonly peerData: Uint8Array;
  readonly trace: Trace;
  readonly #stack: DisposableStack;
  #closed = false;

  constructor(
    parts: { id: CmId; channel: EventChannel; ep: Endpoint; peerData: Uint8Array; trace: Trace },
    stack: DisposableStack,
  ) {
    this.id = parts.id;
    this.channel = parts.channel;
    this.ep = parts.ep;
    this.peerData = parts.peerData;
    this.trace = parts.trace;
    this.#stack = stack;
  }

  /** A DISCONNECTED (or other terminal) event for this connection, if one is queued. */
  pollEnd(): CmEvent | undefined {
    return this.channel.poll((ev) => samePointer(ev.id, this.id.pointer));
  }

  /** Waits for the peer's DISCONNECTED; false when it did not come in time. */
  async waitDisconnected(timeoutMs: number, cancel?: Canceller): Promise<boolean> {
    try {
      const ev = await this.channel.next(
        timeoutMs,
        "DISCONNECTED",
        cancel,
        (e) => samePointer(e.id, this.id.pointer),
      );
      this.trace.add("cm_event", ev.name);
      return ev.type === E.DISCONNECTED;
    } catch (err) {
      if ((err as Error).name === "WaitTimeoutError") return false;
      throw err;
    }
  }

  /** Disconnects (idempotent) and releases everything: QP, CQ, MRs, PD, id (and channel). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.id.disconnect();
    this.#stack.dispose();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

function newEndpoint(id: CmId, setup: QpSetup, stack: DisposableStack): Endpoint {
  const ctx = id.verbs;
  if (ctx === null) throw new FailureError("The CM id has no device after address resolution.");
  const pd = stack.use(new ProtectionDomain(ctx));
  const cq = stack.use(new CompletionQueue(ctx, setup.cqe));
  const qp = new QueuePair(pd, cq, setup.caps);
  id.adoptQp(qp);
  stack.defer(() => qp.close()); // before the CQ and PD it uses
  return { pd, cq, qp };
}

/** Moves the QP to `state` with the CM's attributes, traced with what ibv_query_qp reads back. */
function transition(
  id: CmId,
  qp: QueuePair,
  state: number,
  access: number,
  trace: Trace,
  note?: string,
): void {
  const attr = new Uint8Array(QA.$size);
  const before = trace.enabled ? qp.query().state : 0;
  let mask = id.initQpAttr(state, attr);
  const dv = new DataView(attr.buffer);
  if (state === IBV_QPS.INIT) {
    // Grant the peer only what this side's use needs, whatever the CM's default.
    dv.setUint32(QA.qp_access_flags, access, true);
    mask |= MASK.ACCESS_FLAGS;
  }
  qp.modify(attr, mask, `Cannot move the queue pair to ${qpStateName(state)}`);
  if (!trace.enabled) return;
  const info: QpInfo = qp.query();
  const detail: Record<string, unknown> = { qp_num: info.qp_num };
  if (state === IBV_QPS.INIT) {
    detail.qp_access_flags = `0x${info.qp_access_flags.toString(16)}`;
  }
  if (state === IBV_QPS.RTR) {
    Object.assign(detail, {
      path_mtu: 128 << info.path_mtu,
      dest_qp_num: info.dest_qp_num,
      rq_psn: info.rq_psn,
      max_dest_rd_atomic: info.max_dest_rd_atomic,
    });
  }
  if (state === IBV_QPS.RTS) {
    Object.assign(detail, {
      sq_psn: info.sq_psn,
      timeout: info.timeout,
      retry_cnt: info.retry_cnt,
      rnr_retry: info.rnr_retry,
      max_rd_atomic: info.max_rd_atomic,
    });
  }
  if (note) detail.note = note;
  trace.add("qp_state", `${qpStateName(before)} -> ${qpStateName(info.state)}`, detail);
}

/**
 * The peer refused the connect request (a REJECTED event). Carries what the event said, so a
 * protocol layer above can decode its own reject record (NVMe/RDMA: struct nvme_rdma_cm_rej).
 */
export class RejectedError extends FailureError {
  /** The IB CM reject reason (include/rdma/ib_cm.h; 28 = the peer called rdma_reject). */
  readonly reason: number;
  /** Its name (CONSUMER_DEFINED …), "unknown" for values not in the table. */
  readonly reasonName: string;
  /**
   * The reject's private data as the event carried it, copied out before the ack. The kernel's
   * IB CM pads it to the REJ's fixed size (148 bytes); empty when there was none.
   */
  readonly rejectData: Uint8Array;

  constructor(
    message: string,
    reject: { reason: number; rejectData: Uint8Array },
    options?: { cause?: unknown; hint?: string },
  ) {
    super(message, options);
    this.reason = reject.reason;
    this.reasonName = IB_CM_REJ_REASON[reject.reason] ?? "unknown";
    this.rejectData = reject.rejectData;
  }
}

/**
 * The error for an unexpected CM event while connecting to `where`; a RejectedError (with the
 * reject's private data) for REJECTED.
 */
export function cmEventError(ev: CmEvent, where: string, privateDataText?: string): FailureError {
  const status = ev.status < 0 ? `${errnoName(-ev.status)} (${ev.status})` : String(ev.status);
  switch (ev.type) {
    case E.ADDR_ERROR:
      return new FailureError(
        `Cannot resolve ${where} to an RDMA device: ADDR_ERROR, status ${status}.`,
        {
          hint: "Check that the address belongs to a netdev with an RDMA device on it " +
            "(nvmeof rdma devices; rdma link) and that the peer answers ARP/neighbour discovery.",
        },
      );
    case E.ROUTE_ERROR:
      return new FailureError(
        `Cannot resolve a route to ${where}: ROUTE_ERROR, status ${status}.`,
        {
          hint: "Check the IP route to the peer and that its netdev is up.",
        },
      );
    case E.REJECTED: {
      const reason = IB_CM_REJ_REASON[ev.status] ?? "unknown";
      const text = privateDataText ? `: the peer says "${privateDataText}"` : "";
      return new RejectedError(
        `Connection to ${where} rejected: REJECTED, reason ${ev.status} (${reason})${text}.`,
        { reason: ev.status, rejectData: ev.privateData },
        {
          hint: ev.status === IB_CM_REJ.INVALID_SERVICE_ID
            ? "Nothing listens on that address and port: start the server first " +
              "(nvmeof rdma ping --server -a ADDR -p PORT) or check the port."
            : ev.status === IB_CM_REJ.CONSUMER_DEFINED
            ? "The server refused the request; see its message."
            : "See the reject reason (include/rdma/ib_cm.h).",
        },
      );
    }
    case E.UNREACHABLE:
      return new FailureError(`No answer from ${where}: UNREACHABLE, status ${status}.`, {
        hint: "The peer's RDMA CM did not reply: check that the address is reachable over RDMA.",
      });
    case E.CONNECT_ERROR:
      return new FailureError(`Connection to ${where} failed: CONNECT_ERROR, status ${status}.`);
    default:
      return new FailureError(
        `Connection to ${where} failed: unexpected CM event ${ev.name}, status ${status}.`,
      );
  }
}

/** What an RDMA-CM connect needs: the peer, the bound on each wait, the trace, the cancel. */
export interface CmConnectParams {
  host: string;
  port: number;
  /** Bound on each wait for an event. */
  timeoutMs: number;
  trace: Trace;
  cancel?: Canceller;
  conn?: ConnParam;
}

/**
 * Connects to host:port: resolve address and route, create PD/CQ/QP (RESET → INIT), register
 * memory (setup.prepare), send the REQ with private data, and on CONNECT_RESPONSE move the QP to
 * RTR and RTS and call rdma_establish.
 */
export async function connect(opts: CmConnectParams, setup: QpSetup): Promise<Connection> {
  const stack = new DisposableStack();
  const where = hostPort(opts.host, opts.port);
  const { trace, cancel } = opts;
  try {
    let dst: Uint8Array;
    try {
      dst = sockaddr(opts.host, opts.port);
    } catch (err) {
      throw new FailureError(`'${opts.host}' is not an IP address.`, { cause: err });
    }
    const channel = stack.use(new EventChannel());
    const id = stack.use(CmId.create(channel));
    const mine = (ev: CmEvent) => samePointer(ev.id, id.pointer);
    const step = async (expect: number, what: string) => {
      const ev = await channel.next(opts.timeoutMs, `${what} from ${where}`, cancel, mine);
      trace.add("cm_event", ev.name, ev.status ? { status: ev.status } : undefined);
      if (ev.type !== expect) {
        throw cmEventError(ev, where, privateText(ev.privateData));
      }
      return ev;
    };
    id.resolveAddr(dst, Math.min(opts.timeoutMs, 2000));
    trace.add("call", "rdma_resolve_addr", { dst: where });
    await step(E.ADDR_RESOLVED, "ADDR_RESOLVED");
    id.resolveRoute(Math.min(opts.timeoutMs, 2000));
    trace.add("call", "rdma_resolve_route");
    await step(E.ROUTE_RESOLVED, "ROUTE_RESOLVED");
    const ep = newEndpoint(id, setup, stack);
    trace.add("qp_state", "created RESET", { qp_num: ep.qp.qpNum });
    transition(id, ep.qp, IBV_QPS.INIT, setup.access, trace);
    const privateData = setup.prepare(ep, undefined);
    id.connect({ ...opts.conn, privateData, qpNum: ep.qp.qpNum });
    trace.add("call", "rdma_connect", { private_data_len: privateData?.length ?? 0 });
    const resp = await step(E.CONNECT_RESPONSE, "CONNECT_RESPONSE");
    transition(id, ep.qp, IBV_QPS.INIT, setup.access, trace, "again, with the CM's attributes");
    transition(id, ep.qp, IBV_QPS.RTR, setup.access, trace);
    transition(id, ep.qp, IBV_QPS.RTS, setup.access, trace);
    id.establish();
    trace.add("call", "rdma_establish");
    return new Connection({ id, channel, ep, peerData: resp.privateData, trace }, stack.move());
  } catch (err) {
    stack.dispose();
    throw err;
  }
}

/** The text in reject private data, when it is printable. */
export function privateText(data: Uint8Array): string | undefined {
  if (!data.length) return undefined;
  const end = data.indexOf(0);
  const text = new TextDecoder("utf-8", { fatal: false }).decode(
    end < 0 ? data : data.subarray(0, end),
  );
  return /^[\x20-\x7e]+$/.test(text) ? text : undefined;
}

/** A listening id and its channel. */
export class Listener implements Disposable {
  readonly channel: EventChannel;
  readonly id: CmId;
  readonly #stack = new DisposableStack();

  constructor(host: string, port: number) {
    try {
      this.channel = this.#stack.use(new EventChannel());
      this.id = this.#stack.use(CmId.create(this.channel));
      this.id.bind(sockaddr(host, port));
      this.id.listen(8);
    } catch (err) {
      this.#stack.dispose();
      throw err;
    }
  }

  close(): void {
    this.#stack.dispose();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** The server's answer to a connect request. */
export type Decision = { reject: string } | { setup: QpSetup };

/**
 * Waits (without bound, until cancelled) for a CONNECT_REQUEST, asks `decide` what to do with
 * its private data, then builds the QP (RESET → INIT → RTR → RTS before accepting), accepts
 * with private data and waits for ESTABLISHED. Returns undefined after a reject.
 */
export async function accept(
  listener: Listener,
  opts: { timeoutMs: number; trace: Trace; cancel?: Canceller; conn?: ConnParam },
  decide: (privateData: Uint8Array) => Decision,
): Promise<Connection | undefined> {
  const { trace, cancel, timeoutMs } = opts;
  const req = await listener.channel.next(
    2 ** 31 - 1,
    "a connect request",
    cancel,
    (ev) => ev.type === E.CONNECT_REQUEST,
  );
  trace.add("cm_event", req.name, { private_data_len: req.privateData.length });
  const stack = new DisposableStack();
  try {
    const child = stack.use(CmId.adopt(req.id, listener.channel));
    const decision = decide(req.privateData);
    if ("reject" in decision) {
      child.reject(new TextEncoder().encode(decision.reject.slice(0, 140) + "\0"));
      trace.add("call", "rdma_reject", { reason: decision.reject });
      stack.dispose();
      return undefined;
    }
    const setup = decision.setup;
    const ep = newEndpoint(child, setup, stack);
    trace.add("qp_state", "created RESET", { qp_num: ep.qp.qpNum });
    transition(child, ep.qp, IBV_QPS.INIT, setup.access, trace);
    const privateData = setup.prepare(ep, req.privateData);
    transition(child, ep.qp, IBV_QPS.RTR, setup.access, trace);
    transition(child, ep.qp, IBV_QPS.RTS, setup.access, trace);
    child.accept({ ...opts.conn, privateData, qpNum: ep.qp.qpNum });
    trace.add("call", "rdma_accept", { private_data_len: privateData?.length ?? 0 });
    const ev = await listener.channel.next(
      timeoutMs,
      "ESTABLISHED",
      cancel,
      (e) => samePointer(e.id, child.pointer),
    );
    trace.add("cm_event", ev.name, ev.status ? { status: ev.status } : undefined);
    if (ev.type !== E.ESTABLISHED) {
      throw new FailureError(
        `The client's connection did not complete: ${ev.name}, status ${ev.status}.`,
      );
    }
    return new Connection(
      { id: child, channel: listener.channel, ep, peerData: req.privateData, trace },
      stack.move(),
    );
  } catch (err) {
    stack.dispose();
    throw err;
  }
}
