/**
 * Reachability in user space: resolve the address and route to the target with RDMA-CM, then
 * send the NVMe/RDMA admin-queue connect request a Linux host sends (include/linux/nvme-rdma.h
 * struct nvme_rdma_cm_req: recfmt 0, qid 0, hrqsize 32, hsqsize 31) and keep the raw CM event,
 * whatever it is. An accepted request is completed (QP to RTS, RTU sent) and disconnected at once,
 * so the target frees its queue. `nvmeof doctor` turns the outcome into a verdict.
 */
import { IB_CM_REJ, IB_CM_REJ_REASON, IBV_QPS, RDMA_CM_EVENT_TYPE as E } from "../../ffi/enums.ts";
import {
  decodeRdmaCmAccept,
  decodeRdmaCmReject,
  encodeRdmaCmRequest,
  RDMA_CM_REJECT,
} from "./capsule.ts";
import { ADMIN_DEPTH } from "./controller.ts";
import { type CmEvent, CmId, EventChannel, samePointer } from "../rdma/cm.ts";
import { parseSockaddr, sockaddr } from "../net/address.ts";
import { CompletionQueue, ProtectionDomain, QueuePair } from "../rdma/verbs.ts";
import { WaitTimeoutError } from "../wait.ts";

/** The IB CM reject reasons a probe's verdict tells apart (include/rdma/ib_cm.h). */
export const CM_REJECT_REASON = {
  /** The listener's consumer refused: an NVMe/RDMA reject, or a listener bound elsewhere. */
  consumerDefined: IB_CM_REJ.CONSUMER_DEFINED,
  /** No listener for that service id (port number). */
  invalidServiceId: IB_CM_REJ.INVALID_SERVICE_ID,
} as const;

/** The name of an IB CM reject reason, "unknown" for one ib_cm.h does not name. */
export function cmRejectReasonName(status: number): string {
  return IB_CM_REJ_REASON[status] ?? "unknown";
}

/**
 * struct nvme_rdma_cm_req for the admin queue of a Linux host: qid 0 at NVME_AQ_DEPTH (32), the
 * request `nvmeof probe` sends too.
 */
export function adminConnectRequest(): Uint8Array {
  return encodeRdmaCmRequest({ qid: 0, hrqsize: ADMIN_DEPTH, hsqsize: ADMIN_DEPTH - 1 });
}

/**
 * The NVMe/RDMA reject status in CM private data (`struct nvme_rdma_cm_rej`), if it is one the
 * kernel's nvme-rdma.h names.
 */
export function nvmeRejectStatus(data: Uint8Array): number | undefined {
  const rej = decodeRdmaCmReject(data);
  return rej && RDMA_CM_REJECT[rej.sts] ? rej.sts : undefined;
}

/** The crqsize of an NVMe/RDMA accept (`struct nvme_rdma_cm_rep`), if it is one. */
export function nvmeAcceptQueueSize(data: Uint8Array): number | undefined {
  const rep = decodeRdmaCmAccept(data);
  return rep?.recfmt === 0 ? rep.crqsize : undefined;
}

/** What the probe saw. */
export interface ProbeOutcome {
  traddr: string;
  trsvcid: number;
  /** The step the answer came at. */
  stage: "address" | "route" | "connect";
  /** CM event name (ESTABLISHED when the request was accepted and completed), or TIMEOUT. */
  event: string;
  /** -errno, or the IB CM reject reason for REJECTED. */
  status: number;
  privateData: Uint8Array;
  /** The local side chosen by address resolution. */
  src?: { addr: string; device: string; port: number };
  /** The wait bound when event is TIMEOUT. */
  timeoutMs?: number;
  /** Connect requests sent in all (the doctor repeats one met by silence). */
  attempts?: number;
  /** A local failure (no librdmacm, no rdma_cm device …) before anything was sent. */
  localError?: string;
}

function sockaddrText(b: Uint8Array): string {
  return parseSockaddr(b)?.address ??
    `family ${new DataView(b.buffer, b.byteOffset).getUint16(0, true)}`;
}

