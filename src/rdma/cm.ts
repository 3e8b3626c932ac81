/**
 * RDMA connection manager objects: EventChannel and CmId. Events are read with the channel fd in
 * O_NONBLOCK mode after a non-blocking poll, copied out, and acknowledged at once (the private
 * data they point to is freed by rdma_ack_cm_event, and rdma_destroy_id waits for every ack).
 */
import { ENODEV, ENOENT } from "../errno.ts";
import { librdmacm } from "../../ffi/librdmacm.ts";
import { libibverbs } from "../../ffi/libibverbs.ts";
import { errno } from "../../ffi/libc.ts";
import { cmEventName, qpStateName, RDMA_PS_TCP } from "../../ffi/enums.ts";
import {
  IBV_CONTEXT,
  IBV_QP_ATTR as QA,
  RDMA_CM_EVENT as EV,
  RDMA_CM_ID as CID,
  RDMA_CONN_PARAM as CP,
  RDMA_EVENT_CHANNEL,
} from "../../ffi/structs.ts";
import { KERNEL_SOCKADDR_STORAGE } from "../../ffi/libc_structs.ts";
import { errnoName, NativeError } from "../errors.ts";
import { addressOf, checkCm, cView } from "./native.ts";
import {
  type Canceller,
  setNonblocking,
  waitReadable,
  WaitTimeoutError,
  wouldBlock,
} from "../wait.ts";
import type { QueuePair } from "./verbs.ts";

/** A CM event, copied out of library memory before it was acknowledged. */
export interface CmEvent {
  /** The event type value and its name (ADDR_RESOLVED …). */
  type: number;
  name: string;
  /** -errno, or the IB CM reject reason for REJECTED. */
  status: number;
  /** The id the event is for (a new child id for CONNECT_REQUEST). */
  id: Deno.PointerObject;
  listenId: Deno.PointerValue;
  privateData: Uint8Array;
  responderResources: number;
  initiatorDepth: number;
}

/** Whether two C pointers are the same address. */
export function samePointer(a: Deno.PointerValue, b: Deno.PointerValue): boolean {
  return Deno.UnsafePointer.value(a) === Deno.UnsafePointer.value(b);
}

/** An rdma_event_channel with its fd in non-blocking mode. */
export class EventChannel implements Disposable {
  #ptr: Deno.PointerObject | null;
  readonly fd: number;
  readonly #out = new BigUint64Array(1);

  constructor() {
    const cm = librdmacm();
    const p = cm.rdma_create_event_channel();
    if (p === null) {
      const e = errno();
      throw new NativeError("rdma_create_event_channel", e, {
        message: `Cannot open the RDMA connection manager: ${errnoName(e)} (${e}).`,
        hint: e === ENODEV || e === ENOENT
          ? "Load rdma_ucm (modprobe rdma_ucm) and check that /dev/infiniband/rdma_cm exists."
          : undefined,
      });
    }
    this.#ptr = p;
    this.fd = cView(p, RDMA_EVENT_CHANNEL.$size).getInt32(RDMA_EVENT_CHANNEL.fd, true);
    setNonblocking(this.fd);
  }

