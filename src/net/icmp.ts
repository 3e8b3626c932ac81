/**
 * ICMP and ICMPv6 echo packets: the Internet checksum (RFC 1071), an echo request of a chosen
 * size, and the parse of an echo reply as a ping socket (ICMP header first) or a raw IPv4 socket
 * (IP header first) delivers it. Pure: the socket lives in ping.ts.
 */

/** IP versions the probe speaks. */
export type IpFamily = 4 | 6;

/** ICMP types (RFC 792, RFC 4443). */
export const ICMP_ECHO_REPLY = 0;
export const ICMP_ECHO_REQUEST = 8;
export const ICMPV6_ECHO_REQUEST = 128;
export const ICMPV6_ECHO_REPLY = 129;

/** type, code, checksum, identifier, sequence number. */
export const ICMP_HEADER_SIZE = 8;
/** An IPv4 header without options; an IPv6 header without extension headers. */
export const IPV4_HEADER_SIZE = 20;
export const IPV6_HEADER_SIZE = 40;
/** The echo payload `ping` sends by default. */
export const DEFAULT_PAYLOAD_SIZE = 56;

const OFF = { type: 0, code: 1, checksum: 2, id: 4, seq: 6 } as const;
const IPV4_VERSION = 4;
const IPV4_IHL_MASK = 0x0f;
const IPV4_PROTOCOL = 9;
const IPPROTO_ICMP = 1;
const WORD_BYTES = 4;
const SIXTEEN_BITS = 0xffff;

/** The Internet checksum of `b` (ones' complement of the ones' complement sum of 16-bit words). */
export function inetChecksum(b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i + 1 < b.length; i += 2) sum += (b[i] << 8) | b[i + 1];
  if (b.length % 2) sum += b[b.length - 1] << 8;
  while (sum > SIXTEEN_BITS) sum = (sum & SIXTEEN_BITS) + (sum >>> 16);
  return ~sum & SIXTEEN_BITS;
}

/** The ICMP payload size that makes an IP packet of `ipSize` bytes. */
export function payloadForIpSize(ipSize: number, family: IpFamily): number {
  return ipSize - (family === 4 ? IPV4_HEADER_SIZE : IPV6_HEADER_SIZE) - ICMP_HEADER_SIZE;
}

/**
 * An echo request with `payload` bytes of a counting pattern. The IPv4 checksum is filled in (a
 * raw socket needs it; a ping socket recomputes it); the kernel computes ICMPv6's over the
 * pseudo-header itself.
 */
export function echoRequest(
  o: { family: IpFamily; id: number; seq: number; payload: number },
): Uint8Array {
  const b = new Uint8Array(ICMP_HEADER_SIZE + o.payload);
  const dv = new DataView(b.buffer);
  b[OFF.type] = o.family === 4 ? ICMP_ECHO_REQUEST : ICMPV6_ECHO_REQUEST;
  dv.setUint16(OFF.id, o.id & SIXTEEN_BITS);
  dv.setUint16(OFF.seq, o.seq & SIXTEEN_BITS);
  for (let i = 0; i < o.payload; i++) b[ICMP_HEADER_SIZE + i] = i & 0xff;
  if (o.family === 4) dv.setUint16(OFF.checksum, inetChecksum(b));
  return b;
}

/** What an echo reply carries. */
export interface EchoReply {
  id: number;
  seq: number;
  /** ICMP payload bytes. */
  payload: number;
}

/**
 * Parses an echo reply. `ipHeader`: the packet starts with an IPv4 header (a raw socket's
 * delivery). Returns undefined for anything else (another ICMP type, a bad IPv4 checksum, a
 * truncated packet).
 */
export function parseEchoReply(
  packet: Uint8Array,
  o: { family: IpFamily; ipHeader?: boolean },
): EchoReply | undefined {
  let b = packet;
  if (o.ipHeader) {
    if (b.length < IPV4_HEADER_SIZE || b[0] >> 4 !== IPV4_VERSION) return undefined;
    if (b[IPV4_PROTOCOL] !== IPPROTO_ICMP) return undefined;
    b = b.subarray((b[0] & IPV4_IHL_MASK) * WORD_BYTES);
  }
  if (b.length < ICMP_HEADER_SIZE) return undefined;
  if (b[OFF.type] !== (o.family === 4 ? ICMP_ECHO_REPLY : ICMPV6_ECHO_REPLY)) return undefined;
  if (o.family === 4 && inetChecksum(b) !== 0) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return {
    id: dv.getUint16(OFF.id),
    seq: dv.getUint16(OFF.seq),
    payload: b.length - ICMP_HEADER_SIZE,
  };
}
