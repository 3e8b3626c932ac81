/**
 * Waits that never block the event loop: poll(2) bound `nonblocking` (it runs on a worker
 * thread), on the fd of interest plus an eventfd that cancels every pending wait at once (SIGINT,
 * SIGTERM, or the program deciding to stop). The caller then makes its C call synchronously.
 */
import {
  EFD_CLOEXEC,
  EFD_NONBLOCK,
  errno,
  F_GETFL,
  F_SETFL,
  libc,
  O_NONBLOCK,
  POLLIN,
} from "../ffi/libc.ts";
import { EAGAIN } from "./errno.ts";
import { errnoName, FailureError, NativeError } from "./errors.ts";
import { OwnedFd } from "./fd.ts";

/** Thrown by a wait when its Canceller fired. */
export class CancelledError extends FailureError {
  constructor(reason: string) {
    super(`Stopped: ${reason}.`);
  }
}

/** Thrown by a wait whose time ran out. */
export class WaitTimeoutError extends FailureError {}

/** Puts `fd` in O_NONBLOCK mode so a sync read on it returns EAGAIN instead of blocking. */
export function setNonblocking(fd: number): void {
  const c = libc();
  const flags = c.fcntl(fd, F_GETFL, 0);
  if (flags < 0 || c.fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    const e = errno();
    throw new NativeError("fcntl", e, {
      message: `Cannot make fd ${fd} non-blocking: ${errnoName(e)} (${e}).`,
    });
  }
}

/**
 * An eventfd that cancels waits. `cancel()` is idempotent; once fired, every wait through it
 * throws CancelledError. `onSignals()` fires it on SIGINT/SIGTERM until disposed.
 */
export class Canceller extends OwnedFd {
  #reason: string | undefined;
  #signals: [Deno.Signal, () => void][] = [];

  constructor() {
    const fd = libc().eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) throw new NativeError("eventfd", errno());
    super(fd);
  }

  /** Why it fired, or undefined. */
  get reason(): string | undefined {
    return this.#reason;
  }

  /** Fires: every pending and future wait ends with CancelledError(reason). */
  cancel(reason: string): void {
    if (this.#reason !== undefined || !this.isOpen) return;
    this.#reason = reason;
    const one = new BigUint64Array([1n]);
    libc().write(this.fd, new Uint8Array(one.buffer), 8n);
  }

  /** Throws CancelledError when fired. */
  check(): void {
    if (this.#reason !== undefined) throw new CancelledError(this.#reason);
  }

  /** Cancels on SIGINT and SIGTERM (until close). */
  onSignals(): this {
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      const handler = () => this.cancel(`${sig} received`);
      Deno.addSignalListener(sig, handler);
      this.#signals.push([sig, handler]);
    }
    return this;
  }

  override close(): void {
    for (const [sig, h] of this.#signals) Deno.removeSignalListener(sig, h);
    this.#signals = [];
    super.close();
  }
}

/**
 * poll(2) for POLLIN on `fds` (a negative fd is ignored) on a worker thread, for at most
 * `timeoutMs`. Returns poll's result and each fd's revents.
 */
async function pollIn(
  fds: readonly number[],
  timeoutMs: number,
): Promise<{ n: number; revents: (i: number) => number }> {
  const buf = new Uint8Array(8 * Math.max(1, fds.length));
  const dv = new DataView(buf.buffer);
  fds.forEach((fd, i) => {
    dv.setInt32(8 * i, fd, true);
    dv.setInt16(8 * i + 4, POLLIN, true);
  });
  const n = await libc().poll_async(
    buf,
    BigInt(fds.length),
    Math.max(0, Math.min(timeoutMs, 2 ** 31 - 1)),
  );
  return { n, revents: (i) => dv.getInt16(8 * i + 6, true) };
}

/**
 * Waits until `fd` is readable, off the main thread. Returns true when readable, false when
 * `timeoutMs` passed. Throws CancelledError when the canceller fired.
 */
export async function waitReadable(
  fd: number,
  timeoutMs: number,
  cancel?: Canceller,
): Promise<boolean> {
  cancel?.check();
  const { n, revents } = await pollIn([fd, cancel ? cancel.fd : -1], timeoutMs);
  cancel?.check();
  if (n < 0) return true; // EINTR and friends: let the caller try its call and see
  return n > 0 && revents(0) !== 0;
}

/**
 * Waits (non-blocking poll on a worker thread) until any of `fds` is readable or `timeoutMs`
 * passes. Returns whether one was readable; an interrupted poll counts as readable.
 */
export async function waitAnyReadable(fds: readonly number[], timeoutMs: number): Promise<boolean> {
  return (await pollIn(fds, timeoutMs)).n !== 0;
}

/** Whether errno (read right after a failed call) says "nothing there yet". */
export function wouldBlock(e: number): boolean {
  return e === EAGAIN;
}
