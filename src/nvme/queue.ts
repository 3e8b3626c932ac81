/**
 * One NVMe/RDMA queue pair in user space, as nvme-rdma builds it: an RDMA-CM
 * connection with the NVMe/RDMA private data, `depth` receives posted for 16-byte CQEs, and
 * 64-byte SQEs sent with SEND from registered memory. Data moves by keyed SGL: the target
 * RDMA-WRITEs read data into, and RDMA-READs write data from, memory registered on this queue's
 * protection domain. A command slot (its command id) is free again once both its SEND
 * completed and its CQE arrived.
 */
import { hostPort } from "../net/address.ts";
import { IB_CM_REJ, IBV_ACCESS, IBV_SEND, IBV_WC_OPCODE, IBV_WR } from "../../ffi/enums.ts";
import { FailureError } from "../errors.ts";
import {
  connect,
  type Connection,
  type Endpoint,
  RejectedError,
  Trace,
} from "../rdma/connection.ts";
import { checkCompletion } from "../rdma/completion.ts";
import type { MemoryRegion } from "../rdma/verbs.ts";
import { WorkRequest } from "../rdma/work_request.ts";
import type { Canceller } from "../wait.ts";
import {
  CQE_SIZE,
  decodeRdmaCmAccept,
  encodeRdmaCmRequest,
  type KeyedSgl,
  Sqe,
  SQE_SIZE,
} from "./capsule.ts";
import { describeRdmaCmReject, RdmaCmRejectError } from "./status.ts";

/** wr_id of a receive: this bit and the CQE slot in the low 16 bits (a send's is its cid). */
const RECV_TAG = 0x10000;
const RECV_SLOT_MASK = 0xffff;

/**
 * The state of a command slot (its cid), as bits like SPDK's nvme_rdma_req completion flags: idle
 * (0), posted, then both its SEND completed and its CQE received before it is idle again.
 */
const SLOT_IDLE = 0;
const SEND_COMPLETED = 1 << 0;
const RECV_COMPLETED = 1 << 1;
const SLOT_IN_FLIGHT = 1 << 3;
const SLOT_COMPLETED = SEND_COMPLETED | RECV_COMPLETED;

export interface QueueOptions {
  host: string;
  port: number;
  qid: number;
  /** Commands outstanding at most (the SQ size; hsqsize = depth − 1, hrqsize = depth). */
  depth: number;
  /** RDMA READs the target may have outstanding against us (our responder resources). */
  responderResources?: number;
  timeoutMs: number;
  cancel?: Canceller;
  trace?: Trace;
}

/**
 * The error for a queue the target's RDMA CM rejected: RdmaCmRejectError when the reject carries
 * an NVMe/RDMA reject record; for no listener at all (INVALID_SERVICE_ID) the same RejectedError
 * with a hint about the NVMe/RDMA target (the RDMA layer's hint speaks of an `rdma ping` server);
 * any other reject as it came.
 */
export function queueRejectError(
  err: RejectedError,
  o: Pick<QueueOptions, "host" | "port" | "qid" | "depth">,
): FailureError {
  const where = hostPort(o.host, o.port);
  const info = describeRdmaCmReject(err.rejectData, o);
  if (info) {
    return new RdmaCmRejectError(where, o, { info, data: err.rejectData }, { cause: err });
  }
  if (err.reason !== IB_CM_REJ.INVALID_SERVICE_ID) return err;
  return new RejectedError(err.message, { reason: err.reason, rejectData: err.rejectData }, {
    cause: err,
    hint: `No NVMe/RDMA target listens on ${where}. On the target, check that an rdma port has ` +
      "this address and service id and a subsystem linked to it (nvmeof target show; nvmet listens " +
      "only once a subsystem is linked), or give the -a/-s of a port that does.",
  });
}

/** Completion of one command: its status and result. */
export interface Done {
  cid: number;
  status: number;
  result: bigint;
}

export class NvmeQueue implements Disposable {
  readonly conn: Connection;
  readonly qid: number;
  readonly depth: number;
  readonly crqsize: number;
  readonly timeoutMs: number;
  readonly cancel?: Canceller;
  readonly sqes: Sqe[];
  readonly #sqeMr: MemoryRegion;
  readonly #cqeMr: MemoryRegion;
  readonly #send: WorkRequest[];
  readonly #recv: WorkRequest[];
  /** Per cid: SLOT_IDLE, or SLOT_IN_FLIGHT with SEND_COMPLETED and RECV_COMPLETED as they come. */
  readonly #state: Uint8Array;
  /** Slots queued for the next flush, in order, and how many. */
  readonly #chain: Uint16Array;
  #queued = 0;
  readonly #status: Uint16Array;
  /**
   * Per cid: performance.now() just before its command was posted (one clock read per post,
   * shared by the commands of a chain), so a command's latency is submission to completion.
   */
  readonly postedAt: Float64Array;
  /** Per cid: the CQE's 64-bit result as two little-endian words (no BigInt per completion). */
  readonly #result: Uint32Array;
  readonly #cqeView: DataView;
  readonly #ep: Endpoint;
  /** Called when a command has fully completed (SEND done and CQE in). */
  onDone: ((cid: number, status: number) => void) | undefined;

