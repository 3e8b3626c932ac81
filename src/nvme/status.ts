/**
 * NVMe/RDMA CM rejects: what the target's reject of a queue (struct nvme_rdma_cm_rej) means, and
 * the error that carries it. The NVMe completion status itself is fabrics/nvme_status.ts.
 */
import { FailureError } from "../errors.ts";
import { decodeRdmaCmReject, RDMA_CM_REJECT } from "./capsule.ts";

/** What each NVMe/RDMA CM reject status means, from the host's side (nvmet-rdma's checks). */
const RDMA_CM_REJECT_MEANING: Readonly<Record<number, string>> = {
  1: "the connect request carried no NVMe/RDMA private data, or too little",
  2: "the target does not know the record format (recfmt) of the connect request",
  3: "the queue ID is not valid for this controller",
  4: "the queue size the host asked for is larger than the target allows",
  5: "the receive queue size the host asked for is not valid for the target",
  6: "the target has no resources for another queue",
  7: "the RDMA read depth (IRD) the host offered is not valid for the target",
  8: "the RDMA read depth (ORD) the host asked for is not valid for the target",
  9: "the controller ID in the I/O queue's request does not name a controller of this host",
};

/** A decoded NVMe/RDMA CM reject. */
export interface RdmaCmRejectInfo {
  /** The reject's status (struct nvme_rdma_cm_rej.sts). */
  sts: number;
  /** NVME_RDMA_CM_INVALID_HSQSIZE …, or "NVME_RDMA_CM status 0x0a" for a value not in nvme-rdma.h. */
  name: string;
  /** What it means, in a sentence fragment. */
  meaning: string;
  /** What to do about it. */
  hint: string;
}

function rejectHint(sts: number, q: { qid?: number; depth?: number }): string {
  const admin = q.qid === 0;
  switch (sts) {
    case 1:
    case 2:
      return "The host must send the 32-byte NVMe/RDMA connect record (recfmt 0): this is a bug " +
        "in the initiator.";
    case 3:
      return "Ask for fewer I/O queues: at most what Set Features (Number of Queues) granted " +
        "(the subsystem's attr_qid_max on a Linux target).";
    case 4:
      return admin
        ? "The admin queue holds at most 32 entries (NVME_AQ_DEPTH): open it with a depth of 32 " +
          "or less."
        : "Ask for a smaller queue (nvmeof bench --qd N): at most the controller's CAP.MQES + 1.";
    case 5:
      return "Ask for a smaller queue (nvmeof bench --qd N); the receive queue must match the " +
        "submission queue.";
    case 6:
      return "Use fewer queues or a smaller depth, or free memory on the target; its kernel log " +
        "(dmesg, nvmet_rdma) says what it could not allocate.";
    case 7:
    case 8:
      return "Check the RDMA device's max_qp_rd_atom on both sides (nvmeof rdma devices); the " +
        "host must not ask for more outstanding RDMA reads than the target's device allows.";
    case 9:
      return "Connect the admin queue first and use the controller ID its Fabrics Connect " +
        "returned; the controller may have gone away (keep-alive timeout).";
    default:
      return "The target's kernel log (dmesg, nvmet_rdma) names the reason.";
  }
}

/**
 * Decodes an NVMe/RDMA CM reject (the private data of a REJECTED event) into its name, meaning
 * and a fix hint; undefined when the data is not an NVMe/RDMA reject (see decodeRdmaCmReject).
 * `queue` (the qid and depth asked for) makes the hint name the limit that applies.
 */
export function describeRdmaCmReject(
  data: Uint8Array,
  queue: { qid?: number; depth?: number } = {},
): RdmaCmRejectInfo | undefined {
  const rej = decodeRdmaCmReject(data);
  if (!rej) return undefined;
  const { sts } = rej;
  return {
    sts,
    name: RDMA_CM_REJECT[sts] ?? `NVME_RDMA_CM status 0x${sts.toString(16).padStart(2, "0")}`,
    meaning: RDMA_CM_REJECT_MEANING[sts] ?? "a reject status not in nvme-rdma.h",
    hint: rejectHint(sts, queue),
  };
}

/** The target refused an NVMe/RDMA queue at the RDMA-CM level, with an NVMe/RDMA reject record. */
export class RdmaCmRejectError extends FailureError {
  readonly reject: RdmaCmRejectInfo;
  /** The reject's private data as received (padded by the IB CM). */
  readonly rejectData: Uint8Array;
  readonly qid: number;

  constructor(
    where: string,
    queue: { qid: number; depth: number },
    reject: { info: RdmaCmRejectInfo; data: Uint8Array },
    options?: { cause?: unknown },
  ) {
    const { info } = reject;
    super(
      `The target at ${where} refused NVMe queue ${queue.qid} (depth ${queue.depth}): ` +
        `${info.name} (${info.sts}): ${info.meaning}.`,
      { cause: options?.cause, hint: info.hint },
    );
    this.reject = info;
    this.rejectData = reject.data;
    this.qid = queue.qid;
  }
}
