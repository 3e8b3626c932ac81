/**
 * NVMe over Fabrics capsules, byte for byte (little-endian): the 64-byte submission queue entry
 * with a keyed SGL data block (NVMe/RDMA: the target RDMA-READs or RDMA-WRITEs our registered
 * memory), the 16-byte completion queue entry, the Fabrics Connect command and its 1024-byte
 * data, Property Get/Set, Identify, Get Log Page, Keep Alive, Read and Write, and the
 * NVMe/RDMA CM private data. Offsets: NVMe base spec (SQE/CQE), NVMe-oF spec (Fabrics commands),
 * include/linux/nvme-rdma.h (CM private data).
 */

export const SQE_SIZE = 64;
export const CQE_SIZE = 16;
export const CONNECT_DATA_SIZE = 1024;

/** Admin opcodes. */
export const ADMIN = {
  GET_LOG_PAGE: 0x02,
  IDENTIFY: 0x06,
  SET_FEATURES: 0x09,
  KEEP_ALIVE: 0x18,
  FABRICS: 0x7f,
} as const;

/** NVM command set opcodes. */
export const IO = { FLUSH: 0x00, WRITE: 0x01, READ: 0x02 } as const;

/** Fabrics command types (SQE byte 4). */
export const FCTYPE = { PROPERTY_SET: 0x00, CONNECT: 0x01, PROPERTY_GET: 0x04 } as const;

/** Controller properties (offset, size in bytes). */
export const PROP = {
  CAP: { offset: 0x00, size: 8 },
  VS: { offset: 0x08, size: 4 },
  CC: { offset: 0x14, size: 4 },
  CSTS: { offset: 0x1c, size: 4 },
} as const;

/** SQE flags byte: PSDT = 01b, SGLs for data, metadata as a buffer (NVME_CMD_SGL_METABUF). */
export const FLAGS_SGL = 0x40;
/** SGL descriptor type byte: keyed SGL data block (4h), subtype address (0h). */
export const SGL_KEYED_ADDRESS = 0x40;

/** A place in registered memory the target may reach: address, length, remote key. */
export interface KeyedSgl {
  addr: bigint;
  length: number;
  key: number;
}

/** An SQE being built, over a 64-byte view (zeroed by `begin`). */
export class Sqe {
  readonly bytes: Uint8Array;
  readonly view: DataView;

  constructor(bytes: Uint8Array = new Uint8Array(SQE_SIZE)) {
    if (bytes.length < SQE_SIZE) throw new RangeError("an SQE needs 64 bytes");
    this.bytes = bytes.subarray(0, SQE_SIZE);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, SQE_SIZE);
  }

  /** Zeroes the entry and sets opcode, SGL flags and command id. */
  begin(opcode: number, cid: number, nsid = 0): this {
    this.bytes.fill(0);
    this.view.setUint8(0, opcode);
    this.view.setUint8(1, FLAGS_SGL);
    this.view.setUint16(2, cid, true);
    this.view.setUint32(4, nsid, true);
    return this;
  }

  /** The keyed SGL data block in DPTR (bytes 24–39); length 0 means no data (a null SGL). */
  sgl(s: KeyedSgl | undefined): this {
    const dv = this.view;
    if (!s || s.length === 0) {
      dv.setBigUint64(24, 0n, true);
      dv.setUint32(32, 0, true);
      dv.setUint32(35, 0, true);
    } else {
      if (s.length > 0xffffff) throw new RangeError(`keyed SGL length ${s.length} > 2^24-1`);
      dv.setBigUint64(24, s.addr, true);
      dv.setUint16(32, s.length & 0xffff, true);
      dv.setUint8(34, s.length >>> 16);
      dv.setUint32(35, s.key, true);
    }
    dv.setUint8(39, SGL_KEYED_ADDRESS);
    return this;
  }

  /** Command dword n (10–15) at byte 4·n. */
  cdw(n: number, value: number): this {
    this.view.setUint32(4 * n, value >>> 0, true);
    return this;
  }

  get cid(): number {
    return this.view.getUint16(2, true);
  }
}

