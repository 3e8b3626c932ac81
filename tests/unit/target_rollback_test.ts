import assert from "node:assert/strict";
import { readTree } from "../../src/configfs/nvmet.ts";
import { ApplyError, applyPlan } from "../../src/target/apply.ts";
import { planDown, planUp } from "../../src/target/plan.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { StandinConfigfs } from "../../src/configfs/standin.ts";
import { devices, snapshot, standin, SUB1, twoSubsystemSpec } from "./target_fixtures.ts";

/**
 * For each step of a plan, a run whose that step fails must leave the tree exactly as it was
 * (every file's text and every link) and name the kernel's errno.
 */
function failEachStep(
  label: string,
  setup: (io: ReturnType<typeof standin>, dev: string[]) => void,
  plan: (io: ReturnType<typeof standin>, dev: string[]) => ReturnType<typeof planUp>,
) {
  Deno.test(`rollback after a failure at any step of ${label} leaves the tree exactly as before`, () => {
    using dev = devices(4);
    // count the steps once
    let n: number;
    {
      using io = standin();
      setup(io, dev);
      n = plan(io, dev).length;
    }
    assert.ok(n > 3, `the scenario has steps (${n})`);
    for (let i = 1; i <= n; i++) {
      using io = standin();
      setup(io, dev);
      const before = snapshot(io.root);
      const steps = plan(io, dev);
      // The same tree, with the i-th configfs operation of this apply failing.
      const failing = new StandinConfigfs(io.root, { failures: [{ ordinal: i, errno: "EIO" }] });
      assert.throws(() => applyPlan(failing, steps), (err: unknown) => {
        assert.ok(err instanceof ApplyError);
        assert.equal(err.errno, "EIO");
        assert.deepEqual(err.rollbackFailures, []);
        return true;
      });
      assert.deepEqual(snapshot(io.root), before, `failure at step ${i} of ${n}`);
    }
  });
}

failEachStep(
  "up from empty",
  () => {},
  (io, dev) => planUp(readTree(io), validateSpec(twoSubsystemSpec(dev))),
);

failEachStep(
  "an update (device change, port move, prune)",
  (io, dev) => applyPlan(io, planUp(readTree(io), validateSpec(twoSubsystemSpec(dev)))),
  (io, dev) => {
    const raw = twoSubsystemSpec(dev);
    raw.subsystems[0].namespaces[1].device = dev[3];
    raw.subsystems[0].serial = "NEWSERIAL1";
    raw.ports[0].traddr = "10.77.0.9";
    raw.ports[0].subsystems = [SUB1];
    raw.subsystems.pop();
    return planUp(readTree(io), validateSpec(raw), { prune: true });
  },
);

failEachStep(
  "down",
  (io, dev) => applyPlan(io, planUp(readTree(io), validateSpec(twoSubsystemSpec(dev)))),
  (io) => planDown(readTree(io), { all: true }),
);

Deno.test("an RDMA bind refusal names EADDRNOTAVAIL and how to fix the address", () => {
  using dev = devices(3);
  using io0 = standin();
  const steps = planUp(readTree(io0), validateSpec(twoSubsystemSpec(dev)));
  const link = steps.find((s) => s.op === "link" && s.path.startsWith("ports/"))!;
  const io = new StandinConfigfs(io0.root, {
    failures: [{ op: "link", path: link.path, errno: "EADDRNOTAVAIL" }],
  });
  const before = snapshot(io0.root);
  try {
    applyPlan(io, steps);
    assert.fail("expected ApplyError");
  } catch (err) {
    assert.ok(err instanceof ApplyError);
    assert.match(err.message, /EADDRNOTAVAIL/);
    assert.match(err.message, /rolled back; configfs is as before/);
    assert.match(err.hint ?? "", /not an address configured on this host.*ip addr add/);
  }
  assert.deepEqual(snapshot(io0.root), before);
});
