/**
 * Identify data structures (4096 bytes each): controller (CNS 1), namespace (CNS 0), active
 * namespace list (CNS 2), and the CAP/VS properties, decoded to the fields probe reports.
 */
import { hexOf } from "../sha256.ts";

export const IDENTIFY_SIZE = 4096;

function ascii(b: Uint8Array, off: number, len: number): string {
  let s = "";
  for (let i = off; i < off + len; i++) {
    const c = b[i];
    if (c === 0) break;
    s += String.fromCharCode(c);
  }
  return s.trimEnd();
}

/** The controller's identity and limits. */
export interface IdentifyController {
  vid: number;
  ssvid: number;
  sn: string;
  mn: string;
  fr: string;
  ieee: string;
  cmic: number;
  mdts: number;
  cntlid: number;
  ver: string;
  kas: number;
  sqes: number;
  cqes: number;
  maxcmd: number;
  nn: number;
  oncs: number;
  vwc: number;
  sgls: number;
  subnqn: string;
  ioccsz: number;
  iorcsz: number;
  icdoff: number;
  msdbd: number;
}

export function decodeVersion(v: number): string {
  const major = v >>> 16;
  const minor = (v >>> 8) & 0xff;
  const ter = v & 0xff;
  return `${major}.${minor}${ter ? "." + ter : ""}`;
}

export function decodeIdentifyController(b: Uint8Array): IdentifyController {
  const dv = new DataView(b.buffer, b.byteOffset, IDENTIFY_SIZE);
  const ieee = [b[75], b[74], b[73]].map((x) => x.toString(16).padStart(2, "0")).join("");
  return {
    vid: dv.getUint16(0, true),
    ssvid: dv.getUint16(2, true),
    sn: ascii(b, 4, 20),
    mn: ascii(b, 24, 40),
    fr: ascii(b, 64, 8),
    ieee,
    cmic: b[76],
    mdts: b[77],
    cntlid: dv.getUint16(78, true),
    ver: decodeVersion(dv.getUint32(80, true)),
    kas: dv.getUint16(320, true),
    sqes: b[512],
    cqes: b[513],
    maxcmd: dv.getUint16(514, true),
    nn: dv.getUint32(516, true),
    oncs: dv.getUint16(520, true),
    vwc: b[525],
    sgls: dv.getUint32(536, true),
    subnqn: ascii(b, 768, 256),
    ioccsz: dv.getUint32(1792, true),
    iorcsz: dv.getUint32(1796, true),
    icdoff: dv.getUint16(1800, true),
    msdbd: b[1803],
  };
}

/** What the SGLS field says the controller supports, in words. */
export function sglSupport(sgls: number): string[] {
  const out: string[] = [];
  const s = sgls & 3;
  if (s === 0) return ["none"];
  out.push(s === 1 ? "SGLs (no alignment)" : "SGLs (dword aligned)");
  if (sgls & (1 << 2)) out.push("keyed SGL data block");
  if (sgls & (1 << 16)) out.push("bit bucket");
  if (sgls & (1 << 19)) out.push("MPTR one SGL");
  if (sgls & (1 << 20)) out.push("offset (in-capsule data)");
  if (sgls & (1 << 21)) out.push("transport SGL data block");
  return out;
}

/** A namespace's size and formatted LBA size. */
export interface IdentifyNamespace {
  nsze: bigint;
  ncap: bigint;
  nuse: bigint;
  nlbaf: number;
  flbas: number;
  lbads: number;
  /** Bytes per logical block (2^lbads). */
  lbaSize: number;
  /** Metadata bytes per block. */
  ms: number;
  nguid: string;
  eui64: string;
}

export function decodeIdentifyNamespace(b: Uint8Array): IdentifyNamespace {
  const dv = new DataView(b.buffer, b.byteOffset, IDENTIFY_SIZE);
  const flbas = b[26];
  const fmt = (flbas & 0xf) | ((flbas >> 1) & 0x30);
  const lbaf = 128 + 4 * fmt;
  const lbads = b[lbaf + 2];
  const hex = (o: number, n: number) => hexOf(b.subarray(o, o + n));
  return {
    nsze: dv.getBigUint64(0, true),
    ncap: dv.getBigUint64(8, true),
    nuse: dv.getBigUint64(16, true),
    nlbaf: b[25],
    flbas,
    lbads,
    lbaSize: lbads >= 9 && lbads < 32 ? 2 ** lbads : 0,
    ms: dv.getUint16(lbaf, true),
    nguid: hex(104, 16),
    eui64: hex(120, 8),
  };
}

/** The active namespace list: non-zero ids, in order. */
export function decodeNamespaceList(b: Uint8Array): number[] {
  const dv = new DataView(b.buffer, b.byteOffset, IDENTIFY_SIZE);
  const out: number[] = [];
  for (let i = 0; i < 1024; i++) {
    const id = dv.getUint32(4 * i, true);
    if (id === 0) break;
    out.push(id);
  }
  return out;
}

/** The CAP property's fields. */
export interface Capabilities {
  /** Maximum queue entries supported (1-based here; the register holds it 0-based). */
  mqes: number;
  cqr: boolean;
  /** Worst-case time to become ready, in ms (CAP.TO × 500). */
  timeoutMs: number;
  dstrd: number;
  css: number;
  mpsmin: number;
  mpsmax: number;
}

export function decodeCap(cap: bigint): Capabilities {
  const lo = Number(cap & 0xffffffffn);
  const hi = Number(cap >> 32n);
  return {
    mqes: (lo & 0xffff) + 1,
    cqr: ((lo >>> 16) & 1) === 1,
    timeoutMs: ((lo >>> 24) & 0xff) * 500,
    dstrd: hi & 0xf,
    css: (hi >>> 5) & 0xff,
    mpsmin: (hi >>> 16) & 0xf,
    mpsmax: (hi >>> 20) & 0xf,
  };
}

/** CC for enable: IOSQES 6 (64 B), IOCQES 4 (16 B), MPS 0 (4 KiB), NVM command set, EN. */
/**
 * The largest data transfer in bytes: MDTS is a power of two in units of the minimum memory page
 * size (CAP.MPSMIN, 4 KiB << MPSMIN); undefined when MDTS is 0 (no limit).
 */
export function mdtsBytes(mdts: number, cap: Capabilities | undefined): number | undefined {
  return mdts ? (4096 << (cap?.mpsmin ?? 0)) * 2 ** mdts : undefined;
}

export const CC_ENABLE = (6 << 16) | (4 << 20) | 1;
/** CC.SHN = normal shutdown. */
export const CC_SHN_NORMAL = 1 << 14;
export const CSTS_RDY = 1;
export const CSTS_CFS = 2;
/** CSTS.SHST (bits 3:2) = 2: shutdown complete. */
export function shutdownComplete(csts: number): boolean {
  return ((csts >> 2) & 3) === 2;
}
