/**
 * Yielding to the event loop from a busy-polling loop, kept apart from the fd waits (wait.ts):
 * node:timers brings up Deno's Node.js layer, 80 ms of start-up in the lab guest, so only the
 * loops that spin (rdma/spin.ts, nvme/bench.ts) load it.
 */
import { setImmediate } from "node:timers";

/**
 * One turn of the event loop (signals, timers, finished async ops) without sleeping, for loops
 * that busy-poll and must still let the loop run now and then. Not `setTimeout(r, 0)`: that
 * sleeps at least 1 ms (4 ms once nested), and a thread that sleeps gives its CPU away; on a
 * loaded or emulated machine getting it back took tens of ms (the tail of `rdma ping`).
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
