import assert from "node:assert/strict";
import { readTree } from "../../src/configfs/nvmet.ts";
import { applyPlan } from "../../src/target/apply.ts";
import { describeStep, planDown, planUp, type Step } from "../../src/target/plan.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { devices, HOST1, HOST2, standin, SUB1, SUB2, twoSubsystemSpec } from "./target_fixtures.ts";

const lines = (steps: Step[]) => steps.map((s) => describeStep(s).replace(/\s+/g, " "));

Deno.test("plan from an empty tree creates in the kernel's order: hosts, subsystems, namespaces, ports, links", () => {
  using dev = devices(3);
  using io = standin();
  const steps = planUp(readTree(io), validateSpec(twoSubsystemSpec(dev)));
  const idx = (re: RegExp) => lines(steps).findIndex((l) => re.test(l));
  assert.equal(idx(/^mkdir hosts\//), 0);
  assert.ok(idx(/^mkdir subsystems\/[^/]+$/) > idx(/^mkdir hosts\//));
  assert.ok(idx(/namespaces\/1\/device_path/) > idx(/^mkdir subsystems\/[^/]+\/namespaces\/1$/));
  assert.ok(idx(/namespaces\/1\/enable = '1'/) > idx(/namespaces\/1\/device_path/));
  assert.ok(idx(/^mkdir ports\/1$/) > idx(/allowed_hosts/));
  assert.ok(idx(/^link ports\/1\/subsystems/) > idx(/addr_trsvcid/));
  assert.ok(
    idx(/addr_trtype/) < idx(/addr_adrfam/),
    "trtype first: writing it resets other fields",
  );
  // allow_any_host only for the subsystem that asks for it
  assert.deepEqual(lines(steps).filter((l) => /attr_allow_any_host/.test(l)), [
    `write subsystems/${SUB2}/attr_allow_any_host = '1' (was '0')`,
  ]);
});

Deno.test("applying a plan then planning again gives no steps (idempotent)", () => {
  using dev = devices(3);
  using io = standin();
  const spec = validateSpec(twoSubsystemSpec(dev));
  applyPlan(io, planUp(readTree(io), spec));
  assert.deepEqual(planUp(readTree(io), spec), []);
});

Deno.test("a changed namespace device is disabled, changed, re-enabled; nothing else is touched", () => {
  using dev = devices(4);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.subsystems[0].namespaces[1].device = dev[3];
  const steps = lines(planUp(readTree(io), validateSpec(raw)));
  const ns = `subsystems/${SUB1}/namespaces/2`;
  assert.deepEqual(steps, [
    `write ${ns}/enable = '0' (was '1')`,
    `write ${ns}/device_path = '${dev[3]}' (was '${dev[1]}')`,
    `write ${ns}/enable = '1' (was '0')`,
  ]);
});

Deno.test("a port whose address changes is unlinked, changed and relinked", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.ports[0].traddr = "10.77.0.2";
  const steps = planUp(readTree(io), validateSpec(raw));
  assert.deepEqual(lines(steps), [
    `unlink ports/1/subsystems/${SUB1}`,
    `unlink ports/1/subsystems/${SUB2}`,
    `write ports/1/addr_traddr = '10.77.0.2' (was '10.77.0.1')`,
    `link ports/1/subsystems/${SUB1} -> subsystems/${SUB1}`,
    `link ports/1/subsystems/${SUB2} -> subsystems/${SUB2}`,
  ]);
  applyPlan(io, steps); // the stand-in refuses port writes while linked: the order must be right
  assert.equal(io.read("ports/1/addr_traddr"), "10.77.0.2");
});

Deno.test("objects and links the spec does not mention stay unless prune", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  const smaller = structuredClone(raw);
  smaller.subsystems.pop();
  smaller.ports[0].subsystems = [SUB1];
  smaller.subsystems[0].namespaces.pop();
  assert.deepEqual(planUp(readTree(io), validateSpec(smaller)), []);
  const pruned = planUp(readTree(io), validateSpec(smaller), { prune: true });
  applyPlan(io, pruned);
  const t = readTree(io);
  assert.deepEqual(t.subsystems.map((s) => s.nqn), [SUB1]);
  assert.deepEqual(t.subsystems[0].namespaces.map((n) => n.nsid), [1]);
  assert.deepEqual(t.ports[0].subsystems, [SUB1]);
});

Deno.test("switching to allow_any_host removes the host links before the write the kernel would refuse", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.subsystems[0].hosts = [];
  raw.subsystems[0].allow_any_host = true;
  const steps = planUp(readTree(io), validateSpec(raw));
  assert.deepEqual(lines(steps), [
    `unlink subsystems/${SUB1}/allowed_hosts/${HOST1}`,
    `write subsystems/${SUB1}/attr_allow_any_host = '1' (was '0')`,
  ]);
  applyPlan(io, steps);
});

Deno.test("adding a host to a subsystem only links it (and creates the host entry)", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.subsystems[0].hosts.push(HOST2);
  assert.deepEqual(lines(planUp(readTree(io), validateSpec(raw))), [
    `mkdir hosts/${HOST2}`,
    `link subsystems/${SUB1}/allowed_hosts/${HOST2} -> hosts/${HOST2}`,
  ]);
});

