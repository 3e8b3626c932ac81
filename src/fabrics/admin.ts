/**
 * NVMe admin commands through the passthrough ioctl on a controller's char device /dev/nvmeN:
 * Get Log Page (discovery log) and Identify (active namespace list).
 */
import { cString, errno, libc, O_CLOEXEC, O_RDWR } from "../../ffi/libc.ts";
import { errnoName, NativeError } from "../errors.ts";
import { getLogPageDwords } from "./discovery_log.ts";

/** `_IOWR('N', 0x41, struct nvme_admin_cmd)` on x86_64. */
export const NVME_IOCTL_ADMIN_CMD = 0xC0484E41n;

/**
 * struct nvme_passthru_cmd (72 bytes, align 8), linux/nvme_ioctl.h:
 * ```c
 * struct nvme_passthru_cmd {
 *   __u8 opcode;        //  0
 *   __u8 flags;         //  1
 *   __u16 rsvd1;        //  2
 *   __u32 nsid;         //  4
 *   __u32 cdw2;         //  8
 *   __u32 cdw3;         // 12
 *   __u64 metadata;     // 16
 *   __u64 addr;         // 24
 *   __u32 metadata_len; // 32
 *   __u32 data_len;     // 36
 *   __u32 cdw10..cdw15; // 40 44 48 52 56 60
 *   __u32 timeout_ms;   // 64
 *   __u32 result;       // 68
 * };
 * ```
 */
export const PASSTHRU = {
  size: 72,
  opcode: 0,
  nsid: 4,
  addr: 24,
  data_len: 36,
  cdw10: 40,
  cdw11: 44,
  cdw12: 48,
  cdw13: 52,
  cdw14: 56,
  timeout_ms: 64,
  result: 68,
} as const;

/** Admin opcodes used here. */
export const ADMIN_OPCODE = { getLogPage: 0x02, identify: 0x06 } as const;

/** What `list` needs of an Identify Namespace data structure. */
export interface NamespaceIdentity {
  /** NSZE: the namespace's size in logical blocks. */
  nsze: bigint;
  /** NUSE: the logical blocks in use. */
  nuse: bigint;
  /** The logical block size of the format in use (bytes). */
  lbaSize: number;
  /** Metadata bytes per block of the format in use. */
  metaSize: number;
}

/**
 * Offsets in struct nvme_id_ns (NVMe Base 2.0, Identify Namespace): nsze @0 (u64), ncap @8,
 * nuse @16, nlbaf @25, flbas @26, lbaf[64] @128 (4 bytes each: ms u16, lbads u8, rp u8).
 */
export const ID_NS = { nsze: 0, nuse: 16, flbas: 26, lbaf: 128, lbafSize: 4 } as const;

/** FLBAS bits 3:0 are the format index's low bits, bits 6:5 its high bits (NVMe 2.0). */
const FLBAS_LOWER_MASK = 0x0f;
const FLBAS_HIGHER_MASK = 0x60;

/** Parses the fields of Identify Namespace that `list` shows (exported for tests). */
export function parseIdentifyNamespace(data: Uint8Array): NamespaceIdentity {
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const flbas = v.getUint8(ID_NS.flbas);
  const index = ((flbas & FLBAS_HIGHER_MASK) >> 1) | (flbas & FLBAS_LOWER_MASK);
  const lbaf = ID_NS.lbaf + index * ID_NS.lbafSize;
  return {
    nsze: v.getBigUint64(ID_NS.nsze, true),
    nuse: v.getBigUint64(ID_NS.nuse, true),
    lbaSize: 2 ** v.getUint8(lbaf + 2),
    metaSize: v.getUint16(lbaf, true),
  };
}

/** An admin command that returned an NVMe status (ioctl result > 0). */
export class NvmeStatusError extends NativeError {
  readonly status: number;
  constructor(what: string, status: number) {
    super("ioctl", 0, {
      message: `${what} failed with NVMe status 0x${status.toString(16)}` +
        `${status & 0x4000 ? " (do not retry)" : ""}.`,
    });
    this.status = status;
  }
}

/** Fields of one admin command; the data buffer is the command's read target. */
export interface AdminCommand {
  opcode: number;
  nsid?: number;
  cdw10?: number;
  cdw11?: number;
  cdw12?: number;
  cdw13?: number;
  cdw14?: number;
  timeoutMs?: number;
  data: Uint8Array;
}

