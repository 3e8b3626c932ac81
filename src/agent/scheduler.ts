/**
 * One scan at a time: requests (an endpoint and why) that arrive while a scan runs are gathered,
 * and exactly one more scan runs after it with all of them; a request is never dropped. Requests
 * made in the same turn of the event loop share one scan, so a burst of uevents costs a few scans.
 */

/** Why an endpoint's log is read again. */
export type ScanReason =
  | "start"
  | "referral"
  | "log-changed"
  | "rediscover"
  | "lost"
  | "removed"
  | "overflow"
  | "periodic"
  | "retry";

/** The endpoints one scan reads, each with the first reason it was asked for. */
export type ScanBatch = Map<string, ScanReason>;

/** Runs scans one at a time, coalescing the requests made meanwhile. */
export class ScanScheduler {
  #pending: ScanBatch = new Map();
  #running: Promise<void> | undefined;
  #scans = 0;
  readonly #scan: (batch: ScanBatch) => Promise<void>;
  readonly #onError: (err: unknown) => void;

  /** SCAN reads the endpoints of a batch; a throw is given to ON_ERROR and scanning goes on. */
  constructor(scan: (batch: ScanBatch) => Promise<void>, onError: (err: unknown) => void) {
    this.#scan = scan;
    this.#onError = onError;
  }

  /** How many scans have started. */
  get scans(): number {
    return this.#scans;
  }

  /** Whether a scan is running or due. */
  get busy(): boolean {
    return this.#running !== undefined;
  }

  /** Asks for a scan of ENDPOINT: now when idle, else once the running scan ends. */
  request(endpoint: string, reason: ScanReason): void {
    if (!this.#pending.has(endpoint)) this.#pending.set(endpoint, reason);
    this.#running ??= this.#loop();
  }

  /** Settles when no scan runs and none is due. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #loop(): Promise<void> {
    await Promise.resolve(); // the requests of this turn join the first batch
    try {
      while (this.#pending.size > 0) {
        const batch = this.#pending;
        this.#pending = new Map();
        this.#scans++;
        try {
          await this.#scan(batch);
        } catch (err) {
          this.#onError(err);
        }
      }
    } finally {
      this.#running = undefined;
    }
  }
}
