/**
 * A target's plan costs in proportion to its objects, not their square: hundreds of subsystems
 * and thousands of allowed hosts on one storage server. Each test runs the same work at two sizes
 * 8× apart over a live tree and a spec whose arrays count every element read, and checks the count
 * grew about 8× (a scan per object, `find` or `includes` in a loop, would make it 64×). Counting
 * reads, not timing, keeps the test exact on a busy machine.
 */
import assert from "node:assert/strict";
import type { ConfigfsIo } from "../../src/configfs/io.ts";
import { type LiveTree, readTree } from "../../src/configfs/nvmet.ts";
import { applyPlan } from "../../src/target/apply.ts";
import { affected } from "../../src/target/connected.ts";
import { planDown, planUp } from "../../src/target/plan.ts";
import { type TargetSpec, validateSpec } from "../../src/target/spec.ts";
import { devices, standin } from "./target_fixtures.ts";

const sub = (i: number) => `nqn.2026-10.pk.nextgen:scale-${i}`;
const host = (i: number) => `nqn.2026-10.pk.nextgen:compute-${i}`;
const HOSTS_EACH = 4;

/** Every array below `v` (in place, recursively) made to count its element reads into `count`. */
function counted<T>(v: T, count: { reads: number }): T {
  if (Array.isArray(v)) {
    const arr = v.map((x) => counted(x, count));
    return new Proxy(arr, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) count.reads++;
        return Reflect.get(target, key, receiver);
      },
    }) as T;
  }
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = counted(x, count);
    return out as T;
  }
  return v;
}

/** A spec of `n` subsystems, each with two namespaces and its own HOSTS_EACH hosts, on 2 ports. */
function bigSpec(n: number): TargetSpec {
  const subs = Array.from({ length: n }, (_, i) => ({
    nqn: sub(i),
    hosts: Array.from({ length: HOSTS_EACH }, (_, j) => host(i * HOSTS_EACH + j)),
    namespaces: [1, 2].map((nsid) => ({ nsid, device: `/dev/nullb${2 * i + nsid - 1}` })),
  }));
  const nqns = subs.map((s) => s.nqn);
  return validateSpec({
    subsystems: subs,
    ports: [
      { id: 1, trtype: "rdma", traddr: "10.77.0.1", trsvcid: 4420, subsystems: nqns },
      { id: 2, trtype: "tcp", traddr: "10.77.0.1", trsvcid: 4421, subsystems: nqns },
    ],
  }, { checkFiles: false });
}

/** The live tree `target up` of bigSpec(n) leaves (what readTree reads back). */
function bigTree(spec: TargetSpec): LiveTree {
  return {
    hosts: spec.subsystems.flatMap((s) => s.hosts).map((nqn) => ({
      nqn,
      dhchap_supported: false,
      dhchap_key_set: false,
    })),
    subsystems: spec.subsystems.map((s) => ({
      nqn: s.nqn,
      attr: { allow_any_host: "0", serial: "0123456789abcdef" },
      allowed_hosts: [...s.hosts],
      namespaces: s.namespaces.map((n) => ({
        name: String(n.nsid),
        nsid: n.nsid,
        device_path: n.device,
        device_uuid: "",
        device_nguid: "",
        enable: true,
      })),
    })),
    ports: spec.ports.map((p) => ({
      name: String(p.id),
      id: p.id,
      attr: {
        addr_trtype: p.trtype,
        addr_adrfam: "ipv4",
        addr_traddr: p.traddr ?? "",
        addr_trsvcid: String(p.trsvcid),
      },
      subsystems: [...p.subsystems],
      ana_groups: [{ name: "1", id: 1, state: "optimized" }],
      referrals: [],
    })),
  };
}

