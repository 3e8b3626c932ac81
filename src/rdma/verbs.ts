/**
 * Owned verbs objects: ProtectionDomain (closes its MRs), MemoryRegion (page-aligned C memory,
 * registered with the least access its use needs, freed after deregistration), CompletionQueue
 * with its completion channel, and QueuePair (created in RESET, moved by the caller, so every
 * transition can be observed). The data-path inlines (post_send, post_recv, poll_cq,
 * req_notify_cq) go through ibv_context.ops with prepared NativeCall sites, and throw NativeError
 * like every other verb. The work requests they post are in work_request.ts.
 */
import { EFAULT, ENOMEM } from "../errno.ts";
import { libibverbs } from "../../ffi/libibverbs.ts";
import { errno, libc } from "../../ffi/libc.ts";
import { NativeCall } from "../../ffi/libffi.ts";
import { IBV_QP_ATTR_MASK as QA_MASK, IBV_QPT_RC } from "../../ffi/enums.ts";
import {
  IBV_COMP_CHANNEL,
  IBV_CONTEXT,
  IBV_MR,
  IBV_QP,
  IBV_QP_ATTR as QA,
  IBV_QP_INIT_ATTR as QIA,
  IBV_WC,
} from "../../ffi/structs.ts";
import { errnoName, NativeError } from "../errors.ts";
import { addressOf, checkPointer, checkVerbs, cView, readPointer } from "./native.ts";
import { type Canceller, setNonblocking, waitReadable, wouldBlock } from "../wait.ts";

/** The function in slot `offset` of a context's ops table (ibv_context.ops). */
function opsSlot(ctx: Deno.PointerObject, offset: number, name: string): Deno.PointerObject {
  const fn = readPointer(ctx, offset);
  if (fn === null) throw new Error(`the provider has no ${name} (ibv_context.ops slot is NULL)`);
  return fn;
}

/** A protection domain; closing it closes its memory regions first. */
export class ProtectionDomain implements Disposable {
  #ptr: Deno.PointerObject | null;
  readonly context: Deno.PointerObject;
  readonly #mrs = new Set<MemoryRegion>();

