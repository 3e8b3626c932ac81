/**
 * The discovery log page (log identifier 0x70): decoding the 1024-byte header and 1024-byte
 * entries (include/linux/nvme.h struct nvmf_disc_rsp_page_hdr/_entry), the names nvme-cli prints for each field (nvme-cli's nvme-print-stdout.c and nvme-print-json.c), and the Get Log
 * Page command words (NVMe Base Specification, Get Log Page; libnvme's nvme_get_log).
 */
import { FailureError } from "../errors.ts";

/** Log identifier of the discovery log page. */
export const DISCOVERY_LOG_ID = 0x70;
/** Size of the header and of each entry. */
export const HEADER_SIZE = 1024;
export const ENTRY_SIZE = 1024;
/** Bytes of the header that carry data (genctr, numrec, recfmt), rounded up to dwords. */
export const HEADER_READ_SIZE = 20;
/** Refuse a numrec beyond this (a corrupt header must not make us allocate gigabytes). */
export const MAX_RECORDS = 4096;

/** The header fields. */
export interface DiscoveryLogHeader {
  genctr: bigint;
  numrec: bigint;
  recfmt: number;
}

/** One entry, raw numbers and strings as the target sent them (padding stripped). */
export interface DiscoveryLogEntry {
  trtype: number;
  adrfam: number;
  subtype: number;
  treq: number;
  portid: number;
  cntlid: number;
  asqsz: number;
  eflags: number;
  trsvcid: string;
  subnqn: string;
  traddr: string;
  /** RDMA transport-specific address subtype (trtype 1). */
  rdma?: { qptype: number; prtype: number; cms: number; pkey: number };
  /** TCP security type (trtype 3). */
  tcp?: { sectype: number };
}

/** A decoded log: header and entries. */
export interface DiscoveryLog extends DiscoveryLogHeader {
  entries: DiscoveryLogEntry[];
}

/** A buffer that is not a discovery log (too short, inconsistent, or garbage). */
export class DiscoveryLogError extends FailureError {}

/** Decodes the header from the first 20 (or more) bytes. */
export function decodeHeader(buf: Uint8Array): DiscoveryLogHeader {
  if (buf.length < HEADER_READ_SIZE) {
    throw new DiscoveryLogError(
      `The discovery log header is truncated: ${buf.length} bytes, need ${HEADER_READ_SIZE}.`,
      { hint: "The target sent a short log page; retry, or report it against the target." },
    );
  }
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const header = {
    genctr: v.getBigUint64(0, true),
    numrec: v.getBigUint64(8, true),
    recfmt: v.getUint16(16, true),
  };
  if (header.recfmt !== 0) {
    throw new DiscoveryLogError(
      `The discovery log has record format ${header.recfmt}; only 0 is defined.`,
      {
        hint: "The target speaks a newer or broken discovery log format.",
      },
    );
  }
  if (header.numrec > BigInt(MAX_RECORDS)) {
    throw new DiscoveryLogError(
      `The discovery log claims ${header.numrec} records (more than ${MAX_RECORDS}); the header is corrupt.`,
      { hint: "Retry the discovery; if it persists, the target's log page is broken." },
    );
  }
  return header;
}

function text(bytes: Uint8Array): string {
  let end = bytes.indexOf(0);
  if (end < 0) end = bytes.length;
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, end)).replace(
    / +$/,
    "",
  );
}

/** Decodes one 1024-byte entry. */
export function decodeEntry(buf: Uint8Array): DiscoveryLogEntry {
  if (buf.length < ENTRY_SIZE) {
    throw new DiscoveryLogError(
      `A discovery log entry is truncated: ${buf.length} of ${ENTRY_SIZE} bytes.`,
    );
  }
  const v = new DataView(buf.buffer, buf.byteOffset, ENTRY_SIZE);
  const e: DiscoveryLogEntry = {
    trtype: v.getUint8(0),
    adrfam: v.getUint8(1),
    subtype: v.getUint8(2),
    treq: v.getUint8(3),
    portid: v.getUint16(4, true),
    cntlid: v.getUint16(6, true),
    asqsz: v.getUint16(8, true),
    eflags: v.getUint16(10, true),
    trsvcid: text(buf.subarray(32, 64)),
    subnqn: text(buf.subarray(256, 512)),
    traddr: text(buf.subarray(512, 768)),
  };
  if (e.trtype === 1) {
    e.rdma = {
      qptype: v.getUint8(768),
      prtype: v.getUint8(769),
      cms: v.getUint8(770),
      pkey: v.getUint16(776, true),
    };
  } else if (e.trtype === 3) {
    e.tcp = { sectype: v.getUint8(768) };
  }
  return e;
}

