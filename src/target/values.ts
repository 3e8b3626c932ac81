/**
 * Checks of single values of the target spec: NQNs, IP addresses, UUIDs and NGUIDs. The section
 * validators, the one-line form and the plan share them.
 */
import { DISCOVERY_NQN, NQN_MAX_BYTES, NQN_PATTERN } from "./schema.ts";

/** Returns why `nqn` is not a usable NQN, or undefined when it is. */
export function nqnProblem(nqn: string): string | undefined {
  const bytes = new TextEncoder().encode(nqn).length;
  if (bytes === 0) return "is empty.";
  if (bytes > NQN_MAX_BYTES) {
    return `is ${bytes} bytes long; Linux hosts accept at most ${NQN_MAX_BYTES}.`;
  }
  if (nqn === DISCOVERY_NQN) return "is the discovery NQN, which no subsystem or host may use.";
  if (nqn.includes("/")) return "contains '/', which cannot be a configfs directory name.";
  // deno-lint-ignore no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(nqn)) return "contains whitespace or control characters.";
  if (!new RegExp(NQN_PATTERN, "u").test(nqn)) {
    return "is not of the form nqn.<yyyy-mm>.<reverse-domain>[:<name>].";
  }
  return undefined;
}

/** The IPv4 dotted quad check the kernel's inet_pton4 applies. */
export function isIpv4(s: string): boolean {
  const parts = s.split(".");
  return parts.length === 4 &&
    parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}

/** A textual IPv6 address (with optional embedded IPv4 tail and %scope is rejected). */
export function isIpv6(s: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":")) return false;
  let tail = 0;
  let body = s;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    if (!isIpv4(s.slice(lastColon + 1))) return false;
    body = s.slice(0, lastColon + 1) + "0:0";
    tail = 0;
  }
  const dbl = body.split("::");
  if (dbl.length > 2) return false;
  const groups = (x: string) => (x === "" ? [] : x.split(":"));
  const head = groups(dbl[0]);
  const rest = dbl.length === 2 ? groups(dbl[1]) : [];
  if (![...head, ...rest].every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  const n = head.length + rest.length + tail;
  return dbl.length === 2 ? n < 8 : n === 8;
}

/** A UUID in 8-4-4-4-12 hex form. */
export const UUID_RE =
  /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** NGUID text to 32 lowercase hex digits, or undefined if malformed. */
export function normalizeNguid(s: string): string | undefined {
  const hex = s.replace(/[-:]/g, "").toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) ? hex : undefined;
}
