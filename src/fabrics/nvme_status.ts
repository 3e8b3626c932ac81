/**
 * NVMe completion status: decoding the 15-bit status field (SC, SCT, CRD, M, DNR) into names and
 * an error with a hint. Generic codes from the NVMe base spec; command-specific Fabrics codes
 * (Connect) from the NVMe-oF spec as libnvme names them. One definition for both paths that meet
 * a status: the kernel's admin passthrough ioctl (fabrics/admin.ts) and the user-space NVMe/RDMA
 * host (nvme/).
 */
import { FailureError } from "../errors.ts";

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
