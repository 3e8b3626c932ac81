/**
 * Reachability in user space: resolve the address and route to the target with RDMA-CM, then
 * send the NVMe/RDMA admin-queue connect request a Linux host sends (include/linux/nvme-rdma.h struct nvme_rdma_cm_req: recfmt 0, qid 0,
 * hrqsize 32, hsqsize 31) and keep the raw CM event, whatever it is. An accepted request is
 * completed (QP to RTS, RTU sent) and disconnected at once, so the target frees its queue.
 * `classifyProbe` turns the event into a verdict.
 */
import { softRoceCommand } from "../rdma/soft_roce.ts";
import { IB_CM_REJ, IB_CM_REJ_REASON, IBV_QPS, RDMA_CM_EVENT_TYPE as E } from "../../ffi/enums.ts";
import { errnoName } from "../errors.ts";
import {
  decodeRdmaCmAccept,
  decodeRdmaCmReject,
  encodeRdmaCmRequest,
  NVME_RDMA_CM_NO_RSC,
  RDMA_CM_REJECT,
} from "../nvme/capsule.ts";
import { ADMIN_DEPTH } from "../nvme/controller.ts";
import { describeRdmaCmReject } from "../nvme/status.ts";
import { type CmEvent, CmId, EventChannel, samePointer } from "../rdma/cm.ts";
import { hostPort, parseSockaddr, sockaddr } from "../net/address.ts";
import { CompletionQueue, ProtectionDomain, QueuePair } from "../rdma/verbs.ts";
import { WaitTimeoutError } from "../wait.ts";
import { type Check, check } from "./check.ts";

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

/** The probe's answer as a check. */
export function classifyProbe(o: ProbeOutcome): Check {
  const id = "reach.listener";
  const where = hostPort(o.traddr, o.trsvcid);
  const st = o.status < 0 ? `${errnoName(-o.status)} (${o.status})` : String(o.status);
  const from = o.src ? ` from ${o.src.addr} (${o.src.device} port ${o.src.port})` : "";
  const portFix =
    `on the target, create an rdma port for ${o.traddr} ${o.trsvcid} and link a subsystem to it ` +
    `(nvmeof target up, or: mkdir /sys/kernel/config/nvmet/ports/1; echo rdma > addr_trtype; echo ipv4 > addr_adrfam; ` +
    `echo ${o.traddr} > addr_traddr; echo ${o.trsvcid} > addr_trsvcid; ln -s /sys/kernel/config/nvmet/subsystems/NQN ` +
    `/sys/kernel/config/nvmet/ports/1/subsystems/NQN), or connect to the address and port it does listen on`;
  if (o.localError && o.event === "NONE") {
    return check(id, "skip", `could not run the RDMA-CM probe: ${o.localError}`);
  }
  switch (o.event) {
    case "ESTABLISHED": {
      const q = nvmeAcceptQueueSize(o.privateData);
      return check(
        id,
        "ok",
        `an NVMe/RDMA target at ${where} accepted an admin-queue connect${from}` +
          (q !== undefined ? ` (crqsize ${q})` : "") + "; disconnected again",
      );
    }
    case "REJECTED": {
      const sts = nvmeRejectStatus(o.privateData);
      if (o.status === IB_CM_REJ.CONSUMER_DEFINED && sts !== undefined) {
        return check(
          id,
          "warn",
          `an NVMe/RDMA target listens at ${where} but rejected the admin-queue request: NVMe/RDMA status ` +
            `${sts} (${RDMA_CM_REJECT[sts]}: ${describeRdmaCmReject(o.privateData)?.meaning})`,
          sts === NVME_RDMA_CM_NO_RSC
            ? "the target is out of resources (queues or memory): check its kernel log and lower the number of hosts/queues"
            : "the target refused a standard Linux host request: check its kernel log (dmesg) for nvmet_rdma",
        );
      }
      if (o.status === IB_CM_REJ.INVALID_SERVICE_ID) {
        return check(
          id,
          "fail",
          `nothing listens at ${where}: the connect request was rejected with reason 8 (INVALID_SERVICE_ID)${from}`,
          portFix,
        );
      }
      if (o.status < 0) {
        return check(
          id,
          "fail",
          `the connect request to ${where} was refused (${st}, no reject reason: iWARP/siw): nothing listens there`,
          portFix,
        );
      }
      if (o.status === IB_CM_REJ.CONSUMER_DEFINED) {
        // Linux's RDMA-CM matches a request by port number, then by address; when the port number
        // has a listener bound to another address the request is refused this way, with no data.
        return check(
          id,
          "fail",
          `nothing listens at ${where} itself: the request was rejected with reason 28 (CONSUMER_DEFINED) ` +
            `and no NVMe/RDMA private data${from}; the target's RDMA-CM has a listener on port ${o.trsvcid} ` +
            "bound to another address, or what listens there is not an NVMe target",
          `compare the target's port addresses (grep . /sys/kernel/config/nvmet/ports/*/addr_traddr) with ` +
            `${o.traddr}; connect to the address the port is for, or ${portFix}`,
        );
      }
      const reason = IB_CM_REJ_REASON[o.status] ?? "unknown";
      return check(
        id,
        "fail",
        `the connect request to ${where} was rejected with reason ${o.status} (${reason})${from}`,
        "see the reject reason in include/rdma/ib_cm.h; check both sides' RDMA setup",
      );
    }
    case "UNREACHABLE":
      return check(
        id,
        "fail",
        `no answer to the connect request from ${where} (UNREACHABLE, ${st})${from}: nothing listens there, ` +
          "or the packets are blocked",
        `${portFix}; check that UDP port 4791 (RoCE v2) is open between the hosts`,
      );
    case "ADDR_ERROR":
      return check(
        id,
        "fail",
        `cannot resolve ${o.traddr} to an RDMA device (ADDR_ERROR, ${st}): no route to it through an RDMA ` +
          "netdev, or its neighbour (ARP) does not answer",
        `check 'ip route get ${o.traddr}' leaves through the RDMA NIC's netdev and that the target answers ping ` +
          `from that netdev; add Soft-RoCE where there is no RDMA NIC (${softRoceCommand()})`,
      );
    case "ROUTE_ERROR":
      return check(
        id,
        "fail",
        `cannot resolve an RDMA route to ${o.traddr} (ROUTE_ERROR, ${st})${from}`,
        `check the IP route to ${o.traddr} and that the netdev of ${
          o.src?.device ?? "the RDMA device"
        } is up`,
      );
    case "TIMEOUT":
      return check(
        id,
        "fail",
        `no CM answer from ${where} within ${o.timeoutMs} ms at the ${o.stage} step${from}: packets are dropped`,
        "check the firewalls for UDP 4791 (RoCE v2) on both hosts and the switch ACLs, the MTU end to end, " +
          "and that the fabric is lossless (PFC/ECN)",
      );
    case "CONNECT_ERROR":
      return check(
        id,
        "fail",
        `the connection to ${where} failed after the target accepted it (CONNECT_ERROR, ${st}${
          o.localError ? `; ${o.localError}` : ""
        })`,
        "check the path MTU and that both RDMA ports are ACTIVE (nvmeof rdma devices)",
      );
    default:
      return check(
        id,
        "fail",
        `unexpected CM event ${o.event} (${st}) while connecting to ${where}`,
      );
  }
}
