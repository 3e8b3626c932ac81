/**
 * The problem collector every section validator of the target spec writes to, with the checks
 * they share (keys, lists, strings, integers, NQNs, file paths, duplicates). Each check reports
 * under the spec path it is given and returns the value when it is good, undefined when not.
 */
import { readKeyFile } from "../../host/key_file.ts";
import { quote, quoteName } from "../../errors.ts";
import type { SpecProblem } from "../spec.ts";
import { nqnProblem } from "../values.ts";

/** A parsed YAML mapping. */
export type Obj = Record<string, unknown>;

/** Whether a parsed value is a mapping. */
export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** "a, b or c" for messages. */
export function orList(values: string[], quote = false): string {
  const v = values.map((x) => (quote ? `'${x}'` : x));
  return v.length < 2 ? v.join("") : `${v.slice(0, -1).join(", ")} or ${v[v.length - 1]}`;
}

/** The problems found so far and the checks that add to them. */
export class SpecContext {
  readonly problems: SpecProblem[] = [];
  /** Check that devices and key files exist with the right kinds and modes. */
  readonly checkFiles: boolean;

  constructor(options: { checkFiles: boolean }) {
    this.checkFiles = options.checkFiles;
  }

  /** Records one problem at `path`. */
  bad(path: string, message: string, fix: string): void {
    this.problems.push({ path, message, fix });
  }

  /** Reports every key of `o` that is not in `known`. */
  keys(o: Obj, path: string, known: readonly string[]): void {
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) {
        this.bad(
          path ? `${path}.${quoteName(k)}` : quoteName(k),
          `is not a known key.`,
          `Remove it; known keys: ${known.join(", ")}.`,
        );
      }
    }
  }

  /** The list under `key` (absent or null: empty). */
  list(o: Obj, key: string, path: string): unknown[] {
    const v = o[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      this.bad(path, `must be a list, not ${typeof v}.`, `Write it as a YAML list ('- …' items).`);
      return [];
    }
    return v;
  }

  /** A required non-empty string (a number is taken as its text). */
  str(v: unknown, path: string, what: string): string | undefined {
    if (typeof v === "string" && v !== "") return v;
    if (typeof v === "number") return String(v);
    this.bad(
      path,
      v === undefined ? "is missing." : `must be a non-empty string, not ${quote(v)}.`,
      `Give ${what}.`,
    );
    return undefined;
  }

  /** An optional non-empty string under `key`. */
  optStr(o: Obj, key: string, path: string, what: string): string | undefined {
    return o[key] === undefined ? undefined : this.str(o[key], `${path}.${key}`, what);
  }

  /** An optional boolean under `key`, `dflt` when absent. */
  bool(o: Obj, key: string, path: string, dflt: boolean): boolean {
    const v = o[key];
    if (v === undefined) return dflt;
    if (typeof v === "boolean") return v;
    this.bad(`${path}.${key}`, `must be true or false, not ${quote(v)}.`, `Write true or false.`);
    return dflt;
  }

  /** An integer from min to max (a string of digits counts). */
  int(v: unknown, path: string, range: readonly [number, number]): number | undefined {
    const [min, max] = range;
    const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
    if (typeof n === "number" && Number.isInteger(n) && n >= min && n <= max) return n;
    this.bad(
      path,
      v === undefined
        ? "is missing."
        : `must be an integer from ${min} to ${max}, not ${quote(v)}.`,
      `Give an integer from ${min} to ${max}.`,
    );
    return undefined;
  }

  /** An NQN nvmet and Linux hosts accept. */
  nqn(v: unknown, path: string): string | undefined {
    const s = this.str(v, path, "an NQN such as nqn.2026-10.com.example:storage-1");
    if (s === undefined) return undefined;
    const why = nqnProblem(s);
    if (why) {
      this.bad(
        path,
        `NQN ${quote(s)} ${why}`,
        "Use an NQN like nqn.2026-10.com.example:storage-1 (at most 222 bytes).",
      );
      return undefined;
    }
    return s;
  }

  /** An optional string of 1 to `max` printable ASCII characters under `key`. */
  printable(o: Obj, key: string, path: string, max: number): string | undefined {
    const s = this.optStr(o, key, path, `1 to ${max} printable ASCII characters`);
    if (s !== undefined && !new RegExp(`^[\\x20-\\x7e]{1,${max}}$`).test(s)) {
      this.bad(
        `${path}.${key}`,
        `${quote(s)} must be 1 to ${max} printable ASCII characters (the kernel's limit).`,
        `Shorten it or remove other characters.`,
      );
      return undefined;
    }
    return s;
  }

  /**
   * Reports every value after its first occurrence (undefined: none to compare); the value at
   * index I is at spec path `pathOf(I)`, which is asked only for a duplicate and its first.
   */
  dupes(
    values: readonly (string | number | undefined)[],
    pathOf: (i: number) => string,
    what: string,
    fix: string,
  ): void {
    const seen = new Map<string | number, number>();
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === undefined) continue;
      const first = seen.get(v);
      if (first !== undefined) {
        this.bad(pathOf(i), `duplicates ${what} ${quote(String(v))} of ${pathOf(first)}.`, fix);
      } else seen.set(v, i);
    }
  }

  /** A file path: refuses control characters (a NUL would cut the path the kernel sees). */
  pathStr(o: Obj, key: string, path: string, what: string): string | undefined {
    const f = this.optStr(o, key, path, what);
    // deno-lint-ignore no-control-regex
    if (f !== undefined && /[\x00-\x1f\x7f]/.test(f)) {
      this.bad(
        `${path}.${key}`,
        `${quote(f)} contains a control character.`,
        "Write the path without NUL, newline or other control characters.",
      );
      return undefined;
    }
    return f;
  }

  /** A DH-HMAC-CHAP key file, checked for existence and mode when files are checked. */
  keyFile(o: Obj, key: string, path: string): string | undefined {
    const f = this.pathStr(o, key, path, "the path of a key file");
    if (f === undefined || !this.checkFiles) return f;
    const r = readKeyFile(f);
    if ("problem" in r) this.bad(`${path}.${key}`, r.problem.message, r.problem.fix);
    return f;
  }
}
