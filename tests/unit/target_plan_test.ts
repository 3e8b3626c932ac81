import assert from "node:assert/strict";
import { readTree } from "../../src/configfs/nvmet.ts";
import { applyPlan } from "../../src/target/apply.ts";
import { describeStep, planDown, planUp, type Step, stepData } from "../../src/target/plan.ts";
import { planSummary } from "../../src/target/report.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { devices, HOST1, HOST2, standin, SUB1, SUB2, twoSubsystemSpec } from "./target_fixtures.ts";

// Steps are compared as data; describeStep's wording has its own test at the end.
const mkdir = (path: string): Step => ({ op: "mkdir", path });
const write = (path: string, value: string, old?: string): Step => ({
  op: "write",
  path,
  value,
  ...(old !== undefined ? { old } : {}),
});
const link = (path: string, target: string): Step => ({ op: "link", path, target });
const unlink = (path: string, target: string): Step => ({ op: "unlink", path, target });
/** The index of the first step of `op` whose path matches `re`. */
const find = (steps: Step[], op: Step["op"], re: RegExp) =>
  steps.findIndex((s) => s.op === op && re.test(s.path));

Deno.test("plan from an empty tree creates in the kernel's order: hosts, subsystems, namespaces, ports, links", () => {
  using dev = devices(3);
  using io = standin();
  const steps = planUp(readTree(io), validateSpec(twoSubsystemSpec(dev)));
  assert.equal(find(steps, "mkdir", /^hosts\//), 0);
  assert.ok(find(steps, "mkdir", /^subsystems\/[^/]+$/) > find(steps, "mkdir", /^hosts\//));
  const enable = steps.findIndex((s) =>
    s.op === "write" && /namespaces\/1\/enable$/.test(s.path) && s.value === "1"
  );
  const devicePath = find(steps, "write", /namespaces\/1\/device_path$/);
  assert.ok(devicePath > find(steps, "mkdir", /^subsystems\/[^/]+\/namespaces\/1$/));
  assert.ok(enable > devicePath);
  assert.ok(find(steps, "mkdir", /^ports\/1$/) > find(steps, "link", /allowed_hosts/));
  assert.ok(find(steps, "link", /^ports\/1\/subsystems/) > find(steps, "write", /addr_trsvcid$/));
  assert.ok(
    find(steps, "write", /addr_trtype$/) < find(steps, "write", /addr_adrfam$/),
    "trtype first: writing it resets other fields",
  );
  // allow_any_host only for the subsystem that asks for it
  assert.deepEqual(steps.filter((s) => /attr_allow_any_host$/.test(s.path)), [
    write(`subsystems/${SUB2}/attr_allow_any_host`, "1", "0"),
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
  const steps = planUp(readTree(io), validateSpec(raw));
  const ns = `subsystems/${SUB1}/namespaces/2`;
  assert.deepEqual(steps, [
    write(`${ns}/enable`, "0", "1"),
    write(`${ns}/device_path`, dev[3], dev[1]),
    write(`${ns}/enable`, "1", "0"),
  ]);
});

Deno.test("a port whose address changes is unlinked, changed and relinked", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.ports[0].traddr = "10.77.0.2";
  const steps = planUp(readTree(io), validateSpec(raw));
  assert.deepEqual(steps, [
    unlink(`ports/1/subsystems/${SUB1}`, `subsystems/${SUB1}`),
    unlink(`ports/1/subsystems/${SUB2}`, `subsystems/${SUB2}`),
    write("ports/1/addr_traddr", "10.77.0.2", "10.77.0.1"),
    link(`ports/1/subsystems/${SUB1}`, `subsystems/${SUB1}`),
    link(`ports/1/subsystems/${SUB2}`, `subsystems/${SUB2}`),
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
  assert.deepEqual(steps, [
    unlink(`subsystems/${SUB1}/allowed_hosts/${HOST1}`, `hosts/${HOST1}`),
    write(`subsystems/${SUB1}/attr_allow_any_host`, "1", "0"),
  ]);
  applyPlan(io, steps);
});

Deno.test("adding a host to a subsystem only links it (and creates the host entry)", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.subsystems[0].hosts.push(HOST2);
  assert.deepEqual(planUp(readTree(io), validateSpec(raw)), [
    mkdir(`hosts/${HOST2}`),
    link(`subsystems/${SUB1}/allowed_hosts/${HOST2}`, `hosts/${HOST2}`),
  ]);
});

Deno.test("down removes in reverse order and leaves nvmet empty", () => {
  using dev = devices(3);
  using io = standin();
  const spec = validateSpec(twoSubsystemSpec(dev));
  applyPlan(io, planUp(readTree(io), spec));
  const steps = planDown(readTree(io), { spec });
  assert.equal(find(steps, "unlink", /^ports\/1\/subsystems\//), 0);
  assert.ok(find(steps, "rmdir", /^ports\/1$/) < find(steps, "rmdir", /^subsystems\//));
  assert.deepEqual(steps[steps.length - 1], { op: "rmdir", path: `hosts/${HOST1}` });
  applyPlan(io, steps);
  const left = readTree(io);
  assert.deepEqual([left.hosts, left.subsystems, left.ports], [[], [], []]);
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
  const first = planUp(readTree(io), validateSpec(raw));
  const ns = `subsystems/${SUB2}/namespaces/1`;
  const at = (step: Step) => first.findIndex((s) => JSON.stringify(s) === JSON.stringify(step));
  assert.ok(at(write(`${ns}/buffered_io`, "1", "0")) >= 0);
  assert.ok(at(write(`${ns}/buffered_io`, "1", "0")) < at(write(`${ns}/enable`, "1", "0")));
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.subsystems[1].namespaces[0].buffered_io = false;
  assert.deepEqual(planUp(readTree(io), validateSpec(raw)), [
    write(`${ns}/enable`, "0", "1"),
    write(`${ns}/buffered_io`, "0", "1"),
    write(`${ns}/enable`, "1", "0"),
  ]);
});

Deno.test("describeStep shows each step as one line, with the old value and never a secret", () => {
  const steps: Step[] = [
    mkdir("hosts/h"),
    { op: "rmdir", path: "ports/1" },
    write("ports/1/addr_traddr", "10.0.0.2", "10.0.0.1"),
    write("ports/1/addr_trtype", "tcp"),
    { op: "write", path: "hosts/h/dhchap_key", value: "DHHC-1:00:x:", old: "y", secret: true },
    link("ports/1/subsystems/s", "subsystems/s"),
    unlink("ports/1/subsystems/s", "subsystems/s"),
  ];
  assert.deepEqual(
    steps.map(describeStep),
    [
      "mkdir  hosts/h",
      "rmdir  ports/1",
      "write  ports/1/addr_traddr = '10.0.0.2'  (was '10.0.0.1')",
      "write  ports/1/addr_trtype = 'tcp'",
      "write  hosts/h/dhchap_key = (secret)",
      "link   ports/1/subsystems/s -> subsystems/s",
      "unlink ports/1/subsystems/s",
    ],
  );
});

Deno.test("a step's data is its JSON with a secret masked, and a summary names each kind of object", () => {
  const steps: Step[] = [
    mkdir("hosts/h"),
    mkdir("subsystems/s"),
    mkdir("subsystems/s/namespaces/1"),
    mkdir("ports/1"),
    mkdir("ports/1/ana_groups/2"),
    mkdir("ports/1/referrals/r"),
    mkdir("ports/1/subsystems"),
    mkdir("subsystems/s/namespaces/1/x"),
    mkdir("nvmet"),
    { op: "write", path: "subsystems/s/namespaces/1/device_uuid", value: "u", old: undefined },
    write("ports/1/addr_traddr", "10.0.0.2", "10.0.0.1"),
    { op: "write", path: "hosts/h/dhchap_key", value: "DHHC-1:00:x:", old: "y", secret: true },
    link("subsystems/s/allowed_hosts/h", "hosts/h"),
    link("ports/1/subsystems/s", "subsystems/s"),
    { op: "rmdir", path: "ports/1/referrals/r" },
    unlink("ports/1/subsystems/s", "subsystems/s"),
  ];
  assert.deepEqual(JSON.parse(JSON.stringify(steps.map(stepData))).slice(9), [
    { op: "write", path: "subsystems/s/namespaces/1/device_uuid", value: "u" },
    { op: "write", path: "ports/1/addr_traddr", value: "10.0.0.2", old: "10.0.0.1" },
    { op: "write", path: "hosts/h/dhchap_key", value: "(secret)", secret: true },
    { op: "link", path: "subsystems/s/allowed_hosts/h", target: "hosts/h" },
    { op: "link", path: "ports/1/subsystems/s", target: "subsystems/s" },
    { op: "rmdir", path: "ports/1/referrals/r" },
    { op: "unlink", path: "ports/1/subsystems/s", target: "subsystems/s" },
  ]);
  assert.equal(JSON.stringify(stepData(steps[10])), JSON.stringify(steps[10]));
  assert.deepEqual(planSummary(steps), [
    "create: 1 host(s), 1 subsystem(s), 1 namespace(s), 1 port(s), 1 ANA group(s), 1 referral(s), 3 other(s)",
    "write: 1 device_uuid, 1 addr_traddr, 1 dhchap_key",
    "link: 1 allowed host(s), 1 port link(s)",
    "remove: 1 referral(s)",
    "unlink: 1 port link(s)",
  ]);
});

Deno.test("every step a plan makes is already its JSON data, fields in the same order", () => {
  // What a step's data was when it was a copy: op, path, then value and old, or target.
  const copy = (s: Step): Record<string, unknown> =>
    s.op === "write"
      ? { op: s.op, path: s.path, value: s.value, ...(s.old !== undefined ? { old: s.old } : {}) }
      : s.op === "link" || s.op === "unlink"
      ? { op: s.op, path: s.path, target: s.target }
      : { op: s.op, path: s.path };
  using dev = devices(4);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  const steps: Step[] = planUp(readTree(io), validateSpec(raw));
  applyPlan(io, steps);
  raw.subsystems[0].namespaces[0].device = dev[3];
  raw.subsystems[0].serial = "s1";
  raw.subsystems.pop();
  raw.ports[0].traddr = "10.77.0.2";
  raw.ports[0].subsystems = [SUB1];
  const changed = planUp(readTree(io), validateSpec(raw), { prune: true });
  applyPlan(io, changed);
  const down = planDown(readTree(io), { all: true });
  const all = [...steps, ...changed, ...down];
  for (const op of ["mkdir", "rmdir", "write", "link", "unlink"]) {
    assert.ok(all.some((s) => s.op === op), `no ${op} step`);
  }
  assert.ok(all.some((s) => s.op === "write" && s.old !== undefined), "no write with an old value");
  for (const s of all) assert.equal(JSON.stringify(stepData(s)), JSON.stringify(copy(s)));
});

Deno.test("a port re-applied as another trtype is made anew: no old address stays, links come back", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  raw.ports[0] = { id: 1, trtype: "loop", subsystems: [SUB1, SUB2] };
  const steps = planUp(readTree(io), validateSpec(raw), { prune: true });
  assert.equal(find(steps, "rmdir", /^ports\/1$/) < find(steps, "mkdir", /^ports\/1$/), true);
  applyPlan(io, steps);
  const port = readTree(io).ports[0];
  assert.equal(port.attr.addr_trtype, "loop");
  assert.equal(port.attr.addr_traddr ?? "", "");
  assert.equal(port.attr.addr_trsvcid ?? "", "");
  assert.equal(port.attr.addr_adrfam ?? "", "");
  assert.deepEqual(port.subsystems.toSorted(), [SUB1, SUB2].toSorted());
  assert.deepEqual(planUp(readTree(io), validateSpec(raw), { prune: true }), []);
});

Deno.test("a port changing from rdma to tcp keeps its address and links but nothing of rdma", () => {
  using dev = devices(3);
  using io = standin();
  const raw = twoSubsystemSpec(dev);
  raw.ports[0].inline_data_size = 8192;
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  delete raw.ports[0].inline_data_size;
  raw.ports[0].trtype = "tcp";
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  const port = readTree(io).ports[0];
  assert.deepEqual(
    [port.attr.addr_trtype, port.attr.addr_traddr, port.attr.addr_trsvcid],
    ["tcp", "10.77.0.1", "4420"],
  );
  assert.notEqual(port.attr.param_inline_data_size, "8192");
  assert.equal(port.subsystems.length, 2);
});
