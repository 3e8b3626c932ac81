/**
 * Timers without Deno's Node.js layer. Deno 2.9's global `setTimeout` returns Node's `Timeout`
 * and brings that layer up at its first call: 14 ms natively, 0.2–0.4 s in the lab guest
 * (docs/benchmarks.md, "Timers without the Node.js layer"), which `metrics` and `top` paid for
 * their collectors' time limit, and the agent for its rescans. `AbortSignal.timeout` is the web
 * platform's own timer: it keeps the process alive while its signal has an abort listener, and no
 * longer once the listener is removed, so a cancelled timer never holds the process up. The loops
 * that spin load the Node layer anyway (next_turn.ts).
 */

/** The longest wait a timer takes (setTimeout's bound); a longer one waits this long. */
const MAX_MS = 2 ** 31 - 1;

/** A timer that fires once. */
export interface Timer {
  /** Resolves when the time has passed; never, when cancelled before. */
  readonly done: Promise<void>;
  /** Stops it: `done` stays pending and the process is free to exit. Safe to call twice. */
  cancel(): void;
}

/** A timer of MS milliseconds (a negative or NaN is 0, fractions are rounded up, at most MAX_MS). */
export function timer(ms: number): Timer {
  const signal = AbortSignal.timeout(
    Number.isNaN(ms) ? 0 : Math.min(Math.max(0, Math.ceil(ms)), MAX_MS),
  );
  let fire = () => {};
  const done = new Promise<void>((resolve) => fire = resolve);
  const onAbort = () => fire();
  signal.addEventListener("abort", onAbort, { once: true });
  return { done, cancel: () => signal.removeEventListener("abort", onAbort) };
}

/** Resolves after MS milliseconds. */
export function sleep(ms: number): Promise<void> {
  return timer(ms).done;
}

/** Calls FN every MS milliseconds until cancelled (each wait starts when the last call returned). */
export function every(ms: number, fn: () => void): { cancel(): void } {
  let current: Timer | undefined;
  let stopped = false;
  const arm = () => {
    current = timer(ms);
    current.done.then(() => {
      if (stopped) return;
      fn();
      arm();
    });
  };
  arm();
  return {
    cancel: () => {
      stopped = true;
      current?.cancel();
    },
  };
}
