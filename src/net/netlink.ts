/**
 * The netlink wire format (Linux uapi <linux/netlink.h>): messages are a struct nlmsghdr and a
 * payload, attributes a struct nlattr and a payload, each padded to 4 bytes, all in host byte
 * order (little-endian here). Pure functions over bytes, so the codec is tested with fixtures; the
 * socket that carries them is in socket.ts.
 */
import { NLA_F, NLMSG } from "../../ffi/enums.ts";
import { NLATTR, NLMSGERR, NLMSGHDR } from "../../ffi/libc_structs.ts";

/** One netlink message: the header's fields and the payload after the header. */
export interface NetlinkMessage {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  payload: Uint8Array;
}

/** One attribute: its type without the NLA_F_* flag bits, and its payload. */
export interface NetlinkAttr {
  type: number;
  nested: boolean;
  payload: Uint8Array;
}

/** Netlink's alignment: lengths round up to a multiple of 4. */
export function nlAlign(n: number): number {
  return (n + 3) & ~3;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** An attribute carrying a u32 (host order), padded. */
export function u32Attr(type: number, value: number): Uint8Array {
  const out = new Uint8Array(NLATTR.$size + 4);
  const dv = view(out);
  dv.setUint16(NLATTR.nla_len, NLATTR.$size + 4, true);
  dv.setUint16(NLATTR.nla_type, type, true);
  dv.setUint32(NLATTR.$size, value >>> 0, true);
  return out;
}

/** A whole request: header (with its length) followed by the attributes. */
export function encodeMessage(
  header: { type: number; flags: number; seq: number },
  attrs: Uint8Array[] = [],
): Uint8Array {
  const len = NLMSGHDR.$size + attrs.reduce((n, a) => n + nlAlign(a.length), 0);
  const out = new Uint8Array(len);
  const dv = view(out);
  dv.setUint32(NLMSGHDR.nlmsg_len, len, true);
  dv.setUint16(NLMSGHDR.nlmsg_type, header.type, true);
  dv.setUint16(NLMSGHDR.nlmsg_flags, header.flags, true);
  dv.setUint32(NLMSGHDR.nlmsg_seq, header.seq >>> 0, true);
  dv.setUint32(NLMSGHDR.nlmsg_pid, 0, true);
  let at = NLMSGHDR.$size;
  for (const a of attrs) {
    out.set(a, at);
    at += nlAlign(a.length);
  }
  return out;
}

/** The messages in one datagram read from a netlink socket; a truncated tail is a RangeError. */
export function parseMessages(buf: Uint8Array): NetlinkMessage[] {
  const out: NetlinkMessage[] = [];
  const dv = view(buf);
  let at = 0;
  while (at + NLMSGHDR.$size <= buf.length) {
    const len = dv.getUint32(at + NLMSGHDR.nlmsg_len, true);
    if (len < NLMSGHDR.$size || at + len > buf.length) {
      throw new RangeError(`netlink message at byte ${at} claims ${len} bytes of ${buf.length}`);
    }
    out.push({
      type: dv.getUint16(at + NLMSGHDR.nlmsg_type, true),
      flags: dv.getUint16(at + NLMSGHDR.nlmsg_flags, true),
      seq: dv.getUint32(at + NLMSGHDR.nlmsg_seq, true),
      pid: dv.getUint32(at + NLMSGHDR.nlmsg_pid, true),
      payload: buf.subarray(at + NLMSGHDR.$size, at + len),
    });
    at += nlAlign(len);
  }
  return out;
}

/** The attributes in a payload (a message's, or a nested attribute's). */
export function parseAttrs(buf: Uint8Array): NetlinkAttr[] {
  const out: NetlinkAttr[] = [];
  const dv = view(buf);
  let at = 0;
  while (at + NLATTR.$size <= buf.length) {
    const len = dv.getUint16(at + NLATTR.nla_len, true);
    if (len < NLATTR.$size || at + len > buf.length) {
      throw new RangeError(`netlink attribute at byte ${at} claims ${len} bytes of ${buf.length}`);
    }
    const raw = dv.getUint16(at + NLATTR.nla_type, true);
    out.push({
      type: raw & ~(NLA_F.NESTED | NLA_F.NET_BYTEORDER),
      nested: (raw & NLA_F.NESTED) !== 0,
      payload: buf.subarray(at + NLATTR.$size, at + len),
    });
    at += nlAlign(len);
  }
  return out;
}

/** The first attribute of each type (later duplicates are ignored, as libmnl's tables do). */
export function attrTable(attrs: NetlinkAttr[]): Map<number, NetlinkAttr> {
  const t = new Map<number, NetlinkAttr>();
  for (const a of attrs) if (!t.has(a.type)) t.set(a.type, a);
  return t;
}

/** A u32 attribute's value (host order); undefined when absent or too short. */
export function attrU32(a: NetlinkAttr | undefined): number | undefined {
  return a && a.payload.length >= 4 ? view(a.payload).getUint32(0, true) : undefined;
}

/** A u8 attribute's value; undefined when absent or empty. */
export function attrU8(a: NetlinkAttr | undefined): number | undefined {
  return a && a.payload.length >= 1 ? a.payload[0] : undefined;
}

/** A NUL-terminated string attribute; undefined when absent. */
export function attrString(a: NetlinkAttr | undefined): string | undefined {
  if (!a) return undefined;
  const end = a.payload.indexOf(0);
  return new TextDecoder().decode(end < 0 ? a.payload : a.payload.subarray(0, end));
}

/**
 * The errno a control message reports: NLMSG_ERROR carries `-errno` (0 is an acknowledgement),
 * NLMSG_DONE of a dump may carry one too. 0 for every other message.
 */
export function messageErrno(m: NetlinkMessage): number {
  if (m.type !== NLMSG.ERROR && m.type !== NLMSG.DONE) return 0;
  if (m.payload.length < 4) return 0;
  const e = view(m.payload).getInt32(NLMSGERR.error, true);
  return e < 0 ? -e : 0;
}