function localSide(id: CmId): ProbeOutcome["src"] {
  return { addr: sockaddrText(id.sourceAddress), device: id.deviceName ?? "?", port: id.portNum };
}

function toRts(id: CmId, qp: QueuePair): void {
  for (const state of [IBV_QPS.INIT, IBV_QPS.RTR, IBV_QPS.RTS]) {
    id.moveQp(qp, state, `Cannot move the probe's queue pair to state ${state}`);
  }
}

/**
 * Resolves, routes and sends the admin-queue connect request to traddr:trsvcid; returns the CM's
 * answer. Each wait is bounded by `timeoutMs`.
 */
export async function probeNvmeRdma(
  traddr: string,
  trsvcid: number,
  opts: { timeoutMs: number },
): Promise<ProbeOutcome> {
  const base = { traddr, trsvcid, privateData: new Uint8Array(0), status: 0 };
  let dst: Uint8Array;
  try {
    dst = sockaddr(traddr, trsvcid);
  } catch (err) {
    return { ...base, stage: "address", event: "NONE", localError: (err as Error).message };
  }
  using stack = new DisposableStack();
  let channel: EventChannel;
  let id: CmId;
  try {
    channel = stack.use(new EventChannel());
    id = stack.use(CmId.create(channel));
  } catch (err) {
    const e = err as Error & { hint?: string };
    return {
      ...base,
      stage: "address",
      event: "NONE",
      localError: e.message + (e.hint ? ` ${e.hint}` : ""),
    };
  }
  const mine = (ev: CmEvent) => samePointer(ev.id, id.pointer);
  const wait = async (what: string): Promise<CmEvent | undefined> => {
    try {
      return await channel.next(opts.timeoutMs, what, undefined, mine);
    } catch (err) {
      if (err instanceof WaitTimeoutError) return undefined;
      throw err;
    }
  };
  const answer = (
    stage: ProbeOutcome["stage"],
    ev: CmEvent | undefined,
    src?: ProbeOutcome["src"],
  ) =>
    ev
      ? { ...base, stage, event: ev.name, status: ev.status, privateData: ev.privateData, src }
      : { ...base, stage, event: "TIMEOUT", timeoutMs: opts.timeoutMs, src };

  id.resolveAddr(dst, Math.min(opts.timeoutMs, 3000));
  const a = await wait("ADDR_RESOLVED");
  if (a?.type !== E.ADDR_RESOLVED) return answer("address", a);
  const src = localSide(id);
  id.resolveRoute(Math.min(opts.timeoutMs, 3000));
  const r = await wait("ROUTE_RESOLVED");
  if (r?.type !== E.ROUTE_RESOLVED) return answer("route", r, src);

  const ctx = id.verbs;
  if (!ctx) return { ...answer("route", r, src), localError: "the CM id has no device" };
  const pd = stack.use(new ProtectionDomain(ctx));
  const cq = stack.use(new CompletionQueue(ctx, 4));
  const qp = new QueuePair(pd, cq, { maxSendWr: 1, maxRecvWr: 1 });
  stack.defer(() => qp.close()); // before the CQ and PD it uses
  id.moveQp(qp, IBV_QPS.INIT, "Cannot move the probe's queue pair to INIT");
  id.connect({
    privateData: adminConnectRequest(),
    qpNum: qp.qpNum,
    responderResources: 1,
    initiatorDepth: 1,
  });
  const c = await wait("the answer to the connect request");
  if (c?.type !== E.CONNECT_RESPONSE) return answer("connect", c, src);
  try {
    toRts(id, qp);
    id.establish();
  } catch (err) {
    return {
      ...answer("connect", c, src),
      event: "CONNECT_ERROR",
      localError: (err as Error).message,
    };
  }
  const out = { ...answer("connect", c, src), event: "ESTABLISHED" };
  id.disconnect();
  // The local DISCONNECTED follows the peer's reply (or the CM's timeout): wait briefly for it.
  await wait("DISCONNECTED");
  return out;
}