/** Fabrics Connect (qid 0 = admin). `sqsize` is 0-based; `kato` in ms. */
export function connectSqe(
  sqe: Sqe,
  cid: number,
  o: { qid: number; sqsize: number; kato: number },
  data: KeyedSgl,
): Sqe {
  sqe.begin(ADMIN.FABRICS, cid).sgl(data);
  sqe.view.setUint8(4, FCTYPE.CONNECT);
  sqe.view.setUint16(40, 0, true); // recfmt
  sqe.view.setUint16(42, o.qid, true);
  sqe.view.setUint16(44, o.sqsize, true);
  sqe.view.setUint8(46, 0); // cattr
  sqe.view.setUint32(48, o.kato, true);
  return sqe;
}

/** Connect data: hostid (16 bytes) @0, cntlid @16, subnqn @256, hostnqn @512. */
export function encodeConnectData(
  o: { hostid: string; cntlid: number; subnqn: string; hostnqn: string },
  out: Uint8Array = new Uint8Array(CONNECT_DATA_SIZE),
): Uint8Array {
  out.fill(0, 0, CONNECT_DATA_SIZE);
  out.set(uuidBytes(o.hostid), 0);
  new DataView(out.buffer, out.byteOffset).setUint16(16, o.cntlid, true);
  const enc = new TextEncoder();
  const sub = enc.encode(o.subnqn);
  const host = enc.encode(o.hostnqn);
  if (sub.length > 255 || host.length > 255) throw new RangeError("NQN longer than 255 bytes");
  out.set(sub, 256);
  out.set(host, 512);
  return out;
}

/** The 16 bytes of an 8-4-4-4-12 UUID, in text order. */
export function uuidBytes(uuid: string): Uint8Array {
  const hex = uuid.replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new RangeError(`'${uuid}' is not a UUID`);
  const b = new Uint8Array(16);
  for (let i = 0; i < 16; i++) b[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return b;
}

/** Property Get (the value comes back in CQE dwords 0–1). */
export function propertyGetSqe(sqe: Sqe, cid: number, prop: { offset: number; size: number }) {
  sqe.begin(ADMIN.FABRICS, cid).sgl(undefined);
  sqe.view.setUint8(4, FCTYPE.PROPERTY_GET);
  sqe.view.setUint8(40, prop.size === 8 ? 1 : 0);
  sqe.view.setUint32(44, prop.offset, true);
  return sqe;
}

/** Property Set. */
export function propertySetSqe(
  sqe: Sqe,
  cid: number,
  prop: { offset: number; size: number },
  value: bigint,
) {
  sqe.begin(ADMIN.FABRICS, cid).sgl(undefined);
  sqe.view.setUint8(4, FCTYPE.PROPERTY_SET);
  sqe.view.setUint8(40, prop.size === 8 ? 1 : 0);
  sqe.view.setUint32(44, prop.offset, true);
  sqe.view.setBigUint64(48, value, true);
  return sqe;
}

/** Identify: CNS 0 namespace, 1 controller, 2 active namespace list (ids above `nsid`). */
export function identifySqe(sqe: Sqe, cid: number, cns: number, nsid: number, data: KeyedSgl) {
  return sqe.begin(ADMIN.IDENTIFY, cid, nsid).sgl(data).cdw(10, cns & 0xff);
}

/** Get Log Page for `data.length` bytes of log `lid` at byte `offset` (dword aligned). */
export function getLogPageSqe(
  sqe: Sqe,
  cid: number,
  lid: number,
  offset: number,
  data: KeyedSgl,
) {
  if (data.length % 4 || offset % 4) throw new RangeError("Get Log Page needs dword alignment");
  const numd = data.length / 4 - 1;
  return sqe.begin(ADMIN.GET_LOG_PAGE, cid, 0).sgl(data)
    .cdw(10, (lid & 0xff) | ((numd & 0xffff) << 16))
    .cdw(11, numd >>> 16)
    .cdw(12, offset % 0x100000000)
    .cdw(13, Math.floor(offset / 0x100000000));
}

/** Keep Alive. */
export function keepAliveSqe(sqe: Sqe, cid: number) {
  return sqe.begin(ADMIN.KEEP_ALIVE, cid).sgl(undefined);
}

/** Read or Write of `nlb` blocks (1-based count) at `slba`. */
export function rwSqe(
  sqe: Sqe,
  opcode: number,
  cid: number,
  nsid: number,
  slba: number,
  nlb: number,
  data: KeyedSgl,
) {
  sqe.begin(opcode, cid, nsid).sgl(data);
  sqe.view.setBigUint64(40, BigInt(slba), true);
  sqe.view.setUint16(48, nlb - 1, true);
  return sqe;
}

/** A decoded completion queue entry. */
export interface Cqe {
  /** Dwords 0–1 (command specific: Connect's cntlid in bits 15:0, a property's value). */
  result: bigint;
  sqHead: number;
  sqId: number;
  cid: number;
  /** Status field without the phase bit: SC bits 7:0, SCT 10:8, CRD 12:11, M 13, DNR 14. */
  status: number;
}

export function decodeCqe(b: Uint8Array, off = 0): Cqe {
  const dv = new DataView(b.buffer, b.byteOffset + off, CQE_SIZE);
  return {
    result: dv.getBigUint64(0, true),
    sqHead: dv.getUint16(8, true),
    sqId: dv.getUint16(10, true),
    cid: dv.getUint16(12, true),
    status: dv.getUint16(14, true) >> 1,
  };
}

/** NVMe/RDMA CM request private data (32 bytes). hsqsize is 0-based. */
export function encodeRdmaCmRequest(
  o: { qid: number; hrqsize: number; hsqsize: number; cntlid?: number },
): Uint8Array {
  const b = new Uint8Array(32);
  const dv = new DataView(b.buffer);
  dv.setUint16(0, 0, true);
  dv.setUint16(2, o.qid, true);
  dv.setUint16(4, o.hrqsize, true);
  dv.setUint16(6, o.hsqsize, true);
  dv.setUint16(8, o.cntlid ?? 0, true);
  return b;
}

/** NVMe/RDMA CM accept private data: recfmt, crqsize. */
export function decodeRdmaCmAccept(b: Uint8Array): { recfmt: number; crqsize: number } | undefined {
  if (b.length < 4) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.length);
  return { recfmt: dv.getUint16(0, true), crqsize: dv.getUint16(2, true) };
}

