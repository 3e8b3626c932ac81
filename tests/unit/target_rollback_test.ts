import assert from "node:assert/strict";
import { readTree } from "../../src/configfs/nvmet.ts";
import { ApplyError, applyPlan } from "../../src/target/apply.ts";
import { planDown, planUp } from "../../src/target/plan.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { StandinConfigfs } from "../standin/configfs.ts";
import {
  devices,
  HOST1,
  snapshot,
  standin,
  SUB1,
  SUB2,
  twoSubsystemSpec,
} from "./target_fixtures.ts";

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

/** Key files for the hosts of secretSpec (mode 0600), removed with the devices' directory. */
function keyFiles(dev: string[]): [string, string] {
  const dir = dev[0].slice(0, dev[0].lastIndexOf("/"));
  const files: [string, string] = [`${dir}/host.key`, `${dir}/ctrl.key`];
  Deno.writeTextFileSync(files[0], "DHHC-1:00:aG9zdGtleWhvc3RrZXlob3N0a2V5aG9zdGtleQ==:\n", {
    mode: 0o600,
  });
  Deno.writeTextFileSync(files[1], "DHHC-1:01:Y3RybGtleWN0cmxrZXljdHJsa2V5Y3RybGtleQ==:\n", {
    mode: 0o600,
  });
  return files;
}

/**
 * A target with everything a removal destroys set away from its default: DH-HMAC-CHAP keys,
 * hash and group on a host, buffered_io on a namespace, and attributes nvmeof does not manage
 * (qid_max, ana_grpid) changed by hand.
 */
function secretSetup(io: ReturnType<typeof standin>, dev: string[]): void {
  const [key, ctrl] = keyFiles(dev);
  const raw = twoSubsystemSpec(dev);
  raw.hosts[0] = {
    nqn: HOST1,
    dhchap_key_file: key,
    dhchap_ctrl_key_file: ctrl,
    dhchap_hash: "hmac(sha512)",
    dhchap_dhgroup: "ffdhe4096",
  };
  raw.subsystems[0].namespaces[1].buffered_io = true;
  raw.subsystems[0].serial = "SERIAL-1";
  raw.subsystems[0].cntlid_min = 100;
  raw.subsystems[0].cntlid_max = 200;
  applyPlan(io, planUp(readTree(io), validateSpec(raw)));
  io.write(`subsystems/${SUB1}/attr_qid_max`, "64");
  io.write(`subsystems/${SUB1}/namespaces/2/ana_grpid`, "2");
}

failEachStep(
  "down --all of a target with keys, buffered_io and hand-set attributes",
  secretSetup,
  (io) => planDown(readTree(io), { all: true }),
);

failEachStep(
  "up --prune down to one subsystem and no hosts, of a target with keys",
  secretSetup,
  (io, dev) => {
    const raw = twoSubsystemSpec(dev);
    raw.hosts = [];
    raw.subsystems = [{
      nqn: SUB2,
      allow_any_host: true,
      namespaces: [{ nsid: 1, device: dev[2] }],
    }];
    raw.ports[0].subsystems = [SUB2];
    return planUp(readTree(io), validateSpec(raw), { prune: true });
  },
);

Deno.test("a removal that cannot be put back says exactly what, never a secret", () => {
  using dev = devices(4);
  using io0 = standin();
  secretSetup(io0, dev);
  const steps = planDown(readTree(io0), { all: true });
  // The last step (rmdir of the host) fails; on the way back, the subsystem's serial is refused.
  const io = new StandinConfigfs(io0.root, {
    failures: [
      { ordinal: steps.length, errno: "EIO" },
      { op: "write", path: `subsystems/${SUB1}/attr_serial`, errno: "EINVAL" },
    ],
  });
  assert.throws(() => applyPlan(io, steps), (err: unknown) => {
    assert.ok(err instanceof ApplyError);
    assert.deepEqual(err.rollbackFailures, [
      `write  subsystems/${SUB1}/attr_serial = 'SERIAL-1': EINVAL`,
    ]);
    assert.match(err.message, /left 1 not undone/);
    assert.doesNotMatch(err.message, /configfs is as before/);
    assert.doesNotMatch(err.message, /aG9zdGtl|Y3RybGtl/);
    return true;
  });
});

failEachStep(
  "up changing a host's keys, hash and group, and a namespace's buffered_io",
  secretSetup,
  (io, dev) => {
    const dir = dev[0].slice(0, dev[0].lastIndexOf("/"));
    const key = `${dir}/new.key`;
    Deno.writeTextFileSync(key, "DHHC-1:00:bmV3a2V5bmV3a2V5bmV3a2V5bmV3a2V5bmV3a2V5:\n", {
      mode: 0o600,
    });
    const raw = twoSubsystemSpec(dev);
    raw.hosts[0] = {
      nqn: HOST1,
      dhchap_key_file: key,
      dhchap_hash: "hmac(sha256)",
      dhchap_dhgroup: "null",
    };
    raw.subsystems[0].namespaces[1].buffered_io = false;
    return planUp(readTree(io), validateSpec(raw), {
      readLiveSecret: (p) => (io.exists(p) ? io.read(p) : undefined),
    });
  },
);

Deno.test("a rollback that leaves many steps undone lists the first 20 and counts the rest", () => {
  using io0 = standin();
  const hosts = Array.from({ length: 30 }, (_, i) => `nqn.2026-10.pk.nextgen:compute-${i}`);
  const steps = planUp(readTree(io0), validateSpec({ hosts: hosts.map((nqn) => ({ nqn })) }));
  assert.equal(steps.length, 30);
  const io = new StandinConfigfs(io0.root, {
    failures: [
      { ordinal: 30, errno: "EIO" },
      ...hosts.map((h) => ({ op: "rmdir" as const, path: `hosts/${h}`, errno: "EBUSY" })),
    ],
  });
  assert.throws(() => applyPlan(io, steps), (err: unknown) => {
    assert.ok(err instanceof ApplyError);
    assert.equal(err.rollbackFailures.length, 29);
    assert.match(err.message, /left 29 not undone:\n/);
    const lines = err.message.split("\n").filter((l) => l.startsWith("  "));
    assert.equal(lines.length, 21);
    assert.equal(lines[20], "  … and 9 more");
    return true;
  });
});
