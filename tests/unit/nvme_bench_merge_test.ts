/** How `bench` folds the per-queue results of one pass into the pass's figures. */
import assert from "node:assert/strict";
import { mergeResults, type PassResult, Samples } from "../../src/nvme/bench.ts";

function part(ios: number, lat: number[], mismatch?: number): PassResult {
  const latencies = new Samples();
  for (const v of lat) latencies.push(v);
  return { ios, bytes: ios * 4096, seconds: 0, latencies, mismatch };
}

Deno.test("mergeResults sums I/Os and bytes, keeps every latency and the lowest mismatch", () => {
  const all = mergeResults([part(3, [5, 6, 7], 900), part(2, [1, 9]), part(1, [4], 40)], 2.5);
  assert.equal(all.ios, 6);
  assert.equal(all.bytes, 6 * 4096);
  assert.equal(all.seconds, 2.5);
  assert.deepEqual([...all.latencies.values()].sort((a, b) => a - b), [1, 4, 5, 6, 7, 9]);
  assert.equal(all.mismatch, 40);
});

Deno.test("mergeResults of clean queues has no mismatch, and of none is empty", () => {
  assert.equal(mergeResults([part(1, [2]), part(1, [3])], 1).mismatch, undefined);
  const none = mergeResults([], 1);
  assert.equal(none.ios, 0);
  assert.equal(none.latencies.length, 0);
});
