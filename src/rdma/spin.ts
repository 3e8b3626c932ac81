/**
 * The busy loops of the ping tool (client and server): spin on memory or on the CQ, reap every
 * completion (an error status throws), and every so often check that the peer is still there and
 * let the event loop run, with a bound on time without progress.
 */
import { IBV_WC_OPCODE } from "../../ffi/enums.ts";
import { FailureError } from "../errors.ts";
import { checkCompletion } from "./completion.ts";
import type { Connection } from "./connection.ts";
import { nextTurn } from "../next_turn.ts";
import type { Canceller } from "../wait.ts";

/** How often a spinning loop reaps the CQ and checks on the peer (masks of the spin count). */
export interface Pace {
  /** Reap when `spins & reapMask` is 0. */
  reapMask: number;
  /** Then check liveness and maybe yield when `spins & yieldMask` is 0. */
  yieldMask: number;
}
/** Waiting for a completion: reap every spin, check every 256. */
export const REAP_EVERY_SPIN: Pace = { reapMask: 0, yieldMask: 255 };
/** Polling memory (like ib_write_lat): the CQ every 16 spins (errors, sends), check every 4096. */
export const POLL_MEMORY: Pace = { reapMask: 15, yieldMask: 4095 };

/** How often a spinning loop checks on the peer and its time without progress (ms). */
const CHECK_MS = 50;
/**
 * How often it lets the event loop run (ms), for signals (Ctrl-C) and timers: a turn is not free
 * (in the lab under load one took tens of ms, the peer waiting all the while), so fewer than checks.
 */
const TURN_MS = 250;
/** How many iterations apart `between` reads the clock (a power of two). */
const BETWEEN_EVERY = 64;

/** What a Spinner watches for. */
export interface SpinOptions {
  /** Time without progress that ends the run. */
  timeoutMs: number;
  cancel?: Canceller;
  /** Where the completions come from, for CompletionError ("during the ping"). */
  when: string;
  /** Iterations of the run, for the messages. */
  total: number;
  /** Told when each event-loop turn began and ended (performance.now()), for measurements. */
  onTurn?: (start: number, end: number) => void;
}

/**
 * Drives the spinning loops of one connection: reaps completions (counting sends and receives,
 * throwing on an error status), gives up after `timeoutMs` without progress, every CHECK_MS
 * checks the CM channel for the peer's DISCONNECTED, and every TURN_MS lets the event loop run
 * (signals, timers).
 */
