/**
 * Spinner.between, where the ping's loops take their event-loop turns between iterations, with no
 * device: the turns are counted through onTurn.
 */
import assert from "node:assert/strict";
import type { Connection } from "../../src/rdma/connection.ts";
import { Spinner } from "../../src/rdma/spin.ts";
import { CancelledError, type Canceller } from "../../src/wait.ts";

/** A spinner whose turns are counted; `between` never touches the connection. */
function spinner(cancel?: { check(): void }) {
  const turns: number[] = [];
  const spin = new Spinner({} as Connection, {
    timeoutMs: 1000,
    when: "in the test",
    total: 1000,
    cancel: cancel as Canceller | undefined,
    onTurn: (start) => turns.push(start),
  });
  return { spin, turns };
}

/** Calls between() n times; the indexes (1-based) of the calls that returned a turn. */
function calls(spin: Spinner, n: number): { at: number[]; waits: Promise<void>[] } {
  const at: number[] = [], waits: Promise<void>[] = [];
  for (let k = 1; k <= n; k++) {
    const w = spin.between();
    if (w) {
      at.push(k);
      waits.push(w);
    }
  }
  return { at, waits };
}

Deno.test("between() reads the clock once in 64 calls and takes a turn only when one is due", async () => {
  const { spin, turns } = spinner();
  const first = calls(spin, 192);
  // The first turn is due at once: taken on the 64th call, and not again within 250 ms.
  assert.deepEqual(first.at, [64]);
  await Promise.all(first.waits);
  assert.equal(turns.length, 1);
  assert.deepEqual(calls(spin, 640).at, []);
  await new Promise((r) => setTimeout(r, 300));
  const later = calls(spin, 64);
  assert.deepEqual(later.at, [64]);
  await Promise.all(later.waits);
  assert.equal(turns.length, 2);
});

Deno.test("between(): a cancel fired during the turn (Ctrl-C) ends the loop with CancelledError", async () => {
  let fired = false;
  const cancel = {
    check() {
      if (fired) throw new CancelledError("SIGINT received");
    },
  };
  const { spin } = spinner(cancel);
  // What a signal listener does in the turn the loop lets run (queued first, so it runs first).
  setImmediate(() => fired = true);
  const { waits } = calls(spin, 64);
  assert.equal(waits.length, 1);
  await assert.rejects(waits[0], CancelledError);
});