/** Fills a 72-byte passthru struct for `cmd` (exported for tests). */
export function encodePassthru(cmd: AdminCommand): Uint8Array {
  const buf = new Uint8Array(PASSTHRU.size);
  const v = new DataView(buf.buffer);
  v.setUint8(PASSTHRU.opcode, cmd.opcode);
  v.setUint32(PASSTHRU.nsid, cmd.nsid ?? 0, true);
  const addr = cmd.data.length ? Deno.UnsafePointer.value(Deno.UnsafePointer.of(cmd.data)) : 0n;
  v.setBigUint64(PASSTHRU.addr, BigInt(addr), true);
  v.setUint32(PASSTHRU.data_len, cmd.data.length, true);
  v.setUint32(PASSTHRU.cdw10, cmd.cdw10 ?? 0, true);
  v.setUint32(PASSTHRU.cdw11, cmd.cdw11 ?? 0, true);
  v.setUint32(PASSTHRU.cdw12, cmd.cdw12 ?? 0, true);
  v.setUint32(PASSTHRU.cdw13, cmd.cdw13 ?? 0, true);
  v.setUint32(PASSTHRU.cdw14, cmd.cdw14 ?? 0, true);
  v.setUint32(PASSTHRU.timeout_ms, cmd.timeoutMs ?? 0, true);
  return buf;
}

/** An open controller char device (/dev/nvmeN) for admin commands; close it (or `using`). */
export class AdminDevice {
  #fd: number;
  readonly path: string;

  private constructor(fd: number, path: string) {
    this.#fd = fd;
    this.path = path;
  }

  /** Opens `path` read-write. Throws NativeError("open") with the errno. */
  static open(path: string): AdminDevice {
    const fd = libc().open(cString(path), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
      const e = errno();
      throw new NativeError("open", e, {
        message: `Cannot open '${path}': ${errnoName(e)} (${e}).`,
        hint: e === 13 ? "Run as root." : undefined,
      });
    }
    return new AdminDevice(fd, path);
  }

  /** Runs one admin command; returns the completion's result dword. */
  run(what: string, cmd: AdminCommand): number {
    if (this.#fd < 0) throw new Error(`${this.path} is closed`);
    const s = encodePassthru(cmd);
    const data = cmd.data; // keep the buffer referenced across the call
    const rc = libc().ioctl(this.#fd, NVME_IOCTL_ADMIN_CMD, s);
    if (rc < 0) {
      const e = errno();
      throw new NativeError("ioctl", e, {
        message: `${what} on '${this.path}' failed: ${errnoName(e)} (${e}).`,
      });
    }
    if (rc > 0) throw new NvmeStatusError(`${what} on '${this.path}'`, rc);
    void data;
    return new DataView(s.buffer).getUint32(PASSTHRU.result, true);
  }

  /** Reads `len` bytes of the discovery log at `offset`, in commands of at most 4096 bytes. */
  discoveryLog(offset: number, len: number): Uint8Array {
    const out = new Uint8Array(len);
    for (let done = 0; done < len;) {
      const n = Math.min(4096, len - done);
      const chunk = new Uint8Array(n);
      this.run("Get Log Page 0x70", {
        opcode: ADMIN_OPCODE.getLogPage,
        ...getLogPageDwords(n, offset + done),
        data: chunk,
      });
      out.set(chunk, done);
      done += n;
    }
    return out;
  }

  /** Identify CNS 0x02: the controller's active namespace IDs (up to 1024). */
  activeNamespaceIds(): number[] {
    const data = new Uint8Array(4096);
    this.run("Identify active namespace list", {
      opcode: ADMIN_OPCODE.identify,
      cdw10: 0x02,
      data,
    });
    const v = new DataView(data.buffer);
    const ids: number[] = [];
    for (let off = 0; off < 4096; off += 4) {
      const id = v.getUint32(off, true);
      if (id === 0) break;
      ids.push(id);
    }
    return ids;
  }

  /**
   * Identify CNS 0x00 for `nsid`: its size and use in logical blocks and its block format, as
   * nvme-cli's `list` reads them (on a namespace's block device, as libnvme does).
   */
  identifyNamespace(nsid: number): NamespaceIdentity {
    const data = new Uint8Array(4096);
    this.run("Identify namespace", { opcode: ADMIN_OPCODE.identify, nsid, cdw10: 0x00, data });
    return parseIdentifyNamespace(data);
  }

  /** Closes the fd; idempotent. */
  close(): void {
    if (this.#fd >= 0) {
      libc().close(this.#fd);
      this.#fd = -1;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
