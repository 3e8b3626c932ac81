/**
 * IP addresses as the kernel compares them: one canonical text per address (RFC 5952 for IPv6,
 * an IPv4-mapped IPv6 address as its IPv4 form, no zone), and the addresses of this machine.
 */
import { isIpv4 } from "../fabrics/options.ts";
import { parseIpv6 } from "../rdma/cm.ts";
import { ipv6Text } from "../rdma/devices.ts";

const MAPPED_PREFIX = "::ffff:";

/** The canonical text of an IPv4 or IPv6 address (zone dropped), or undefined when it is neither. */
export function canonicalAddress(text: string): string | undefined {
  const addr = text.split("%")[0];
  if (isIpv4(addr)) return addr;
  const bytes = parseIpv6(addr);
  if (!bytes) return undefined;
  const t = ipv6Text(bytes);
  return t.startsWith(MAPPED_PREFIX) && isIpv4(t.slice(MAPPED_PREFIX.length))
    ? t.slice(MAPPED_PREFIX.length)
    : t;
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
  const want = canonicalAddress(addr);
  if (want === undefined) return undefined;
  return local.find((l) => canonicalAddress(l.address) === want);
}
