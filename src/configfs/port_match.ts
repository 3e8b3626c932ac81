/**
 * Which nvmet port serves a connection: the one comparison of a port's address with an end of a
 * fabric connection, for the target's connected hosts and doctor's choice of port. Apart from the
 * model (nvmet.ts) because it reads addresses with the address parser, which the model's names
 * (the transports and ANA states a command's --help shows) do without.
 */
import { canonicalIp, isAnyAddress, type SocketAddress } from "../net/address.ts";
import type { LivePort } from "./nvmet.ts";

/**
 * This machine's end of a fabric connection: the transport and the local address and port (the
 * kernel's end of a queue, or the address and service id a host is told to connect to).
 */
export interface PortEnd {
  trtype: string;
  local: SocketAddress;
}

/**
 * Whether `port` serves connections that end at `end`: the same transport and service id, and the
 * port's address is the local address or a wildcard (0.0.0.0, ::). Addresses compare in canonical
 * form (canonicalIp), so `::ffff:10.0.0.1` is `10.0.0.1` and an IPv6 address matches however it
 * is spelled; text that is no IP address compares as written.
 */
export function portServes(port: LivePort, end: PortEnd): boolean {
  if (port.attr.addr_trtype !== end.trtype) return false;
  if (Number(port.attr.addr_trsvcid) !== end.local.port) return false;
  const written = port.attr.addr_traddr;
  if (written === undefined) return false;
  const traddr = canonicalIp(written) ?? written;
  return isAnyAddress(traddr) || traddr === (canonicalIp(end.local.address) ?? end.local.address);
}
