/**
 * The NVMe/TCP PDUs of connection setup, byte for byte (little-endian), as
 * include/linux/nvme-tcp.h lays them out: the 8-byte common header, the Initialize Connection
 * Request a host sends first (ICReq, 128 bytes), the target's answer (ICResp, 128 bytes), and the
 * Terminate Connection Request a target sends instead when it refuses the connection
 * (C2HTermReq, 24 bytes).
 */

/** PDU types (enum nvme_tcp_pdu_type). */
export const NVME_TCP_PDU = {
  ICREQ: 0x00,
  ICRESP: 0x01,
  H2C_TERM: 0x02,
  C2H_TERM: 0x03,
  CMD: 0x04,
  RSP: 0x05,
  H2C_DATA: 0x06,
  C2H_DATA: 0x07,
  R2T: 0x09,
} as const;

/** PDU Format Version 1.0 (NVME_TCP_PFV_1_0), the only one there is. */
export const NVME_TCP_PFV_1_0 = 0;

/** The digest bits of ICReq/ICResp (enum nvme_tcp_digest_option). */
export const NVME_TCP_DIGEST = { HDR: 1 << 0, DATA: 1 << 1 } as const;

/** The common header's size. */
export const PDU_HEADER_SIZE = 8;
/** ICReq and ICResp are 128 bytes each: hlen = plen = 128, no data. */
export const IC_PDU_SIZE = 128;
/** C2HTermReq/H2CTermReq header: hlen 24 (its data, when any, is the offending header). */
export const TERM_PDU_HEADER_SIZE = 24;

/** Fatal error status of a terminate request (enum nvme_tcp_fatal_error_status). */
export const NVME_TCP_FES: Record<number, string> = {
  0x01: "invalid PDU header field",
  0x02: "PDU sequence error",
  0x03: "header digest error",
  0x04: "data transfer out of range",
  0x05: "R2T limit or data limit exceeded",
  0x06: "unsupported parameter",
};

/** struct nvme_tcp_hdr. */
export interface PduHeader {
  type: number;
  flags: number;
  hlen: number;
  pdo: number;
  plen: number;
}

/** What an ICReq carries besides its header. */
export interface IcReqOptions {
  /** Host PDU data alignment (dwords, 0's based); Linux hosts send 0. */
  hpda?: number;
  /** Ask for a CRC32C header digest. */
  hdgst?: boolean;
  /** Ask for a CRC32C data digest. */
  ddgst?: boolean;
  /** Maximum outstanding R2Ts per command, 0's based; Linux hosts send 0 (one). */
  maxr2t?: number;
}

/** The fields of an ICResp. */
export interface IcResp {
  pfv: number;
  /** Controller PDU data alignment (dwords, 0's based). */
  cpda: number;
  /** Header digest enabled (the target's answer to the request). */
  hdgst: boolean;
  /** Data digest enabled. */
  ddgst: boolean;
  /** Largest H2CData PDU the target accepts, in bytes (MAXH2CDATA). */
  maxh2cdata: number;
}

/** The fields of a terminate request. */
export interface TermReq {
  /** C2H (from a target) or H2C. */
  type: number;
  fes: number;
  fei: number;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** The common header at the start of `b`, or undefined when fewer than 8 bytes came. */
export function decodePduHeader(b: Uint8Array): PduHeader | undefined {
  if (b.length < PDU_HEADER_SIZE) return undefined;
  return { type: b[0], flags: b[1], hlen: b[2], pdo: b[3], plen: view(b).getUint32(4, true) };
}

/** The 128-byte ICReq a Linux host sends (drivers/nvme/host/tcp.c nvme_tcp_init_connection). */
export function encodeIcReq(o: IcReqOptions = {}): Uint8Array {
  const b = new Uint8Array(IC_PDU_SIZE);
  const dv = view(b);
  b[0] = NVME_TCP_PDU.ICREQ;
  b[1] = 0; // flags
  b[2] = IC_PDU_SIZE; // hlen
  b[3] = 0; // pdo
  dv.setUint32(4, IC_PDU_SIZE, true); // plen
  dv.setUint16(8, NVME_TCP_PFV_1_0, true); // pfv
  b[10] = o.hpda ?? 0;
  b[11] = (o.hdgst ? NVME_TCP_DIGEST.HDR : 0) | (o.ddgst ? NVME_TCP_DIGEST.DATA : 0);
  dv.setUint32(12, o.maxr2t ?? 0, true);
  return b;
}

/**
 * The ICResp in `b`, or why it is not one: too short, another PDU type, or a header length the
 * spec does not give an ICResp (hlen and plen 128, pdo 0).
 */
export function decodeIcResp(b: Uint8Array): IcResp | { error: string } {
  const h = decodePduHeader(b);
  if (!h) return { error: `${b.length} byte(s), less than a PDU header` };
  if (h.type !== NVME_TCP_PDU.ICRESP) return { error: `PDU type ${h.type}, not ICResp (1)` };
  if (h.hlen !== IC_PDU_SIZE || h.plen !== IC_PDU_SIZE || h.pdo !== 0) {
    return {
      error: `ICResp with hlen ${h.hlen}, pdo ${h.pdo}, plen ${h.plen} (the spec says 128, 0, 128)`,
    };
  }
  if (b.length < IC_PDU_SIZE) return { error: `ICResp cut short at ${b.length} of 128 bytes` };
  const dv = view(b);
  return {
    pfv: dv.getUint16(8, true),
    cpda: b[10],
    hdgst: (b[11] & NVME_TCP_DIGEST.HDR) !== 0,
    ddgst: (b[11] & NVME_TCP_DIGEST.DATA) !== 0,
    maxh2cdata: dv.getUint32(12, true),
  };
}

/** The terminate request in `b` (C2H or H2C), when `b` holds one's 24-byte header. */
export function decodeTermReq(b: Uint8Array): TermReq | undefined {
  const h = decodePduHeader(b);
  if (!h || (h.type !== NVME_TCP_PDU.C2H_TERM && h.type !== NVME_TCP_PDU.H2C_TERM)) {
    return undefined;
  }
  if (h.hlen !== TERM_PDU_HEADER_SIZE || b.length < TERM_PDU_HEADER_SIZE) return undefined;
  const dv = view(b);
  return { type: h.type, fes: dv.getUint16(8, true), fei: dv.getUint32(10, true) };
}
