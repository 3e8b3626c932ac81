import assert from "node:assert/strict";
import { every, sleep, timer } from "../../src/timer.ts";
import { ROOT, run } from "../helpers.ts";

/** Runs SCRIPT (TypeScript importing src/timer.ts as `T`) in a fresh Deno; its stdout and seconds. */
async function fresh(script: string): Promise<{ out: string; seconds: number }> {
  const t0 = performance.now();
  const r = await run(Deno.execPath(), [
    "eval",
    `const T = await import(${JSON.stringify(`${ROOT}/src/timer.ts`)});\n${script}`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  return { out: r.stdout.trim(), seconds: (performance.now() - t0) / 1000 };
}

Deno.test("timer: fires after its time, not before", async () => {
  const t0 = performance.now();
  await sleep(30);
  assert.ok(performance.now() - t0 >= 29, `woke after ${performance.now() - t0} ms`);
  const order: string[] = [];
  const a = timer(40);
  const b = timer(5);
  await Promise.all([a.done.then(() => order.push("40")), b.done.then(() => order.push("5"))]);
  assert.deepEqual(order, ["5", "40"]);
});

Deno.test("timer: a cancelled one never fires", async () => {
  let fired = false;
  const t = timer(10);
  t.done.then(() => fired = true);
  t.cancel();
  t.cancel();
  await sleep(40);
  assert.equal(fired, false);
});

Deno.test("timer: a pending one keeps the process alive, a cancelled one does not", async () => {
  const kept = await fresh(`await T.sleep(300); console.log("woke");`);
  assert.equal(kept.out, "woke");
  assert.ok(kept.seconds >= 0.3, `${kept.seconds} s`);
  // A minute's timer, cancelled: the process ends at once (setTimeout's would need clearTimeout).
  const freed = await fresh(`const t = T.timer(60_000); t.cancel(); console.log("done");`);
  assert.equal(freed.out, "done");
  assert.ok(freed.seconds < 30, `${freed.seconds} s`);
});

Deno.test("timer: bad or huge times are bounded, not thrown", async () => {
  for (const ms of [-5, Number.NaN, 0.2]) await timer(ms).done;
  const far = timer(Number.POSITIVE_INFINITY);
  const huge = timer(2 ** 40);
  let fired = false;
  for (const t of [far, huge]) t.done.then(() => fired = true);
  await sleep(20);
  far.cancel();
  huge.cancel();
  assert.equal(fired, false);
});

Deno.test("every: calls again and again until cancelled", async () => {
  let n = 0;
  const e = every(5, () => n++);
  while (n < 3) await sleep(5);
  e.cancel();
  const at = n;
  await sleep(30);
  assert.equal(n, at);
});