/** The element reads of `work` at n subsystems, after checking what it returns. */
function reads(
  n: number,
  work: (live: LiveTree, spec: TargetSpec) => number,
  expect: (n: number) => number,
): number {
  const spec = bigSpec(n);
  const count = { reads: 0 };
  const live = counted(bigTree(spec), count);
  const cspec = counted(spec, count);
  assert.equal(work(live, cspec), expect(n));
  return count.reads;
}

/** Checks that `work` reads about 8× as much at 8× the size (linear), not 64× (quadratic). */
function assertLinear(
  work: (live: LiveTree, spec: TargetSpec) => number,
  expect: (n: number) => number,
): void {
  const small = reads(32, work, expect);
  const big = reads(256, work, expect);
  assert.ok(big <= 10 * small, `8x the work read ${big / small}x as much (${small} -> ${big})`);
}

Deno.test("a no-op up plans in time linear in subsystems and hosts", () => {
  assertLinear((live, spec) => planUp(live, spec).length, () => 0);
});

Deno.test("up --prune of one subsystem plans in linear time", () => {
  assertLinear(
    (live, spec) => {
      const gone = spec.subsystems[0].nqn;
      const less = {
        ...spec,
        subsystems: spec.subsystems.slice(1),
        ports: spec.ports.map((p) => ({
          ...p,
          subsystems: p.subsystems.filter((s) => s !== gone),
        })),
      };
      return planUp(live, less, { prune: true }).length;
    },
    // its 2 namespaces (disable, remove), 4 allowed hosts, itself, 2 port links, 4 hosts
    () => 2 * 2 + HOSTS_EACH + 1 + 2 + HOSTS_EACH,
  );
});

Deno.test("adding one host to every subsystem plans in linear time", () => {
  assertLinear((live, spec) => {
    const more = {
      ...spec,
      subsystems: spec.subsystems.map((s, i) => ({ ...s, hosts: [...s.hosts, host(-1 - i)] })),
    };
    return planUp(live, more).length;
  }, (n) => 2 * n); // a host and its link per subsystem
});

Deno.test("down --all and what it cuts off are found in linear time", () => {
  assertLinear((live) => {
    const steps = planDown(live, { all: true });
    const hit = affected(live, steps);
    return hit.subsystems.length + hit.ports.length;
  }, (n) => n + 2);
});

/** `io` with every call counted by method name. */
function countingIo(io: ConfigfsIo): { io: ConfigfsIo; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const proxy = new Proxy(io, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof v !== "function" || typeof key !== "string") return v;
      return (...args: unknown[]) => {
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return v.apply(target, args);
      };
    },
  });
  return { io: proxy, calls };
}

/**
 * A spec of `n` subsystems on the devices `dev`, each with two namespaces and `hostsEach` hosts of
 * its own, exported on one tcp port unless `port` is false.
 */
function deviceSpec(dev: string[], n: number, hostsEach: number, port = true): TargetSpec {
  const nqns = Array.from({ length: n }, (_, i) => sub(i));
  return validateSpec({
    subsystems: nqns.map((nqn, i) => ({
      nqn,
      hosts: Array.from({ length: hostsEach }, (_, j) => host(hostsEach * i + j)),
      namespaces: [1, 2].map((nsid) => ({ nsid, device: dev[2 * i + nsid - 1] })),
    })),
    ...(port
      ? { ports: [{ id: 1, trtype: "tcp", traddr: "10.77.0.1", trsvcid: 4420, subsystems: nqns }] }
      : {}),
  });
}

/** The reads (`read` and `readIf`) a countingIo has seen. */
const readsOf = (c: { calls: Map<string, number> }) =>
  (c.calls.get("read") ?? 0) + (c.calls.get("readIf") ?? 0);

