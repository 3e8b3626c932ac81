/**
 * IP addresses as the kernel hands them over (struct sockaddr_in/_in6, /proc/net/tcp hex) turned
 * into one canonical text, so an address read from the kernel compares equal to the same address
 * written in a port's configfs `addr_traddr` however it was spelled; and the addresses of this
 * machine.
 */
import { AF_INET, AF_INET6 } from "../../ffi/libc.ts";
import { SOCKADDR_IN, SOCKADDR_IN6 } from "../../ffi/libc_structs.ts";

/** An IP address and port; `address` is canonical (see canonicalIp). */
export interface SocketAddress {
  address: string;
  port: number;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * True for a dotted-quad IPv4 address: four decimal numbers 0-255 without leading zeros (glibc's
 * inet_pton rule; a leading zero reads as octal to some tools, so `010.0.0.1` is ambiguous).
 */
export function isIpv4(s: string): boolean {
  return IPV4.test(s);
}

/** The 4 bytes of a dotted-quad IPv4 address (see isIpv4), or undefined. */
export function parseIpv4(text: string): Uint8Array | undefined {
  return isIpv4(text) ? Uint8Array.from(text.split("."), Number) : undefined;
}

/** What isIpv6 accepts besides the address itself. */
export interface Ipv6Options {
  /**
   * Accept a `%zone` (an interface name, as in `fe80::1%eth0`). The kernel's connect path
   * (inet_pton_with_scope) takes one; a target port's `addr_traddr` does not.
   */
  zone?: boolean;
}

/** True for a textual IPv6 address (RFC 4291 §2.2, with an optional IPv4 tail). */
export function isIpv6(s: string, options: Ipv6Options = {}): boolean {
  const [addr, zone, extra] = s.split("%");
  if (zone !== undefined) {
    if (!options.zone || extra !== undefined || !/^[A-Za-z0-9_.-]{1,15}$/.test(zone)) return false;
  }
  return parseIpv6(addr) !== undefined;
}

/** 16 bytes of an IPv6 address in text form (no zone), or undefined. */
export function parseIpv6(text: string): Uint8Array | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || !text.includes(":")) return undefined;
  let s = text;
  const tail: number[] = [];
  const m = /^(.*:)([^:]*\.[^:]*)$/.exec(s);
  if (m) {
    const b = parseIpv4(m[2]);
    if (!b) return undefined;
    tail.push((b[0] << 8) | b[1], (b[2] << 8) | b[3]);
    s = m[1].endsWith("::") ? m[1] : m[1].slice(0, -1);
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const parts = (
    x: string,
  ) => (x ? x.split(":").map((h) => /^[0-9a-fA-F]{1,4}$/.test(h) ? parseInt(h, 16) : -1) : []);
  const h = parts(halves[0]);
  const r = halves.length === 2 ? parts(halves[1]) : [];
  const fill = 8 - tail.length - h.length - r.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const words = [...h, ...Array(halves.length === 2 ? fill : 0).fill(0), ...r, ...tail];
  if (words.length !== 8 || words.some((w) => w < 0)) return undefined;
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/** How formatIp writes an IPv4-mapped IPv6 address. */
export interface FormatIpOptions {
  /**
   * Keep `::ffff:a.b.c.d` rather than writing the IPv4 address alone: a RoCE GID is an IPv6
   * value, whatever address it was made from.
   */
  keepMapped?: boolean;
}

/**
 * Canonical text of 4 or 16 address bytes: dotted IPv4; IPv6 in RFC 5952 form (lower case, the
 * longest run of two or more zero words as `::`); an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
 * as its IPv4 address, since that is the peer a dual-stack socket talks to (unless keepMapped).
 */
export function formatIp(bytes: Uint8Array, options: FormatIpOptions = {}): string {
  if (bytes.length === 4) return [...bytes].join(".");
  if (bytes.length !== 16) {
    throw new RangeError(`an IP address has 4 or 16 bytes, not ${bytes.length}`);
  }
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    const v4 = [...bytes.subarray(12)].join(".");
    return options.keepMapped ? `::ffff:${v4}` : v4;
  }
  const words = Array.from({ length: 8 }, (_, i) => (bytes[2 * i] << 8) | bytes[2 * i + 1]);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(":");
  if (best < 0) return hex(words);
  return `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
}

/**
 * The canonical text of an IPv4 or IPv6 address written any valid way (an IPv6 zone, `%eth0`, is
 * dropped: the kernel compares addresses without it); undefined if it is none.
 */
export function canonicalIp(written: string): string | undefined {
  const text = written.split("%")[0].trim();
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const b = v4.slice(1).map(Number);
    return b.every((x) => x <= 255) ? b.join(".") : undefined;
  }
  const v6 = parseIpv6(text);
  return v6 ? formatIp(v6) : undefined;
}

/**
 * `address:port` as a socket address is written, an IPv6 address in brackets (`[fd00::1]:4420`,
 * RFC 3986) so the port cannot be read as part of it.
 */
export function hostPort(address: string, port: string | number): string {
  return `${address.includes(":") ? `[${address}]` : address}:${port}`;
}

/** The largest TCP port. */
const MAX_PORT = 65535;

/**
 * Parses `ADDR:PORT` as hostPort writes it (`10.0.0.1:9723`, `[::1]:9723`): an IP literal and a
 * port 0–65535; undefined when it is not one.
 */
export function parseHostPort(text: string): SocketAddress | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(text.trim());
  if (!m) return undefined;
  const address = m[1] ?? m[2];
  const port = Number(m[3]);
  if (port > MAX_PORT) return undefined;
  if (m[1] !== undefined ? !isIpv6(address) : !isIpv4(address)) return undefined;
  return { address, port };
}

/** True for the wildcard addresses a listener binds to all addresses with. */
export function isAnyAddress(address: string): boolean {
  return address === "0.0.0.0" || address === "::";
}

/** An IPv4 or IPv6 address and port as a struct sockaddr_in/sockaddr_in6. */
export function sockaddr(host: string, port: number): Uint8Array {
  const v4 = parseIpv4(host);
  if (v4) {
    const sa = new Uint8Array(SOCKADDR_IN.$size);
    const dv = new DataView(sa.buffer);
    dv.setUint16(SOCKADDR_IN.sin_family, AF_INET, true);
    dv.setUint16(SOCKADDR_IN.sin_port, port, false);
    sa.set(v4, SOCKADDR_IN.sin_addr);
    return sa;
  }
  const bytes = parseIpv6(host);
  if (!bytes) throw new RangeError(`not an IP address: '${host}'`);
  const sa = new Uint8Array(SOCKADDR_IN6.$size);
  const dv = new DataView(sa.buffer);
  dv.setUint16(SOCKADDR_IN6.sin6_family, AF_INET6, true);
  dv.setUint16(SOCKADDR_IN6.sin6_port, port, false);
  sa.set(bytes, SOCKADDR_IN6.sin6_addr);
  return sa;
}

/** A struct sockaddr_in or sockaddr_in6 (e.g. inside a sockaddr_storage); undefined for others. */
export function parseSockaddr(bytes: Uint8Array): SocketAddress | undefined {
  if (bytes.length < 2) return undefined;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const family = dv.getUint16(0, true);
  if (family === AF_INET && bytes.length >= SOCKADDR_IN.sin_addr + 4) {
    return {
      address: formatIp(bytes.subarray(SOCKADDR_IN.sin_addr, SOCKADDR_IN.sin_addr + 4)),
      port: dv.getUint16(SOCKADDR_IN.sin_port, false),
    };
  }
  if (family === AF_INET6 && bytes.length >= SOCKADDR_IN6.sin6_addr + 16) {
    return {
      address: formatIp(bytes.subarray(SOCKADDR_IN6.sin6_addr, SOCKADDR_IN6.sin6_addr + 16)),
      port: dv.getUint16(SOCKADDR_IN6.sin6_port, false),
    };
  }
  return undefined;
}

/** One address of a local interface. */
export interface LocalAddress {
  /** The interface (netdev) name. */
  name: string;
  address: string;
}

/** Every address of this machine's interfaces (getifaddrs), or none when they cannot be read. */
export function localAddresses(): LocalAddress[] {
  try {
    return Deno.networkInterfaces().map((i) => ({ name: i.name, address: i.address }));
  } catch {
    return [];
  }
}

/** The local interface that holds `addr` (compared in canonical form), if any. */
export function localInterfaceOf(addr: string, local: LocalAddress[]): LocalAddress | undefined {
  const want = canonicalIp(addr);
  if (want === undefined) return undefined;
  return local.find((l) => canonicalIp(l.address) === want);
}
