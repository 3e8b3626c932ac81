/**
 * A hand-made tree names ports and namespaces as the kernel reads them (kstrtou16/32, base 0):
 * `ports/0x2` is port 2, `namespaces/010` is nsid 8 and `namespaces/0x10` nsid 16. nvmeof reads
 * the tree by the names it has and changes those directories, never a made-up `ports/2`.
 */
import assert from "node:assert/strict";
import { kernelNumber, readTree } from "../../src/configfs/nvmet.ts";
import { applyPlan } from "../../src/target/apply.ts";
import { planDown, planUp } from "../../src/target/plan.ts";
import { treeToSpec } from "../../src/target/show.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { devices, standin, SUB1 } from "./target_fixtures.ts";

/** What nvmetcli or a shell script might have made: port 0x2, namespaces 010 and 0x10. */
function handMade(io: ReturnType<typeof standin>, dev: string[]): void {
  io.mkdir(`subsystems/${SUB1}`);
  io.write(`subsystems/${SUB1}/attr_allow_any_host`, "1");
  for (const [name, d] of [["010", dev[0]], ["0x10", dev[1]]]) {
    io.mkdir(`subsystems/${SUB1}/namespaces/${name}`);
    io.write(`subsystems/${SUB1}/namespaces/${name}/device_path`, d);
    io.write(`subsystems/${SUB1}/namespaces/${name}/enable`, "1");
  }
  io.mkdir("ports/0x2");
  io.write("ports/0x2/addr_trtype", "rdma");
  io.write("ports/0x2/addr_adrfam", "ipv4");
  io.write("ports/0x2/addr_traddr", "10.77.0.1");
  io.write("ports/0x2/addr_trsvcid", "4420");
  io.link(`ports/0x2/subsystems/${SUB1}`, `subsystems/${SUB1}`);
}

Deno.test("kernelNumber reads names as the kernel's kstrtou32 with base 0", () => {
  assert.equal(kernelNumber("10"), 10);
  assert.equal(kernelNumber("010"), 8);
  assert.equal(kernelNumber("0x10"), 16);
  assert.equal(kernelNumber("0X1f"), 31);
  assert.equal(kernelNumber("0"), 0);
  assert.equal(kernelNumber("+7"), 7);
  for (const bad of ["", "08", "0x", "1a", "-1", " 1", "x"]) {
    assert.equal(kernelNumber(bad), undefined, bad);
  }
});

Deno.test("a hand-made tree with ports/0x2 and namespaces 010 and 0x10 is read by its names", () => {
  using dev = devices(2);
  using io = standin();
  handMade(io, dev);
  const tree = readTree(io);
  assert.deepEqual(tree.ports.map((p) => [p.name, p.id]), [["0x2", 2]]);
  assert.deepEqual(
    tree.subsystems[0].namespaces.map((n) => [n.name, n.nsid, n.device_path]),
    [["010", 8, dev[0]], ["0x10", 16, dev[1]]],
  );
  const shown = treeToSpec(tree) as { ports: Array<{ id: number }> };
  assert.equal(shown.ports[0].id, 2);
});

Deno.test("up of the tree's own spec changes nothing; down removes the directories it has", () => {
  using dev = devices(2);
  using io = standin();
  handMade(io, dev);
  const spec = validateSpec(treeToSpec(readTree(io)));
  assert.deepEqual(planUp(readTree(io), spec, { prune: true }), []);
  const down = planDown(readTree(io), { all: true });
  assert.ok(down.every((s) => !/^ports\/2(\/|$)|namespaces\/(8|16)(\/|$)/.test(s.path)));
  assert.ok(down.some((s) => s.op === "rmdir" && s.path === "ports/0x2"));
  applyPlan(io, down);
  assert.deepEqual(io.list("ports"), []);
  assert.deepEqual(io.list("subsystems"), []);
});

Deno.test("a spec changing port 2 and nsid 8 changes ports/0x2 and namespaces/010", () => {
  using dev = devices(3);
  using io = standin();
  handMade(io, dev);
  const raw = treeToSpec(readTree(io)) as {
    ports: Array<Record<string, unknown>>;
    subsystems: Array<{ namespaces: Array<Record<string, unknown>> }>;
  };
  raw.ports[0].trsvcid = 4421;
  raw.subsystems[0].namespaces[0].device = dev[2];
  const steps = planUp(readTree(io), validateSpec(raw));
  assert.ok(steps.some((s) => s.op === "write" && s.path === "ports/0x2/addr_trsvcid"));
  assert.ok(
    steps.some((s) =>
      s.op === "write" && s.path === `subsystems/${SUB1}/namespaces/010/device_path`
    ),
  );
  assert.ok(steps.every((s) => s.op !== "mkdir"), JSON.stringify(steps));
  applyPlan(io, steps);
  assert.equal(io.read("ports/0x2/addr_trsvcid"), "4421");
});
