/**
 * NVMe completion status: decoding the 15-bit status field (SC, SCT, CRD, M, DNR) into names and
 * an error with a hint. Generic codes from the NVMe base spec; command-specific Fabrics codes
 * (Connect) from the NVMe-oF spec as libnvme names them.
 */
import { FailureError } from "../errors.ts";
import { decodeRdmaCmReject, RDMA_CM_REJECT } from "./capsule.ts";

const GENERIC: Readonly<Record<number, string>> = {
  0x00: "successful completion",
  0x01: "invalid command opcode",
  0x02: "invalid field in command",
  0x03: "command ID conflict",
  0x04: "data transfer error",
  0x05: "commands aborted due to power loss notification",
  0x06: "internal error",
  0x07: "command abort requested",
  0x08: "command aborted due to SQ deletion",
  0x0b: "invalid namespace or format",
  0x0c: "command sequence error",
  0x0d: "invalid SGL segment descriptor",
  0x0e: "invalid number of SGL descriptors",
  0x0f: "data SGL length invalid",
  0x11: "SGL descriptor type invalid",
  0x15: "SGL offset invalid",
  0x16: "SGL sub type invalid",
  0x80: "LBA out of range",
  0x81: "capacity exceeded",
  0x82: "namespace not ready",
};

/** Command specific (SCT 1) codes of the Fabrics commands (Connect, Property Get/Set). */
const FABRICS_SPECIFIC: Readonly<Record<number, string>> = {
  0x80: "incompatible format (CONNECT_FORMAT)",
  0x81: "controller busy (CONNECT_CTRL_BUSY)",
  0x82: "connect invalid parameters: unknown subsystem NQN or bad value (CONNECT_INVALID_PARAM)",
  0x83: "connect restart discovery (CONNECT_RESTART_DISC)",
  0x84: "connect invalid host: the subsystem does not allow this host NQN (CONNECT_INVALID_HOST)",
  0x90: "discovery restart",
  0x91: "authentication required",
};

const SPECIFIC: Readonly<Record<number, string>> = {
  0x01: "invalid completion queue",
  0x02: "invalid queue identifier",
  0x03: "invalid queue size",
  0x09: "invalid log page",
  0x0b: "invalid firmware image",
};

const MEDIA: Readonly<Record<number, string>> = {
  0x80: "write fault",
  0x81: "unrecovered read error",
  0x86: "access denied",
  0x87: "deallocated or unwritten logical block",
};

export interface StatusInfo {
  /** The status field value as the kernel logs it (SCT << 8 | SC, with DNR 0x4000, M 0x2000). */
  status: number;
  sct: number;
  sc: number;
  dnr: boolean;
  more: boolean;
  name: string;
}

/** Decodes a status field (CQE dword 3 bits 31:17, i.e. without the phase bit). */
export function decodeStatus(status: number, fabrics = false): StatusInfo {
  const sc = status & 0xff;
  const sct = (status >> 8) & 0x7;
  const table = sct === 0
    ? GENERIC
    : sct === 1
    ? (fabrics ? { ...SPECIFIC, ...FABRICS_SPECIFIC } : SPECIFIC)
    : sct === 2
    ? MEDIA
    : {};
  const kind = ["generic", "command specific", "media and data integrity", "path related"][sct] ??
    "vendor specific";
  return {
    status,
    sct,
    sc,
    dnr: (status & 0x4000) !== 0,
    more: (status & 0x2000) !== 0,
    name: table[sc] ?? `${kind} status 0x${sc.toString(16).padStart(2, "0")}`,
  };
}

/** The hex form of the status without DNR/M, as in 0x184. */
export function statusHex(status: number): string {
  return "0x" + (status & 0x7ff).toString(16).padStart(3, "0");
}

/** How to read a status, and what to name in its hint. */
export interface NvmeStatusOptions {
  /** A Fabrics command (Connect, Property Get/Set): its command-specific codes apply. */
  fabrics?: boolean;
  subnqn?: string;
  hostnqn?: string;
}

/** A command that completed with a non-zero NVMe status. */
export class NvmeStatusError extends FailureError {
  readonly info: StatusInfo;
  constructor(what: string, status: number, options: NvmeStatusOptions = {}) {
    const { fabrics = false, subnqn, hostnqn } = options;
    const info = decodeStatus(status, fabrics);
    const sc = info.sct === 1 ? info.sc : -1;
    const hint = fabrics && sc === 0x84
      ? `Allow the host on the target: link hosts/${hostnqn ?? "HOSTNQN"} into the ` +
        "subsystem's allowed_hosts (or set attr_allow_any_host), or pass the allowed -q/--hostnqn."
      : fabrics && sc === 0x82
      ? `Check the subsystem NQN${subnqn ? ` '${subnqn}'` : ""}: it must exist and be ` +
        "linked to the port you reached (nvmeof probe -a ADDR lists the ones offered to you)."
      : fabrics && sc === 0x81
      ? "The target has no free controller; retry later."
      : undefined;
    super(
      `${what} failed: NVMe status ${statusHex(status)} (${info.name})${info.dnr ? ", DNR" : ""}.`,
      { hint },
    );
    this.info = info;
  }
}

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
