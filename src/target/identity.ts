/**
 * Stable identities for what the spec does not name. nvmet gives a new subsystem a random serial
 * and a new namespace a random UUID. A storage server that reboots and applies its spec again
 * would then show its hosts other disks: a host reconnecting after the reboot logs "identifiers
 * changed for nsid 1" and drops the namespace, failing the I/O it had queued; a second path made
 * after the reboot no longer matches the first. So when the spec leaves them out, a subsystem's
 * serial and a namespace's UUID are derived from the names the spec does give (the subsystem NQN
 * and the NSID): the same on every boot, on every storage server applying the same spec.
 */
import { hexOf, sha256 } from "../sha256.ts";

/** The serial number nvmeof gives subsystem NQN (20 hex digits, what attr_serial holds). */
export function derivedSerial(nqn: string): string {
  return hexOf(sha256(`nvmeof serial\0${nqn}`).subarray(0, 10));
}

/**
 * The UUID nvmeof gives namespace NSID of subsystem NQN: name-based, from SHA-256 (RFC 9562
 * version 8, variant 10).
 */
export function derivedNamespaceUuid(nqn: string, nsid: number): string {
  const b = sha256(`nvmeof namespace\0${nqn}\0${nsid}`).subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = hexOf(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
