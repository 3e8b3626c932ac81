/**
 * Orders of names as people read them.
 */

let collator: Intl.Collator | undefined;

/** Kernel names (nvme1c2n1, nvme-subsys3, rxe0): lower-case letters, digits and hyphens only. */
const PLAIN = /^[a-z0-9-]*$/;

const ZERO = 0x30;
const NINE = 0x39;

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/**
 * Compares names as people count: nvme2 before nvme10, nvme1c2n1 before nvme1c10n1, by the
 * `en` collation with numeric ordering. Names of lower-case letters, digits and hyphens (the
 * kernel's) are compared here, in that collation's order (a hyphen before digits, digits before
 * letters, a run of digits by its value); others, and runs of digits equal but for leading zeros,
 * by the collator. The collator is made once, on first use: `localeCompare` with options builds one
 * per call, and one call of it costs about 0.1 ms in the lab guest (a compute node's top sorts
 * hundreds of device names).
 */
export function byNumbers(a: string, b: string): number {
  if (PLAIN.test(a) && PLAIN.test(b)) {
    const plain = comparePlain(a, b);
    if (plain !== 0 || a === b) return plain;
  }
  return (collator ??= new Intl.Collator("en", { numeric: true })).compare(a, b);
}

/** byNumbers for two plain names; 0 also when they differ only in leading zeros. */
function comparePlain(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    if (isDigit(ca) && isDigit(cb)) {
      let endA = i;
      while (endA < a.length && isDigit(a.charCodeAt(endA))) endA++;
      let endB = j;
      while (endB < b.length && isDigit(b.charCodeAt(endB))) endB++;
      while (i < endA - 1 && a.charCodeAt(i) === ZERO) i++;
      while (j < endB - 1 && b.charCodeAt(j) === ZERO) j++;
      // Without leading zeros, the longer run is the larger number; else the first digit apart.
      if (endA - i !== endB - j) return (endA - i) - (endB - j);
      for (; i < endA; i++, j++) {
        const d = a.charCodeAt(i) - b.charCodeAt(j);
        if (d !== 0) return d;
      }
      continue;
    }
    // A hyphen, the digits and the letters are in the collation's order as code units.
    if (ca !== cb) return ca - cb;
    i++;
    j++;
  }
  return (a.length - i) - (b.length - j);
}
