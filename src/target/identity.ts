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

/** The text a subsystem's serial is the SHA-256 of. */
function serialText(nqn: string): string {
  return `nvmeof serial\0${nqn}`;
}

/** The text a namespace's UUID is the SHA-256 of. */
function namespaceText(nqn: string, nsid: number): string {
  return `nvmeof namespace\0${nqn}\0${nsid}`;
}

/** Digests hashed ahead by hashAhead, by the text hashed; each is taken once. */
const ahead = new Map<string, Uint8Array>();

/** TEXT's SHA-256: hashed ahead, or here. */
function digestOf(text: string): Uint8Array {
  const d = ahead.get(text);
  if (d === undefined) return sha256(text);
  ahead.delete(text);
  return d;
}

/** The serial number nvmeof gives subsystem NQN (20 hex digits, what attr_serial holds). */
export function derivedSerial(nqn: string): string {
  return hexOf(digestOf(serialText(nqn)).subarray(0, 10));
}

/**
 * The UUID nvmeof gives namespace NSID of subsystem NQN: name-based, from SHA-256 (RFC 9562
 * version 8, variant 10).
 */
export function derivedNamespaceUuid(nqn: string, nsid: number): string {
  const b = digestOf(namespaceText(nqn, nsid)).subarray(0, 16);
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = hexOf(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The identities a plan is about to derive: subsystem NQNs, and namespaces as [NQN, NSID]. */
export interface ToDerive {
  serials: string[];
  namespaces: [string, number][];
}

/**
 * Hashes WANTED's identities ahead, all at once, with the platform's SHA-256 (WebCrypto), so that
 * derivedSerial and derivedNamespaceUuid find them. Planning is synchronous and would derive them
 * one by one with the SHA-256 in TypeScript, run by V8's interpreter until V8 compiles it: the 80
 * of a 16-subsystem spec took 5-9 ms natively and 90 ms in the lab guest that way, 2-3 ms and 30 ms
 * at once here (docs/benchmarks.md, "Target at scale", pass 21). The digests are the same bytes,
 * so one not hashed ahead is still derived, the same, when asked for. Returns how many it hashed
 * (none that is already hashed ahead and not yet taken).
 */
export async function hashAhead(wanted: ToDerive): Promise<number> {
  const texts = [
    ...wanted.serials.map(serialText),
    ...wanted.namespaces.map(([nqn, nsid]) => namespaceText(nqn, nsid)),
  ].filter((t) => !ahead.has(t));
  if (!texts.length) return 0;
  const enc = new TextEncoder();
  const digests = await Promise.all(
    texts.map((t) => crypto.subtle.digest("SHA-256", enc.encode(t))),
  );
  texts.forEach((t, i) => ahead.set(t, new Uint8Array(digests[i])));
  return texts.length;
}
