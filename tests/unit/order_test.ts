import assert from "node:assert/strict";
import { byNumbers } from "../../src/order.ts";
import { rng } from "../helpers.ts";

const icu = new Intl.Collator("en", { numeric: true });

Deno.test("byNumbers: kernel names in numeric order", () => {
  assert.deepEqual(
    ["nvme10", "nvme2", "nvme1c10n1", "nvme1c2n1", "nvme1", "nvme-subsys10", "nvme-subsys9"].sort(
      byNumbers,
    ),
    ["nvme-subsys9", "nvme-subsys10", "nvme1", "nvme1c2n1", "nvme1c10n1", "nvme2", "nvme10"],
  );
  assert.equal(byNumbers("nvme3", "nvme3"), 0);
});

Deno.test("byNumbers: the order of the en collation with numeric ordering, on random names", () => {
  // Plain names are compared without the collator: the sign must be the collator's every time,
  // leading zeros and hyphens included; other names go to the collator.
  const r = rng(0x0dd5);
  const alphabet = ["a", "b", "c", "n", "v", "m", "e", "z", "-", "0", "1", "2", "9", "10", "007"];
  const name = () => Array.from({ length: 1 + r.int(8) }, () => r.pick(alphabet)).join("");
  const other = ["A", ".", ":", "_", " ", "é", "Z"];
  let plain = 0;
  for (let n = 0; n < 20_000; n++) {
    let a = name();
    let b = r.int(4) === 0 ? a.replace(/\d+/, (d) => `0${d}`) : name();
    if (r.int(10) === 0) a += r.pick(other);
    if (r.int(10) === 0) b = r.pick(other) + b;
    if (/^[a-z0-9-]*$/.test(a) && /^[a-z0-9-]*$/.test(b)) plain++;
    assert.equal(Math.sign(byNumbers(a, b)), Math.sign(icu.compare(a, b)), `${a} vs ${b}`);
  }
  assert.ok(plain > 10_000, `${plain} plain pairs`);
});