  private constructor(
    conn: Connection,
    o: QueueOptions,
    mrs: { sqe: MemoryRegion; cqe: MemoryRegion },
    wrs: { send: WorkRequest[]; recv: WorkRequest[] },
  ) {
    this.conn = conn;
    this.#ep = conn.ep;
    this.qid = o.qid;
    this.depth = o.depth;
    this.timeoutMs = o.timeoutMs;
    this.cancel = o.cancel;
    this.#sqeMr = mrs.sqe;
    this.#cqeMr = mrs.cqe;
    this.#send = wrs.send;
    this.#recv = wrs.recv;
    this.sqes = Array.from(
      { length: o.depth },
      (_, i) => new Sqe(mrs.sqe.bytes.subarray(i * SQE_SIZE, (i + 1) * SQE_SIZE)),
    );
    this.#state = new Uint8Array(o.depth);
    this.#chain = new Uint16Array(o.depth);
    this.#status = new Uint16Array(o.depth);
    this.postedAt = new Float64Array(o.depth);
    this.#result = new Uint32Array(2 * o.depth);
    const c = mrs.cqe.bytes;
    this.#cqeView = new DataView(c.buffer, c.byteOffset, c.byteLength);
    this.crqsize = decodeRdmaCmAccept(conn.peerData)?.crqsize ?? 0;
  }

  /**
   * Connects queue `qid` (no NVMe command is sent yet: Fabrics Connect is the caller's). A
   * target that refuses the queue with an NVMe/RDMA reject record raises RdmaCmRejectError,
   * which names the record's status; a port with no listener gets a hint about the target
   * (queueRejectError); other CM failures pass through unchanged.
   */
  static async open(o: QueueOptions): Promise<NvmeQueue> {
    try {
      return await NvmeQueue.#open(o);
    } catch (err) {
      if (!(err instanceof RejectedError)) throw err;
      throw queueRejectError(err, o);
    }
  }

