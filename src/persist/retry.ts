/**
 * The bounded retry of `connect --saved`: at boot a target may come up after the host (its port
 * not yet listening, its IP not yet assigned), so each saved connection that fails is tried
 * again with exponential backoff until it succeeds or the bound runs out.
 */
import { UsageError } from "../errors.ts";
import { sleep } from "../timer.ts";

/** First delay, growth factor and ceiling of the backoff, in milliseconds. */
export const BACKOFF = { firstMs: 1000, factor: 2, maxMs: 15_000 } as const;

/** The delay before retry number `n` (0-based): 1 s, 2 s, 4 s, 8 s, 15 s, 15 s, … */
export function backoffDelay(n: number): number {
  return Math.min(BACKOFF.maxMs, BACKOFF.firstMs * BACKOFF.factor ** n);
}

/** The outcome of trying one saved entry once. */
export interface AttemptOutcome<R> {
  /** Rows for the report (one per connected controller, or the failure). */
  rows: R[];
  /** True when the entry is done (connected, or failed in a way a retry cannot fix). */
  done: boolean;
  /** Why it is not done yet, for the progress line. */
  reason?: string;
}

/** Options of retrySaved. */
export interface RetryOptions {
  /** Give up after this long (0 = one attempt each). */
  retryForMs: number;
  note?: (line: string) => void;
  /** Injected in tests; real time otherwise. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** What retrySaved returns: the final rows of every entry, in entry order, and the rounds taken. */
export interface RetryResult<R> {
  rows: R[];
  attempts: number;
  elapsed_ms: number;
}

/**
 * Tries every entry; those not done are tried again after the backoff delay, never past the
 * bound. A UsageError (a broken saved entry or missing key file) is final at once: waiting will
 * not fix it. Each entry's rows are those of its last attempt.
 */
export async function retrySaved<E, R>(
  entries: E[],
  attempt: (entry: E) => Promise<AttemptOutcome<R>>,
  describe: (entry: E) => string,
  failedRow: (entry: E, reason: string) => R,
  options: RetryOptions,
): Promise<RetryResult<R>> {
  const now = options.now ?? (() => performance.now());
  const pause = options.sleep ?? sleep;
  const start = now();
  const deadline = start + options.retryForMs;
  const last = new Map<number, R[]>();
  let pending = entries.map((_, i) => i);
  let round = 0;
  for (;;) {
    round++;
    const still: number[] = [];
    for (const i of pending) {
      let outcome: AttemptOutcome<R>;
      try {
        outcome = await attempt(entries[i]);
      } catch (err) {
        const reason = (err as Error).message;
        outcome = {
          rows: [failedRow(entries[i], reason)],
          done: err instanceof UsageError,
          reason,
        };
      }
      last.set(i, outcome.rows);
      if (!outcome.done) {
        still.push(i);
        options.note?.(`attempt ${round}: ${describe(entries[i])}: ${outcome.reason ?? "failed"}`);
      }
    }
    pending = still;
    if (pending.length === 0) break;
    const delay = backoffDelay(round - 1);
    const left = deadline - now();
    if (left <= 0) break;
    const wait = Math.min(delay, left);
    options.note?.(
      `${pending.length} connection(s) not up; retrying in ${(wait / 1000).toFixed(1)} s ` +
        `(giving up in ${(left / 1000).toFixed(0)} s)`,
    );
    await pause(wait);
  }
  return {
    rows: entries.flatMap((_, i) => last.get(i) ?? []),
    attempts: round,
    elapsed_ms: Math.round(now() - start),
  };
}