Deno.test("reading the tree and removing it take one configfs call per attribute, no look first", () => {
  const n = 6;
  using dev = devices(2 * n);
  using io = standin();
  const spec = deviceSpec(dev, n, 2);
  applyPlan(io, planUp(readTree(io), spec));
  const read = countingIo(io);
  const live = readTree(read.io);
  assert.equal(live.subsystems.length, n);
  assert.equal(read.calls.get("exists") ?? 0, 0, "no exists() before a read");
  assert.equal(read.calls.get("isDir") ?? 0, 0, "no isDir() before a list");
  const down = countingIo(io);
  applyPlan(down.io, planDown(live, { all: true }));
  assert.equal(down.calls.get("isDir") ?? 0, 0, "no isDir() per attribute before a removal");
  assert.deepEqual(io.list("subsystems"), []);
});

Deno.test("a kernel without DH-HMAC-CHAP costs one read for all hosts, a missing attribute no error", () => {
  using io = standin([], { kernel: "6.1" });
  const hosts = Array.from({ length: 10 }, (_, i) => ({ nqn: host(i) }));
  applyPlan(io, planUp(readTree(io), validateSpec({ hosts })));
  const c = countingIo(io);
  const live = readTree(c.io);
  assert.equal(live.hosts.length, 10);
  assert.ok(live.hosts.every((h) => !h.dhchap_supported && !h.dhchap_key_set));
  // the first host's dhchap_key, and the root's discovery_nqn (absent on 6.1), each asked without
  // an error for its absence
  assert.equal(c.calls.get("readIf"), 1 + 1);
  assert.equal(c.calls.get("read") ?? 0, 0);
});

Deno.test("a kernel with DH-HMAC-CHAP has every host's keys read", () => {
  using io = standin([]);
  const hosts = Array.from({ length: 3 }, (_, i) => ({ nqn: host(i) }));
  applyPlan(io, planUp(readTree(io), validateSpec({ hosts })));
  io.write(`hosts/${host(2)}/dhchap_key`, "DHHC-1:00:secret:");
  const live = readTree(io);
  assert.deepEqual(live.hosts.map((h) => [h.dhchap_supported, h.dhchap_key_set]), [
    [true, false],
    [true, false],
    [true, true],
  ]);
});

Deno.test("a no-op up reads of each subsystem and namespace only what it compares", () => {
  const n = 6;
  using dev = devices(2 * n);
  using io = standin([], { kernel: "6.1" });
  const spec = deviceSpec(dev, n, 1);
  applyPlan(io, planUp(readTree(io), spec));
  const c = countingIo(io);
  assert.deepEqual(planUp(readTree(c.io), spec), []);
  // Per subsystem allow_any_host, per namespace device_path and enable; the ports' attributes
  // (9), their ANA group's state, a host's dhchap_key and the root's discovery_nqn.
  assert.equal(readsOf(c), n + 2 * n * 2 + 9 + 1 + 1 + 1);
  // What is looked at later is what an eager read gives.
  const later = readTree(io);
  const namespace = later.subsystems[0].namespaces[1];
  assert.equal(namespace.device_uuid, io.read(`subsystems/${sub(0)}/namespaces/2/device_uuid`));
  assert.equal(namespace.buffered_io, io.read(`subsystems/${sub(0)}/namespaces/2/buffered_io`));
  assert.equal(later.subsystems[0].attr.serial, io.read(`subsystems/${sub(0)}/attr_serial`));
  namespace.ana_grpid = "7";
  assert.equal(namespace.ana_grpid, "7");
  assert.equal(JSON.parse(JSON.stringify(later)).subsystems[0].namespaces[1].ana_grpid, "7");
});

Deno.test("down --all plans without reading what the removed objects hold (the applier reads it)", () => {
  const n = 4;
  using dev = devices(2 * n);
  using io = standin([], { kernel: "6.1" });
  const spec = deviceSpec(dev, n, 1, false);
  applyPlan(io, planUp(readTree(io), spec));
  const c = countingIo(io);
  const live = readTree(c.io);
  const eager = readsOf(c);
  const steps = planDown(live, { all: true });
  assert.ok(steps.some((s) => s.op === "rmdir" && s.path.includes("/namespaces/")));
  assert.equal(readsOf(c), eager);
});
