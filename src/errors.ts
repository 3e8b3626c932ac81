/**
 * The error tree of nvmeof. Each class carries the process exit code that scripts can rely on:
 * 0 ok, 1 failure, 2 usage, 3 environment. Only main.ts turns these into an exit.
 *
 * Messages are sentence case, start with what failed, quote values, name the cause, and say what
 * to do next. Always attach `{ cause }` when wrapping another error.
 */
import { EACCES, EBUSY, EEXIST, EINVAL, ENOENT, ERRNO_NAMES } from "./errno.ts";
import type { LibraryLoadError } from "../ffi/loader.ts";

/** How many characters of a value a message quotes; the rest is counted, not shown. */
export const QUOTE_MAX = 80;

/**
 * A value of any type as a message shows it, safely: a string in single quotes with control
 * characters escaped (`\\0`, `\\n`), cut to its first `max` characters with its length said; a
 * number or boolean as itself; a mapping or a list named, never calling the value's own toString
 * (input may define one: `{toString: x}`).
 */
export function quote(v: unknown, max: number = QUOTE_MAX): string {
  if (typeof v === "string") {
    if (v.includes("DHHC-1:")) return "(a DH-HMAC-CHAP key, not shown)";
    const head = [...v.slice(0, 2 * max)].slice(0, max).join("");
    const shown = head.replace(
      // deno-lint-ignore no-control-regex
      /[\x00-\x1f\x7f\u2028\u2029]/g,
      (c) => c === "\0" ? "\\0" : JSON.stringify(c).slice(1, -1),
    );
    return head.length < v.length ? `'${shown}…' (${v.length} characters)` : `'${shown}'`;
  }
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  if (v === null) return "null";
  if (v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "a mapping" : `a ${typeof v}`;
}

/** A key or name as a message shows it: as it is when plain (`speed`), else quoted and cut. */
export function quoteName(k: string): string {
  return /^[A-Za-z0-9_.:-]{1,64}$/.test(k) && !k.includes("DHHC-1:") ? k : quote(k, 40);
}

/** A DH-HMAC-CHAP secret's text form, wherever it appears in a string. */
const SECRET_PATTERN = /DHHC-1:[^\s'",]*/g;

/**
 * `text` with every DH-HMAC-CHAP secret (`DHHC-1:…`) replaced: the last guard before a message
 * is printed. Code must not put secrets into messages in the first place.
 */
export function redactSecrets(text: string): string {
  return text.replace(SECRET_PATTERN, "DHHC-1:(secret, not shown)");
}

/** Exit codes. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  environment: 3,
} as const;

/** Base of every error nvmeof reports on purpose. */
export class NvmeofError extends Error {
  /** The process exit code for this error. */
  readonly exitCode: number = EXIT.failure;
  /** What to do about it, printed on its own line after the message. */
  readonly hint?: string;

  constructor(message: string, options?: { cause?: unknown; hint?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.hint = options?.hint;
  }
}

/** A command failed (exit 1). */
export class FailureError extends NvmeofError {}

/** The command line is wrong: unknown flag, missing value, bad argument (exit 2). */
export class UsageError extends NvmeofError {
  override readonly exitCode: number = EXIT.usage;
}

/**
 * The host cannot do what was asked: not root, configfs or a kernel module missing, no RDMA
 * device, a shared library missing (exit 3).
 */
export class EnvironmentError extends NvmeofError {
  override readonly exitCode: number = EXIT.environment;
}

/** Returns "EINVAL" for 22, "errno 999" for values not in the table. */
export function errnoName(errno: number): string {
  return ERRNO_NAMES[Math.abs(errno)] ?? `errno ${Math.abs(errno)}`;
}

/** A C function failed: carries the function name and the errno. */
export class NativeError extends FailureError {
  readonly function: string;
  readonly errno: number;

  constructor(
    fn: string,
    errno: number,
    options?: { message?: string; cause?: unknown; hint?: string },
  ) {
    super(
      options?.message ?? `${fn}() failed: ${errnoName(errno)} (${errno})`,
      options,
    );
    this.function = fn;
    this.errno = errno;
  }
}

/**
 * Maps a Deno filesystem error to its errno, or undefined when it has none. Deno's message of an
 * OS error carries its number ("… (os error 99): …"), whatever errno it is; it also sets `code`
 * (e.g. "ENOENT") on the errors it knows; the classes cover the common ones.
 */
export function errnoOf(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const os = /\(os error (\d+)\)/.exec(err.message);
  if (os) return Number(os[1]);
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    for (const [num, name] of Object.entries(ERRNO_NAMES)) {
      if (name === code) return Number(num);
    }
  }
  if (err instanceof Deno.errors.NotFound) return ENOENT;
  if (err instanceof Deno.errors.PermissionDenied) return EACCES;
  if (err instanceof Deno.errors.AlreadyExists) return EEXIST;
  if (err instanceof Deno.errors.Busy) return EBUSY;
  if (err instanceof Deno.errors.InvalidData) return EINVAL;
  return undefined;
}

/**
 * Whether `err` is ffi/loader.ts' LibraryLoadError, recognised by its name so that start-up
 * (which loads this module) loads nothing from ffi/.
 */
function isLibraryLoadError(err: unknown): err is LibraryLoadError {
  return err instanceof Error && err.name === "LibraryLoadError" &&
    Array.isArray((err as Partial<LibraryLoadError>).tried);
}

/**
 * The error as this tree sees it: a LibraryLoadError from ffi/ (which imports nothing from src/)
 * is an EnvironmentError (exit 3); any other error is itself.
 */
export function ownError(err: unknown): unknown {
  if (isLibraryLoadError(err)) {
    return new EnvironmentError(err.message, { hint: err.hint, cause: err });
  }
  return err;
}

/** The exit code an error ends the process with: its own, or failure (1) for unexpected ones. */
export function exitCodeOf(err: unknown): number {
  const own = ownError(err);
  return own instanceof NvmeofError ? own.exitCode : EXIT.failure;
}

/** What is said of an error nvmeof did not expect (one that is not an NvmeofError). */
const BUG_HINT = "this is a bug in nvmeof; run with --verbose for details";

/** An error as `-o json` prints it on stdout: `{"error": {message, hint?, exit_code}}`. */
export function errorRecord(raw: unknown): { message: string; hint?: string; exit_code: number } {
  const err = ownError(raw);
  const message = redactSecrets(err instanceof Error ? err.message : String(err));
  const own = err instanceof NvmeofError ? err.hint : err instanceof Error ? BUG_HINT : undefined;
  const hint = own === undefined ? undefined : redactSecrets(own);
  return { message, ...(hint ? { hint } : {}), exit_code: exitCodeOf(err) };
}

/** Formats an error for stderr: `error: …`, the hint, and with `verbose` the cause chain. */
export function formatError(raw: unknown, verbose: boolean): string {
  const err = ownError(raw);
  const lines: string[] = [];
  if (err instanceof NvmeofError) {
    lines.push(`error: ${err.message}`);
    if (err.hint) lines.push(`  ${err.hint.replaceAll("\n", "\n  ")}`);
  } else if (err instanceof Error) {
    lines.push(`error: ${err.message}`);
    if (!verbose) lines.push(`  (${BUG_HINT})`);
  } else {
    lines.push(`error: ${String(err)}`);
  }
  if (verbose) {
    let cause = err instanceof Error ? err.cause : undefined;
    while (cause !== undefined) {
      lines.push(`  caused by: ${cause instanceof Error ? cause.message : String(cause)}`);
      cause = cause instanceof Error ? cause.cause : undefined;
    }
    if (err instanceof Error && !(err instanceof NvmeofError) && err.stack) {
      lines.push(err.stack);
    }
  }
  return redactSecrets(lines.join("\n"));
}