/**
 * Decodes a whole log: header at 0, `numrec` entries from byte 1024. The buffer must hold every
 * entry the header announces.
 */
export function decodeLog(buf: Uint8Array): DiscoveryLog {
  const header = decodeHeader(buf);
  const n = Number(header.numrec);
  const need = HEADER_SIZE + n * ENTRY_SIZE;
  if (buf.length < need) {
    throw new DiscoveryLogError(
      `The discovery log is truncated: the header announces ${n} records (${need} bytes), ` +
        `the buffer holds ${buf.length}.`,
      { hint: "The log changed or was cut short; run the discovery again." },
    );
  }
  const entries: DiscoveryLogEntry[] = [];
  for (let i = 0; i < n; i++) {
    const off = HEADER_SIZE + i * ENTRY_SIZE;
    entries.push(decodeEntry(buf.subarray(off, off + ENTRY_SIZE)));
  }
  return { ...header, entries };
}

/** Encodes a log (the inverse of decodeLog), for tests and fixtures. */
export function encodeLog(log: { genctr: bigint; entries: DiscoveryLogEntry[] }): Uint8Array {
  const buf = new Uint8Array(HEADER_SIZE + log.entries.length * ENTRY_SIZE);
  const v = new DataView(buf.buffer);
  v.setBigUint64(0, log.genctr, true);
  v.setBigUint64(8, BigInt(log.entries.length), true);
  const enc = new TextEncoder();
  log.entries.forEach((e, i) => {
    const o = HEADER_SIZE + i * ENTRY_SIZE;
    v.setUint8(o, e.trtype);
    v.setUint8(o + 1, e.adrfam);
    v.setUint8(o + 2, e.subtype);
    v.setUint8(o + 3, e.treq);
    v.setUint16(o + 4, e.portid, true);
    v.setUint16(o + 6, e.cntlid, true);
    v.setUint16(o + 8, e.asqsz, true);
    v.setUint16(o + 10, e.eflags, true);
    buf.fill(0x20, o + 32, o + 64);
    buf.set(enc.encode(e.trsvcid).subarray(0, 32), o + 32);
    buf.set(enc.encode(e.subnqn).subarray(0, 256), o + 256);
    buf.fill(0x20, o + 512, o + 768);
    buf.set(enc.encode(e.traddr).subarray(0, 256), o + 512);
    if (e.rdma) {
      v.setUint8(o + 768, e.rdma.qptype);
      v.setUint8(o + 769, e.rdma.prtype);
      v.setUint8(o + 770, e.rdma.cms);
      v.setUint16(o + 776, e.rdma.pkey, true);
    } else if (e.tcp) {
      v.setUint8(o + 768, e.tcp.sectype);
    }
  });
  return buf;
}

/**
 * Get Log Page command dwords for `len` bytes of the discovery log at byte `offset`
 * (CDW10 = LID | NUMDL<<16, CDW11 = NUMDU, CDW12/13 = offset).
 */
export function getLogPageDwords(
  len: number,
  offset: number,
): { cdw10: number; cdw11: number; cdw12: number; cdw13: number } {
  if (len <= 0 || len % 4 !== 0 || offset % 4 !== 0) {
    throw new RangeError(
      `Get Log Page needs a positive dword-aligned length and offset (${len} @ ${offset})`,
    );
  }
  const numd = len / 4 - 1;
  return {
    cdw10: (DISCOVERY_LOG_ID | ((numd & 0xffff) << 16)) >>> 0,
    cdw11: (numd >>> 16) & 0xffff,
    cdw12: offset % 0x100000000,
    cdw13: Math.floor(offset / 0x100000000),
  };
}

// ---- names, as nvme-cli/libnvme print them --------------------------------------------------