  constructor(context: Deno.PointerObject) {
    this.context = context;
    this.#ptr = checkPointer(
      "ibv_alloc_pd",
      libibverbs().ibv_alloc_pd(context),
      "Cannot allocate a protection domain",
    );
  }

  get pointer(): Deno.PointerObject {
    if (!this.#ptr) throw new Error("protection domain is closed");
    return this.#ptr;
  }

  /** Allocates `length` bytes (page aligned, zeroed) and registers them with `access`. */
  register(length: number, access: number): MemoryRegion {
    const mr = new MemoryRegion(this, length, access, () => this.#mrs.delete(mr));
    this.#mrs.add(mr);
    return mr;
  }

  close(): void {
    if (!this.#ptr) return;
    for (const mr of [...this.#mrs]) mr.close();
    const rc = libibverbs().ibv_dealloc_pd(this.#ptr);
    this.#ptr = null;
    checkVerbs("ibv_dealloc_pd", rc);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Registered memory. The bytes live in C memory from posix_memalign, so the garbage collector
 * can neither move nor free them; `bytes` is a zero-copy view. Closing deregisters, then frees.
 */
export class MemoryRegion implements Disposable {
  #mr: Deno.PointerObject | null;
  #mem: Deno.PointerObject | null;
  readonly bytes: Uint8Array;
  readonly addr: bigint;
  readonly lkey: number;
  readonly rkey: number;
  readonly access: number;
  readonly #onClose: () => void;

  constructor(pd: ProtectionDomain, length: number, access: number, onClose: () => void) {
    const out = new BigUint64Array(1);
    const rc = libc().posix_memalign(
      new Uint8Array(out.buffer),
      4096n,
      BigInt(Math.max(length, 1)),
    );
    if (rc !== 0) {
      throw new NativeError("posix_memalign", rc, {
        message: `Cannot allocate ${length} bytes: ${errnoName(rc)} (${rc}).`,
      });
    }
    const mem = Deno.UnsafePointer.create(out[0])!;
    const mr = libibverbs().ibv_reg_mr(pd.pointer, mem, BigInt(Math.max(length, 1)), access);
    if (mr === null) {
      const e = errno();
      libc().free(mem);
      throw new NativeError("ibv_reg_mr", e, {
        message: `Cannot register ${length} bytes of memory: ${errnoName(e)} (${e}).`,
        hint: e === ENOMEM || e === EFAULT
          ? "The locked-memory limit may be too low: raise it (ulimit -l unlimited)."
          : undefined,
      });
    }
    this.#mem = mem;
    this.#mr = mr;
    this.bytes = new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(mem, Math.max(length, 1)))
      .subarray(0, length);
    this.bytes.fill(0);
    this.addr = out[0];
    const dv = cView(mr, IBV_MR.$size);
    this.lkey = dv.getUint32(IBV_MR.lkey, true);
    this.rkey = dv.getUint32(IBV_MR.rkey, true);
    this.access = access;
    this.#onClose = onClose;
  }

  close(): void {
    if (!this.#mr) return;
    const rc = libibverbs().ibv_dereg_mr(this.#mr);
    this.#mr = null;
    if (rc === 0) libc().free(this.#mem);
    this.#mem = null;
    this.#onClose();
    checkVerbs("ibv_dereg_mr", rc);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** A completion queue with its own completion channel (fd non-blocking, waited on by poll). */
export class CompletionQueue implements Disposable {
  #ptr: Deno.PointerObject | null;
  #channel: Deno.PointerObject | null;
  readonly channelFd: number;
  /** Work completions land here: `capacity` × struct ibv_wc. */
  readonly wc: Uint8Array;
  readonly wcView: DataView;
  /** wc as u32 words (index 12·i + 2 = status, + 3 = opcode, + 5 = byte_len). */
  readonly wcWords: Uint32Array;
  readonly capacity: number;
  readonly #poll: NativeCall;
  readonly #notify: NativeCall;
  readonly #outCq = new BigUint64Array(1);
  readonly #outCtx = new BigUint64Array(1);

  constructor(context: Deno.PointerObject, cqe: number, pollBatch = 16) {
    const ibv = libibverbs();
    this.#channel = checkPointer(
      "ibv_create_comp_channel",
      ibv.ibv_create_comp_channel(context),
      "Cannot create a completion channel",
    );
    this.channelFd = cView(this.#channel, IBV_COMP_CHANNEL.$size).getInt32(
      IBV_COMP_CHANNEL.fd,
      true,
    );
    const cq = ibv.ibv_create_cq(context, cqe, null, this.#channel, 0);
    if (cq === null) {
      const e = errno();
      ibv.ibv_destroy_comp_channel(this.#channel);
      throw new NativeError("ibv_create_cq", e, {
        message: `Cannot create a completion queue of ${cqe} entries: ${errnoName(e)} (${e}).`,
      });
    }
    this.#ptr = cq;
    setNonblocking(this.channelFd);
    this.capacity = pollBatch;
    this.wc = new Uint8Array(IBV_WC.$size * pollBatch);
    this.wcView = new DataView(this.wc.buffer);
    this.wcWords = new Uint32Array(this.wc.buffer);
    this.#poll = new NativeCall(opsSlot(context, IBV_CONTEXT["ops.poll_cq"], "poll_cq"), [
      "pointer",
      "i32",
      "pointer",
    ]);
    this.#poll.setPointer(0, cq);
    this.#poll.setI32(1, pollBatch);
    this.#poll.setPointer(2, addressOf(this.wc));
    this.#notify = new NativeCall(
      opsSlot(context, IBV_CONTEXT["ops.req_notify_cq"], "req_notify_cq"),
      ["pointer", "i32"],
    );
    this.#notify.setPointer(0, cq);
    this.#notify.setI32(1, 0);
  }

  get pointer(): Deno.PointerObject {
    if (!this.#ptr) throw new Error("completion queue is closed");
    return this.#ptr;
  }

  /**
   * ibv_poll_cq(cq, capacity, wc): the number of completions now in `wc` (0 when none). A
   * negative return is the provider failing: it throws NativeError.
   */
  poll(): number {
    const n = this.#poll.invoke();
    if (n < 0) checkVerbs("ibv_poll_cq", n);
    return n;
  }

  /** Status of completion `i` of the last poll. */
  // C writes `wc` behind the JIT's back: Atomics.load keeps every read a real load.
  status(i: number): number {
    return Atomics.load(this.wcWords, 12 * i + 2);
  }
  opcode(i: number): number {
    return Atomics.load(this.wcWords, 12 * i + 3);
  }
  byteLen(i: number): number {
    return Atomics.load(this.wcWords, 12 * i + 5);
  }
  /** wr_id (low 32 bits) of completion `i`. */
  wrId(i: number): number {
    return Atomics.load(this.wcWords, 12 * i);
  }

  /** ibv_req_notify_cq(cq, 0): the next completion wakes the channel fd. */
  requestNotify(): void {
    checkVerbs("ibv_req_notify_cq", this.#notify.invoke());
  }

  /**
   * Takes one pending completion event off the channel without waiting (ibv_get_cq_event on the
   * non-blocking fd + ibv_ack_cq_events), re-arming the CQ. False when none was pending.
   */
  takeEvent(): boolean {
    const ibv = libibverbs();
    const rc = ibv.ibv_get_cq_event(this.#channel, this.#outCq, this.#outCtx);
    if (rc === 0) {
      ibv.ibv_ack_cq_events(this.pointer, 1);
      this.requestNotify();
      return true;
    }
    const e = errno();
    if (!wouldBlock(e)) throw new NativeError("ibv_get_cq_event", e);
    return false;
  }

  /**
   * Waits for a completion event on the channel (non-blocking poll, then a sync
   * ibv_get_cq_event + ibv_ack_cq_events), re-arming first. Returns false on timeout.
   */
  async waitEvent(timeoutMs: number, cancel?: Canceller): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.takeEvent()) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await waitReadable(this.channelFd, Math.ceil(left), cancel);
    }
  }

  close(): void {
    const ibv = libibverbs();
    if (this.#ptr) {
      const rc = ibv.ibv_destroy_cq(this.#ptr);
      this.#ptr = null;
      checkVerbs("ibv_destroy_cq", rc);
    }
    if (this.#channel) {
      ibv.ibv_destroy_comp_channel(this.#channel);
      this.#channel = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** What ibv_query_qp reports about a QP, for traces. */
export interface QpInfo {
  state: number;
  path_mtu: number;
  qp_num: number;
  dest_qp_num: number;
  sq_psn: number;
  rq_psn: number;
  qp_access_flags: number;
  max_rd_atomic: number;
  max_dest_rd_atomic: number;
  timeout: number;
  retry_cnt: number;
  rnr_retry: number;
}

/** Sizes of a QP's queues. */
export interface QpCaps {
  maxSendWr: number;
  maxRecvWr: number;
  maxInlineData?: number;
}

/**
 * An RC queue pair, created in RESET with ibv_create_qp (so the caller drives every transition
 * with rdma_init_qp_attr + ibv_modify_qp), sending and receiving on one CQ.
 */
export class QueuePair implements Disposable {
  #ptr: Deno.PointerObject | null;
  readonly qpNum: number;
  readonly #postSend: NativeCall;
  readonly #postRecv: NativeCall;
  readonly #badWr = new BigUint64Array(1);
  readonly maxInlineData: number;

  constructor(pd: ProtectionDomain, cq: CompletionQueue, caps: QpCaps) {
    const init = new Uint8Array(QIA.$size);
    const dv = new DataView(init.buffer);
    dv.setBigUint64(QIA.send_cq, BigInt(Deno.UnsafePointer.value(cq.pointer)), true);
    dv.setBigUint64(QIA.recv_cq, BigInt(Deno.UnsafePointer.value(cq.pointer)), true);
    dv.setUint32(QIA["cap.max_send_wr"], caps.maxSendWr, true);
    dv.setUint32(QIA["cap.max_recv_wr"], caps.maxRecvWr, true);
    dv.setUint32(QIA["cap.max_send_sge"], 1, true);
    dv.setUint32(QIA["cap.max_recv_sge"], 1, true);
    dv.setUint32(QIA["cap.max_inline_data"], caps.maxInlineData ?? 0, true);
    dv.setUint32(QIA.qp_type, IBV_QPT_RC, true);
    dv.setInt32(QIA.sq_sig_all, 0, true);
    const qp = checkPointer(
      "ibv_create_qp",
      libibverbs().ibv_create_qp(pd.pointer, init),
      "Cannot create a queue pair",
    );
    this.#ptr = qp;
    this.maxInlineData = dv.getUint32(QIA["cap.max_inline_data"], true);
    this.qpNum = cView(qp, IBV_QP.$size).getUint32(IBV_QP.qp_num, true);
    const ctx = readPointer(qp, IBV_QP.context)!;
    const bad = addressOf(this.#badWr);
    this.#postSend = new NativeCall(opsSlot(ctx, IBV_CONTEXT["ops.post_send"], "post_send"), [
      "pointer",
      "pointer",
      "pointer",
    ]);
    this.#postSend.setPointer(0, qp);
    this.#postSend.setPointer(2, bad);
    this.#postRecv = new NativeCall(opsSlot(ctx, IBV_CONTEXT["ops.post_recv"], "post_recv"), [
      "pointer",
      "pointer",
      "pointer",
    ]);
    this.#postRecv.setPointer(0, qp);
    this.#postRecv.setPointer(2, bad);
  }

  get pointer(): Deno.PointerObject {
    if (!this.#ptr) throw new Error("queue pair is closed");
    return this.#ptr;
  }

  /** ibv_modify_qp(qp, attr, mask). */
  modify(attr: Uint8Array, mask: number, what: string): void {
    checkVerbs("ibv_modify_qp", libibverbs().ibv_modify_qp(this.pointer, attr, mask), what);
  }

  /** Moves the QP to ERR (flushes outstanding work). Errors are ignored. */
  toError(): void {
    if (!this.#ptr) return;
    const attr = new Uint8Array(QA.$size);
    new DataView(attr.buffer).setUint32(QA.qp_state, 6, true);
    libibverbs().ibv_modify_qp(this.#ptr, attr, QA_MASK.STATE);
  }

  /** ibv_query_qp: the state and connection attributes, read back from the device. */
  query(): QpInfo {
    const attr = new Uint8Array(QA.$size);
    const init = new Uint8Array(QIA.$size);
    checkVerbs(
      "ibv_query_qp",
      libibverbs().ibv_query_qp(this.pointer, attr, QA_MASK.STATE | QA_MASK.PATH_MTU, init),
    );
    const dv = new DataView(attr.buffer);
    return {
      state: dv.getUint32(QA.qp_state, true),
      path_mtu: dv.getUint32(QA.path_mtu, true),
      qp_num: this.qpNum,
      dest_qp_num: dv.getUint32(QA.dest_qp_num, true),
      sq_psn: dv.getUint32(QA.sq_psn, true),
      rq_psn: dv.getUint32(QA.rq_psn, true),
      qp_access_flags: dv.getUint32(QA.qp_access_flags, true),
      max_rd_atomic: dv.getUint8(QA.max_rd_atomic),
      max_dest_rd_atomic: dv.getUint8(QA.max_dest_rd_atomic),
      timeout: dv.getUint8(QA.timeout),
      retry_cnt: dv.getUint8(QA.retry_cnt),
      rnr_retry: dv.getUint8(QA.rnr_retry),
    };
  }

  /** ibv_post_send(qp, wr at `wrAddr`, &bad); throws NativeError with the errno it returned. */
  postSend(wrAddr: bigint): void {
    this.#postSend.setPointer(1, wrAddr);
    checkVerbs("ibv_post_send", this.#postSend.invoke());
  }

  /** ibv_post_recv(qp, wr at `wrAddr`, &bad); throws NativeError with the errno it returned. */
  postRecv(wrAddr: bigint): void {
    this.#postRecv.setPointer(1, wrAddr);
    checkVerbs("ibv_post_recv", this.#postRecv.invoke());
  }

  close(): void {
    if (!this.#ptr) return;
    const rc = libibverbs().ibv_destroy_qp(this.#ptr);
    this.#ptr = null;
    checkVerbs("ibv_destroy_qp", rc);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