/**
 * NVMe/RDMA CM reject private data (struct nvme_rdma_cm_rej: __le16 recfmt, __le16 sts), or
 * undefined when it is not one: fewer than 4 bytes, a record format other than 1.0 (0), or a
 * zero status. Only the first 4 bytes are read: the kernel's IB CM pads a REJ's private data to
 * a fixed 148 bytes.
 */
export function decodeRdmaCmReject(b: Uint8Array): { recfmt: number; sts: number } | undefined {
  if (b.length < 4) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, 4);
  const recfmt = dv.getUint16(0, true);
  const sts = dv.getUint16(2, true);
  if (recfmt !== 0 || sts === 0) return undefined;
  return { recfmt, sts };
}

/** NVMe/RDMA CM reject status: the target ran out of queues or memory (nvme-rdma.h). */
export const NVME_RDMA_CM_NO_RSC = 6;

/** NVMe/RDMA CM reject status names (nvme-rdma.h). */
export const RDMA_CM_REJECT: Readonly<Record<number, string>> = {
  1: "NVME_RDMA_CM_INVALID_LEN",
  2: "NVME_RDMA_CM_INVALID_RECFMT",
  3: "NVME_RDMA_CM_INVALID_QID",
  4: "NVME_RDMA_CM_INVALID_HSQSIZE",
  5: "NVME_RDMA_CM_INVALID_HRQSIZE",
  6: "NVME_RDMA_CM_NO_RSC",
  7: "NVME_RDMA_CM_INVALID_IRD",
  8: "NVME_RDMA_CM_INVALID_ORD",
  9: "NVME_RDMA_CM_INVALID_CNTLID",
};