const TRTYPE: Record<number, string> = { 1: "rdma", 2: "fc", 3: "tcp", 254: "loop" };
const ADRFAM: Record<number, string> = {
  0: "pci",
  1: "ipv4",
  2: "ipv6",
  3: "infiniband",
  4: "fibre-channel",
};
const SUBTYPE: Record<number, string> = {
  1: "discovery subsystem referral",
  2: "nvme subsystem",
  3: "current discovery subsystem",
};
const TREQ: Record<number, string> = { 0: "not specified", 1: "required", 2: "not required" };
const PRTYPE: Record<number, string> = {
  1: "not specified",
  2: "infiniband",
  3: "roce",
  4: "roce-v2",
  5: "iwarp",
};
const QPTYPE: Record<number, string> = { 1: "connected", 2: "datagram" };
const CMS: Record<number, string> = { 1: "rdma-cm" };
const SECTYPE: Record<number, string> = { 0: "none", 1: "tls", 2: "tls13" };

const name = (table: Record<number, string>, n: number) => table[n] ?? "unrecognized";

/** The transport type name (rdma, tcp, …). */
export function trtypeName(n: number): string {
  return name(TRTYPE, n);
}

/** The entry subtype name. */
export function subtypeName(n: number): string {
  return name(SUBTYPE, n);
}

function treqName(n: number): string {
  const base = name(TREQ, n & 3);
  return n & 4 ? `${base}, sq flow control disable supported` : base;
}

function eflagsName(n: number): string {
  const parts: string[] = [];
  if (n & 2) parts.push("explicit discovery connections");
  if (n & 1) parts.push("duplicate discovery information");
  if (n & 4) parts.push("no cdc connectivity");
  return parts.length ? parts.join(", ") : "none";
}

/** One record with nvme-cli's JSON keys and value strings (`nvme discover -o json`). */
export function entryToNvmeCli(e: DiscoveryLogEntry): Record<string, string | number> {
  const r: Record<string, string | number> = {
    trtype: trtypeName(e.trtype),
    adrfam: e.traddr === "" ? "" : name(ADRFAM, e.adrfam),
    subtype: subtypeName(e.subtype),
    treq: treqName(e.treq),
    portid: e.portid,
    trsvcid: e.trsvcid,
    subnqn: e.subnqn,
    traddr: e.traddr,
    eflags: eflagsName(e.eflags),
  };
  if (e.rdma) {
    r.rdma_prtype = name(PRTYPE, e.rdma.prtype);
    r.rdma_qptype = name(QPTYPE, e.rdma.qptype);
    r.rdma_cms = name(CMS, e.rdma.cms);
    r.rdma_pkey = e.rdma.pkey;
  } else if (e.tcp) {
    r.sectype = name(SECTYPE, e.tcp.sectype);
  }
  return r;
}

/** The whole log as `nvme discover -o json` prints it. */
export function logToNvmeCli(
  log: DiscoveryLog,
): { genctr: bigint; records: Record<string, string | number>[] } {
  return { genctr: log.genctr, records: log.entries.map(entryToNvmeCli) };
}

/** The log as `nvme discover` prints it in text. */
export function logToText(log: DiscoveryLog): string {
  const out = [
    "",
    `Discovery Log Number of Records ${log.entries.length}, Generation counter ${log.genctr}`,
  ];
  log.entries.forEach((e, i) => {
    const r = entryToNvmeCli(e);
    out.push(`=====Discovery Log Entry ${i}======`);
    for (
      const k of [
        "trtype",
        "adrfam",
        "subtype",
        "treq",
        "portid",
        "trsvcid",
        "subnqn",
        "traddr",
        "eflags",
      ]
    ) {
      out.push(`${k}: ${r[k]}`);
    }
    if (e.rdma) {
      out.push(
        `rdma_prtype: ${r.rdma_prtype}`,
        `rdma_qptype: ${r.rdma_qptype}`,
        `rdma_cms: ${r.rdma_cms}`,
      );
      out.push(`rdma_pkey: 0x${e.rdma.pkey.toString(16).padStart(4, "0")}`);
    } else if (e.tcp) {
      out.push(`sectype: ${r.sectype}`);
    }
  });
  return out.join("\n") + "\n";
}
