/**
 * The error tree of nvmeof. Each class carries the process exit code that scripts can rely on:
 * 0 ok, 1 failure, 2 usage, 3 environment. Only main.ts turns these into an exit.
 *
 * Messages are sentence case, start with what failed, quote values, name the cause, and say what
 * to do next. Always attach `{ cause }` when wrapping another error.
 */

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

/** errno names for the values this tool meets (x86_64 Linux). */
export const ERRNO_NAMES: Readonly<Record<number, string>> = {
  1: "EPERM",
  2: "ENOENT",
  4: "EINTR",
  5: "EIO",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  16: "EBUSY",
  17: "EEXIST",
  19: "ENODEV",
  20: "ENOTDIR",
  21: "EISDIR",
  22: "EINVAL",
  28: "ENOSPC",
  38: "ENOSYS",
  61: "ENODATA",
  90: "EMSGSIZE",
  95: "EOPNOTSUPP",
  98: "EADDRINUSE",
  99: "EADDRNOTAVAIL",
  101: "ENETUNREACH",
  104: "ECONNRESET",
  110: "ETIMEDOUT",
  111: "ECONNREFUSED",
  113: "EHOSTUNREACH",
  114: "EALREADY",
  115: "EINPROGRESS",
};

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
 * Maps a Deno filesystem error to its errno, or undefined when it has none. Deno sets `code`
 * (e.g. "ENOENT") on its errors; the classes cover the common ones.
 */
export function errnoOf(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    for (const [num, name] of Object.entries(ERRNO_NAMES)) {
      if (name === code) return Number(num);
    }
  }
  if (err instanceof Deno.errors.NotFound) return 2;
  if (err instanceof Deno.errors.PermissionDenied) return 13;
  if (err instanceof Deno.errors.AlreadyExists) return 17;
  if (err instanceof Deno.errors.Busy) return 16;
  if (err instanceof Deno.errors.InvalidData) return 22;
  return undefined;
}

/** The exit code an error ends the process with: its own, or failure (1) for unexpected ones. */
export function exitCodeOf(err: unknown): number {
  return err instanceof NvmeofError ? err.exitCode : EXIT.failure;
}

/** What is said of an error nvmeof did not expect (one that is not an NvmeofError). */
const BUG_HINT = "this is a bug in nvmeof; run with --verbose for details";

/** An error as `-o json` prints it on stdout: `{"error": {message, hint?, exit_code}}`. */
export function errorRecord(err: unknown): { message: string; hint?: string; exit_code: number } {
  const message = err instanceof Error ? err.message : String(err);
  const hint = err instanceof NvmeofError ? err.hint : err instanceof Error ? BUG_HINT : undefined;
  return { message, ...(hint ? { hint } : {}), exit_code: exitCodeOf(err) };
}

/** Formats an error for stderr: `error: …`, the hint, and with `verbose` the cause chain. */
export function formatError(err: unknown, verbose: boolean): string {
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
  return lines.join("\n");
}