export class Spinner {
  /** Send-side and receive completions reaped so far. */
  sends = 0;
  recvs = 0;
  /** Signalled send-side WRs posted so far (`sends` catches up with it). */
  signalled = 0;
  readonly #drained = () => this.sends >= this.signalled;
  // Made once: an arrow written in a method called every iteration costs an allocation per call.
  readonly #countSignalled = () => {
    this.signalled++;
  };
  readonly #checkCancel = () => this.#options.cancel?.check();
  #spins = 0;
  #deadline = 0;
  #nextCheck = 0;
  #turnDue = 0;
  #between = 0;
  #moved = true;
  readonly #conn: Connection;
  readonly #options: SpinOptions;

  constructor(conn: Connection, options: SpinOptions) {
    this.#conn = conn;
    this.#options = options;
  }

  /**
   * Between two iterations: every BETWEEN_EVERY calls, the event-loop turn when one is due
   * (undefined when none is). A loop that calls this before each timed round trip takes its
   * turns there, outside the round trips (and with them whatever the runtime does when the
   * awaiting function resumes); a wait that runs long still takes them in `until`. It also keeps
   * signals (Ctrl-C) handled in a run whose waits never run long enough to yield.
   */
  between(): Promise<void> | undefined {
    if ((++this.#between & (BETWEEN_EVERY - 1)) !== 0) return undefined;
    const now = performance.now();
    if (now < this.#turnDue) return undefined;
    return this.#turn(now).then(this.#checkCancel);
  }

  /** The loop moved on (no clock read: the next check restarts the no-progress bound). */
  progress(): void {
    this.#moved = true;
    this.#spins = 0;
  }

  /** Reaps what the CQ holds; throws CompletionError on an error status. */
  reap(): void {
    const cq = this.#conn.ep.cq;
    const n = cq.poll();
    for (let k = 0; k < n; k++) {
      checkCompletion(cq, k, this.#options.when);
      if (cq.opcode(k) & IBV_WC_OPCODE.RECV) this.recvs++;
      else this.sends++;
    }
  }

  /**
   * Spins until every signalled send-side WR posted so far has completed (like `until`): done
   * before the next signalled post, it bounds the WRs outstanding on the send queue.
   */
  drain(i: number): Promise<void> | undefined {
    return this.until(this.#drained, "a send completion", i);
  }

  /**
   * Before a signalled send-side post in iteration `i`: drains (above), then counts the post.
   * Undefined when nothing had to be waited for, as `until`.
   */
  beforeSignalled(i: number): Promise<void> | undefined {
    const wait = this.drain(i);
    if (!wait) {
      this.signalled++;
      return undefined;
    }
    return wait.then(this.#countSignalled);
  }

  /**
   * Spins until `done()` (waiting for `what` in iteration `i`). Returns undefined when it is done
   * without having had to yield, else a promise of the rest of the wait: the fast path costs no
   * await (a microtask turn inside the timed round trip).
   */
  until(
    done: () => boolean,
    what: string,
    i: number,
    pace = REAP_EVERY_SPIN,
  ): Promise<void> | undefined {
    while (!done()) {
      if ((++this.#spins & pace.reapMask) !== 0) continue;
      this.reap();
      if ((this.#spins & pace.yieldMask) !== 0) continue;
      const y = this.#slow(what, i);
      if (y) return this.#after(y, done, what, i, pace);
    }
    return undefined;
  }

  /**
   * The rest of a wait that yielded. Its own method: a closure in `until` would have the runtime
   * allocate a context for the captured arguments on every call, the fast ones too, and that
   * garbage is what the collector later stops a spinning loop for: in the lab the ping server
   * grew its heap by 470-640 KiB/s and collected 5 times (2-7 ms each) in a 40000-iteration
   * ping; with the closures out of the per-iteration methods, 34-50 KiB/s and not once.
   */
  #after(
    y: Promise<void>,
    done: () => boolean,
    what: string,
    i: number,
    pace: Pace,
  ): Promise<void> {
    return y.then(() => this.until(done, what, i, pace));
  }

  /** Every few hundred spins: a promise to await when the loop should yield. */
  #slow(what: string, done: number): Promise<void> | undefined {
    const { timeoutMs, total } = this.#options;
    const now = performance.now();
    if (this.#moved) {
      this.#moved = false;
      this.#deadline = now + timeoutMs;
      if (this.#nextCheck === 0) this.#nextCheck = now + 10;
    }
    if (now < this.#nextCheck) return undefined;
    this.#nextCheck = now + CHECK_MS;
    this.#options.cancel?.check();
    const ev = this.#conn.pollEnd();
    if (ev) {
      throw new FailureError(
        `The peer went away during the run: ${ev.name} after ${done} of ${total} iterations.`,
      );
    }
    if (now > this.#deadline) {
      throw new FailureError(
        `No progress for ${timeoutMs} ms waiting for ${what} (iteration ${done + 1} of ${total}).`,
        { hint: "The peer stopped answering; check that it is still running." },
      );
    }
    if (now < this.#turnDue) return undefined;
    return this.#turn(now);
  }

  /** One event-loop turn, the next one due TURN_MS after `now`. */
  #turn(now: number): Promise<void> {
    this.#turnDue = now + TURN_MS;
    const { onTurn } = this.#options;
    return onTurn ? nextTurn().then(() => onTurn(now, performance.now())) : nextTurn();
  }
}