Deno.test("down removes in reverse order and leaves nvmet empty", () => {
  using dev = devices(3);
  using io = standin();
  const spec = validateSpec(twoSubsystemSpec(dev));
  applyPlan(io, planUp(readTree(io), spec));
  const steps = planDown(readTree(io), { spec });
  const l = lines(steps);
  assert.match(l[0], /^unlink ports\/1\/subsystems\//);
  assert.ok(l.indexOf("rmdir ports/1") < l.findIndex((x) => x.startsWith("rmdir subsystems/")));
  assert.equal(l[l.length - 1], `rmdir hosts/${HOST1}`);
  applyPlan(io, steps);
  assert.deepEqual(readTree(io), { hosts: [], subsystems: [], ports: [] });
});

Deno.test("down of one spec keeps a host another subsystem still allows", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  const other = {
    subsystems: [{ nqn: "nqn.2026-10.pk.nextgen:other", hosts: [HOST1], namespaces: [] }],
  };
  applyPlan(io, planUp(readTree(io), validateSpec(other)));
  applyPlan(io, planDown(readTree(io), { spec: validateSpec(raw) }));
  const t = readTree(io);
  assert.deepEqual(t.hosts.map((h) => h.nqn), [HOST1]);
  assert.deepEqual(t.subsystems.map((s) => s.nqn), ["nqn.2026-10.pk.nextgen:other"]);
});

Deno.test("DH-HMAC-CHAP keys are written as secrets, and an unchanged key is not rewritten", () => {
  using io = standin();
  const key = "DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj:";
  const spec = validateSpec({ hosts: [{ nqn: HOST1, dhchap_key_file: "/k" }] }, {
    checkFiles: false,
  });
  const steps = planUp(readTree(io), spec, { readSecret: () => key });
  const w = steps.find((s) => s.op === "write")!;
  assert.equal(w.op === "write" && w.secret, true);
  assert.ok(!describeStep(w).includes("c2VjcmV0"), "the key is never shown");
  applyPlan(io, steps);
  assert.deepEqual(
    planUp(readTree(io), spec, { readSecret: () => key, readLiveSecret: (p) => io.read(p) }),
    [],
  );
});

Deno.test("buffered_io is set before enable, and changing it disables the namespace first", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  raw.subsystems[1].namespaces[0].buffered_io = true;
  const first = lines(planUp(readTree(io), validateSpec(raw)));
  const ns = `subsystems/${SUB2}/namespaces/1`;
  assert.ok(
    first.indexOf(`write ${ns}/buffered_io = '1' (was '0')`) <
      first.indexOf(`write ${ns}/enable = '1' (was '0')`),
  );
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.subsystems[1].namespaces[0].buffered_io = false;
  assert.deepEqual(lines(planUp(readTree(io), validateSpec(raw))), [
    `write ${ns}/enable = '0' (was '1')`,
    `write ${ns}/buffered_io = '0' (was '1')`,
    `write ${ns}/enable = '1' (was '0')`,
  ]);
});