  static async #open(o: QueueOptions): Promise<NvmeQueue> {
    let mrs: { sqe: MemoryRegion; cqe: MemoryRegion } | undefined;
    const send: WorkRequest[] = [];
    const recv: WorkRequest[] = [];
    const conn = await connect({
      host: o.host,
      port: o.port,
      timeoutMs: o.timeoutMs,
      trace: o.trace ?? new Trace(false),
      cancel: o.cancel,
      conn: {
        responderResources: o.responderResources ?? 16,
        initiatorDepth: 0,
        retryCount: 7,
        rnrRetryCount: 7,
      },
    }, {
      caps: { maxSendWr: o.depth + 1, maxRecvWr: o.depth + 1 },
      cqe: 2 * o.depth + 2,
      // The target RDMA-READs write data and Connect data, and RDMA-WRITEs read data.
      access: IBV_ACCESS.REMOTE_READ | IBV_ACCESS.REMOTE_WRITE,
      prepare(ep) {
        // SQEs are only read by our own NIC (SEND): no access flags. CQEs land by receive.
        const sqe = ep.pd.register(o.depth * SQE_SIZE, 0);
        const cqe = ep.pd.register(o.depth * CQE_SIZE, IBV_ACCESS.LOCAL_WRITE);
        mrs = { sqe, cqe };
        for (let i = 0; i < o.depth; i++) {
          send.push(
            new WorkRequest("send").local(i, sqe, i * SQE_SIZE, SQE_SIZE).op(
              IBV_WR.SEND,
              IBV_SEND.SIGNALED,
            ),
          );
          const r = new WorkRequest("recv").local(RECV_TAG | i, cqe, i * CQE_SIZE, CQE_SIZE);
          recv.push(r);
          ep.qp.postRecv(r.address);
        }
        return encodeRdmaCmRequest({ qid: o.qid, hrqsize: o.depth, hsqsize: o.depth - 1 });
      },
    });
    return new NvmeQueue(conn, o, mrs!, { send, recv });
  }

  /** Registers memory on this queue's protection domain. */
  register(length: number, access: number): MemoryRegion {
    return this.#ep.pd.register(length, access);
  }

  /** The keyed SGL for `length` bytes at `offset` of `mr`. */
  static sgl(mr: MemoryRegion, offset: number, length: number): KeyedSgl {
    return { addr: mr.addr + BigInt(offset), length, key: mr.rkey };
  }

  /** Whether slot `cid` is idle. */
  idle(cid: number): boolean {
    return this.#state[cid] === SLOT_IDLE;
  }

  /** Sends the SQE in slot `cid` (built in `this.sqes[cid]`), with any slots queued before it. */
  submit(cid: number): void {
    this.queue(cid);
    this.flush();
  }

  /**
   * Queues slot `cid` for the next `flush` (or the end of the next `reap`): its send WR is linked
   * behind the ones already queued, so a burst of commands costs one ibv_post_send, which on a
   * software RDMA device is one system call.
   */
  queue(cid: number): void {
    this.#state[cid] = SLOT_IN_FLIGHT;
    const n = this.#queued;
    if (n > 0) this.#send[this.#chain[n - 1]].link(this.#send[cid]);
    this.#chain[n] = cid;
    this.#queued = n + 1;
  }

  /**
   * Posts every queued slot with one ibv_post_send, stamping each slot's `postedAt`; when the post
   * fails, forgets them and passes its NativeError on.
   */
  flush(): void {
    const n = this.#queued;
    if (n === 0) return;
    this.#queued = 0;
    const t = performance.now();
    let posted = false;
    try {
      this.#ep.qp.postSend(this.#send[this.#chain[0]].address);
      posted = true;
    } finally {
      for (let i = 0; i < n; i++) {
        const cid = this.#chain[i];
        this.postedAt[cid] = t;
        if (i < n - 1) this.#send[cid].link(undefined);
        if (!posted) this.#state[cid] = SLOT_IDLE;
      }
    }
  }

  /** Polls the CQ once; dispatches finished commands to onDone. Returns completions seen. */
  reap(): number {
    const cq = this.#ep.cq;
    const n = cq.poll();
    for (let k = 0; k < n; k++) {
      checkCompletion(cq, k, `on NVMe queue ${this.qid}`);
      const wr = cq.wrId(k);
      let cid: number;
      if (cq.opcode(k) & IBV_WC_OPCODE.RECV) {
        const slot = wr & RECV_SLOT_MASK;
        const off = slot * CQE_SIZE;
        const dv = this.#cqeView;
        cid = dv.getUint16(off + 12, true);
        if (cid >= this.depth || this.#state[cid] === SLOT_IDLE) {
          throw new FailureError(
            `The target answered command id ${cid} on queue ${this.qid}, which is not in flight.`,
          );
        }
        this.#status[cid] = dv.getUint16(off + 14, true) >> 1;
        this.#result[2 * cid] = dv.getUint32(off, true);
        this.#result[2 * cid + 1] = dv.getUint32(off + 4, true);
        this.#ep.qp.postRecv(this.#recv[slot].address);
        this.#state[cid] |= RECV_COMPLETED;
      } else {
        cid = wr;
        this.#state[cid] |= SEND_COMPLETED;
      }
      if ((this.#state[cid] & SLOT_COMPLETED) === SLOT_COMPLETED) {
        this.#state[cid] = SLOT_IDLE;
        this.onDone?.(cid, this.#status[cid]);
      }
    }
    this.flush(); // what onDone queued
    return n;
  }

  /** The status and result of the last completion of slot `cid`. */
  done(cid: number): Done {
    const result = (BigInt(this.#result[2 * cid + 1]) << 32n) | BigInt(this.#result[2 * cid]);
    return { cid, status: this.#status[cid], result };
  }

  /** Sends slot `cid` and waits (event driven, bounded) for its completion. */
  async execute(cid: number, what: string): Promise<Done> {
    this.submit(cid);
    const deadline = performance.now() + this.timeoutMs;
    const cq = this.#ep.cq;
    let armed = false;
    for (;;) {
      this.reap();
      if (this.#state[cid] === SLOT_IDLE) return this.done(cid);
      if (!armed) {
        cq.requestNotify();
        armed = true;
        continue; // poll again: a completion may have come before arming
      }
      this.cancel?.check();
      const end = this.conn.pollEnd();
      if (end) {
        throw new FailureError(
          `The target dropped queue ${this.qid} during ${what}: ${end.name}.`,
        );
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new FailureError(
          `${what} got no answer within ${this.timeoutMs} ms on queue ${this.qid}.`,
          { hint: "The target stopped answering; check that it is still up (--timeout MS)." },
        );
      }
      await cq.waitEvent(Math.min(left, 100), this.cancel);
    }
  }

  close(): void {
    this.conn.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
