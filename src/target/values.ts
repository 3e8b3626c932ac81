/**
 * Checks of single values of the target spec: NQNs, IP addresses, UUIDs and NGUIDs. The section
 * validators, the one-line form and the plan share them.
 */
import { DISCOVERY_NQN, NQN_MAX_BYTES, nqnBytesOverLimit } from "../fabrics/nqn.ts";
import { isIpv6 as isIpv6Address } from "../net/address.ts";
import { ANA_STATES } from "../configfs/nvmet.ts";
import { NQN_FORM_PATTERN, NQN_PATTERN } from "./schema.ts";

/** The patterns every check shares: a spec names hundreds of hosts. */
const NQN_RE = new RegExp(NQN_PATTERN, "u");
const NQN_FORM_RE = new RegExp(NQN_FORM_PATTERN, "u");

/** Returns why `nqn` is not a usable NQN, or undefined when it is. */
export function nqnProblem(nqn: string): string | undefined {
  if (nqn === "") return "is empty.";
  const bytes = nqnBytesOverLimit(nqn);
  if (bytes !== undefined) {
    return `is ${bytes} bytes long; Linux hosts accept at most ${NQN_MAX_BYTES}.`;
  }
  if (nqn === DISCOVERY_NQN) return "is the discovery NQN, which no subsystem or host may use.";
  // One pattern (the schema's) for a good name; the reason is looked for only in a bad one.
  if (NQN_RE.test(nqn)) return undefined;
  if (nqn.includes("/")) return "contains '/', which cannot be a configfs directory name.";
  // deno-lint-ignore no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(nqn)) return "contains whitespace or control characters.";
  return "cannot be an nvmet object name.";
}

/**
 * Whether an NQN has the form the NVMe specification asks for (nqn.<yyyy-mm>.<domain>[:<name>]);
 * nvmet accepts others (nvmetcli's `testnqn`), so this is worth a warning, not a refusal.
 */
export function isNqnForm(nqn: string): boolean {
  return nqn === "" || NQN_FORM_RE.test(nqn);
}

/** IPv4 as the kernel's inet_pton4 takes it: the one parser, in net/address.ts. */
export { isIpv4 } from "../net/address.ts";

/** A textual IPv6 address; a port's addr_traddr takes no %zone, so the target refuses one. */
export function isIpv6(s: string): boolean {
  return isIpv6Address(s, { zone: false });
}

/** A UUID in 8-4-4-4-12 hex form. */
export const UUID_RE =
  /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** NGUID text to 32 lowercase hex digits, or undefined if malformed. */
export function normalizeNguid(s: string): string | undefined {
  const hex = s.replace(/[-:]/g, "").toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) ? hex : undefined;
}

/** Edit distance (Levenshtein), for "did you mean" suggestions. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length];
}

/** The choice closest to `word` within `max` edits (the first of equals), for "did you mean". */
export function nearest(
  word: string,
  choices: readonly string[],
  max = 2,
): string | undefined {
  let best: string | undefined;
  let bestD = max + 1;
  for (const c of choices) {
    const d = distance(word, c);
    if (d < bestD) [best, bestD] = [c, d];
  }
  return best;
}

/** The ANA state a misspelt one was meant to be ("optimised", "non_optimized"), if any. */
export function nearestAnaState(word: string): string | undefined {
  return nearest(word.toLowerCase().replace(/[_ ]/g, "-"), ANA_STATES);
}