  get pointer(): Deno.PointerObject {
    if (!this.#ptr) throw new Error("event channel is closed");
    return this.#ptr;
  }

  /** Events read while waiting for another id's, handed out by later waits. */
  readonly #pending: CmEvent[] = [];

  /** The next event if one is queued (synchronous, never blocks), else undefined. */
  #read(): CmEvent | undefined {
    const cm = librdmacm();
    const rc = cm.rdma_get_cm_event(this.pointer, this.#out);
    if (rc !== 0) {
      const e = errno();
      if (wouldBlock(e)) return undefined;
      throw new NativeError("rdma_get_cm_event", e);
    }
    const p = Deno.UnsafePointer.create(this.#out[0])!;
    const dv = cView(p, EV.$size);
    const view = new Deno.UnsafePointerView(p);
    const len = dv.getUint8(EV["param.conn.private_data_len"]);
    const pd = view.getPointer(EV["param.conn.private_data"]);
    const type = dv.getUint32(EV.event, true);
    const ev: CmEvent = {
      type,
      name: cmEventName(type),
      status: dv.getInt32(EV.status, true),
      id: view.getPointer(EV.id)!,
      listenId: view.getPointer(EV.listen_id),
      privateData: pd && len
        ? new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(pd, len).slice(0))
        : new Uint8Array(0),
      responderResources: dv.getUint8(EV["param.conn.responder_resources"]),
      initiatorDepth: dv.getUint8(EV["param.conn.initiator_depth"]),
    };
    cm.rdma_ack_cm_event(p);
    return ev;
  }

  /** The next queued event that `match` accepts, without waiting (others stay queued). */
  poll(match: (ev: CmEvent) => boolean = () => true): CmEvent | undefined {
    const i = this.#pending.findIndex(match);
    if (i >= 0) return this.#pending.splice(i, 1)[0];
    for (;;) {
      const ev = this.#read();
      if (!ev) return undefined;
      if (match(ev)) return ev;
      this.#pending.push(ev);
    }
  }

  /** Drops queued events of an id that is being destroyed. */
  discard(id: Deno.PointerObject): void {
    for (let i = this.#pending.length - 1; i >= 0; i--) {
      if (samePointer(this.#pending[i].id, id)) this.#pending.splice(i, 1);
    }
  }

  /**
   * Waits up to `timeoutMs` for the next event `match` accepts (non-blocking poll, then a sync
   * read). Throws WaitTimeoutError naming `what` when none came, CancelledError when cancelled.
   */
  async next(
    timeoutMs: number,
    what: string,
    cancel?: Canceller,
    match: (ev: CmEvent) => boolean = () => true,
  ): Promise<CmEvent> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const ev = this.poll(match);
      if (ev) return ev;
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new WaitTimeoutError(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
      }
      await waitReadable(this.fd, Math.ceil(Math.min(left, 2 ** 31 - 1)), cancel);
    }
  }

  close(): void {
    if (!this.#ptr) return;
    librdmacm().rdma_destroy_event_channel(this.#ptr);
    this.#ptr = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Connection parameters (struct rdma_conn_param). */
export interface ConnParam {
  privateData?: Uint8Array;
  responderResources?: number;
  initiatorDepth?: number;
  retryCount?: number;
  rnrRetryCount?: number;
  qpNum?: number;
}

/** struct rdma_conn_param for `p`; it points at p.privateData, which the caller holds. */
function connParam(p: ConnParam): Uint8Array {
  const buf = new Uint8Array(CP.$size);
  const dv = new DataView(buf.buffer);
  if (p.privateData && p.privateData.length) {
    dv.setBigUint64(CP.private_data, addressOf(p.privateData), true);
    dv.setUint8(CP.private_data_len, p.privateData.length);
  }
  dv.setUint8(CP.responder_resources, p.responderResources ?? 1);
  dv.setUint8(CP.initiator_depth, p.initiatorDepth ?? 1);
  dv.setUint8(CP.retry_count, p.retryCount ?? 7);
  dv.setUint8(CP.rnr_retry_count, p.rnrRetryCount ?? 7);
  dv.setUint32(CP.qp_num, p.qpNum ?? 0, true);
  return buf;
}

/**
 * An rdma_cm_id on an event channel. It owns the QP made for it (closed first) and, for a
 * listening id, nothing else: child ids from CONNECT_REQUEST are wrapped with `CmId.adopt`.
 */
export class CmId implements Disposable {
  #ptr: Deno.PointerObject | null;
  readonly channel: EventChannel;
  #qp: QueuePair | undefined;

  private constructor(ptr: Deno.PointerObject, channel: EventChannel) {
    this.#ptr = ptr;
    this.channel = channel;
  }

  /** rdma_create_id(channel, RDMA_PS_TCP): a reliable-connected id. */
  static create(channel: EventChannel): CmId {
    const out = new BigUint64Array(1);
    checkCm(
      "rdma_create_id",
      librdmacm().rdma_create_id(channel.pointer, out, null, RDMA_PS_TCP),
      "Cannot create an RDMA CM id",
    );
    return new CmId(Deno.UnsafePointer.create(out[0])!, channel);
  }

  /** Takes ownership of the child id of a CONNECT_REQUEST event. */
  static adopt(ptr: Deno.PointerObject, channel: EventChannel): CmId {
    return new CmId(ptr, channel);
  }

  get pointer(): Deno.PointerObject {
    if (!this.#ptr) throw new Error("CM id is closed");
    return this.#ptr;
  }

  /** The device context the id is bound to (NULL until the address is resolved or bound). */
  get verbs(): Deno.PointerValue {
    return new Deno.UnsafePointerView(this.pointer).getPointer(CID.verbs);
  }

  get portNum(): number {
    return cView(this.pointer, CID.$size).getUint8(CID.port_num);
  }

  /** Registers the QP this id owns: it is closed before the id. */
  adoptQp(qp: QueuePair): void {
    this.#qp = qp;
  }

  get qp(): QueuePair | undefined {
    return this.#qp;
  }

  resolveAddr(dst: Uint8Array, timeoutMs: number): void {
    checkCm(
      "rdma_resolve_addr",
      librdmacm().rdma_resolve_addr(this.pointer, null, dst, timeoutMs),
      "Cannot start resolving the address",
    );
  }

  resolveRoute(timeoutMs: number): void {
    checkCm(
      "rdma_resolve_route",
      librdmacm().rdma_resolve_route(this.pointer, timeoutMs),
      "Cannot start resolving the route",
    );
  }

  bind(addr: Uint8Array): void {
    checkCm("rdma_bind_addr", librdmacm().rdma_bind_addr(this.pointer, addr), "Cannot bind");
  }

  listen(backlog: number): void {
    checkCm("rdma_listen", librdmacm().rdma_listen(this.pointer, backlog), "Cannot listen");
  }

  connect(p: ConnParam): void {
    const rc = librdmacm().rdma_connect(this.pointer, connParam(p));
    checkCm("rdma_connect", rc, "Cannot send the connect request");
  }

  accept(p: ConnParam): void {
    const rc = librdmacm().rdma_accept(this.pointer, connParam(p));
    checkCm("rdma_accept", rc, "Cannot accept the connection");
  }

  reject(privateData?: Uint8Array): void {
    const pd = privateData ?? new Uint8Array(0);
    checkCm("rdma_reject", librdmacm().rdma_reject(this.pointer, pd, pd.length));
  }

  establish(): void {
    checkCm("rdma_establish", librdmacm().rdma_establish(this.pointer));
  }

  /** rdma_disconnect; errors are ignored (the peer may be gone already). Returns errno or 0. */
  disconnect(): number {
    if (!this.#ptr) return 0;
    const rc = librdmacm().rdma_disconnect(this.#ptr);
    return rc === 0 ? 0 : errno();
  }

  /**
   * rdma_init_qp_attr for `state`: fills `attr` (struct ibv_qp_attr) and returns the mask of the
   * attributes the CM decided (path MTU, PSNs, remote QPN, address vector …).
   */
  initQpAttr(state: number, attr: Uint8Array): number {
    attr.fill(0);
    new DataView(attr.buffer, attr.byteOffset).setUint32(QA.qp_state, state, true);
    const mask = new Int32Array(1);
    const rc = librdmacm().rdma_init_qp_attr(this.pointer, attr, mask);
    checkCm("rdma_init_qp_attr", rc, `Cannot get the QP attributes for ${qpStateName(state)}`);
    return mask[0];
  }

  /** Moves `qp` to `state` with the attributes the CM chose (rdma_init_qp_attr, ibv_modify_qp). */
  moveQp(qp: QueuePair, state: number, what: string): void {
    const attr = new Uint8Array(QA.$size);
    qp.modify(attr, this.initQpAttr(state, attr), what);
  }

  /** The local struct sockaddr (route.addr.src_addr, 128 bytes) chosen by address resolution. */
  get sourceAddress(): Uint8Array {
    const view = cView(this.pointer, CID.$size);
    const at = view.byteOffset + CID["route.addr.src_addr"];
    return new Uint8Array(view.buffer, at, KERNEL_SOCKADDR_STORAGE.$size).slice();
  }

  /** The name of the RDMA device the id is bound to (mlx5_0, rxe0 …), undefined before it is bound. */
  get deviceName(): string | undefined {
    const ctx = this.verbs;
    if (!ctx) return undefined;
    const dev = new Deno.UnsafePointerView(ctx).getPointer(IBV_CONTEXT.device);
    const name = dev ? libibverbs().ibv_get_device_name(dev) : null;
    return name ? Deno.UnsafePointerView.getCString(name) : undefined;
  }

  close(): void {
    if (!this.#ptr) return;
    this.#qp?.close();
    this.channel.discard(this.#ptr);
    librdmacm().rdma_destroy_id(this.#ptr);
    this.#ptr = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
