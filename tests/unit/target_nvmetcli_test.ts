/**
 * nvmetcli's format both ways, with the fixtures of tests/fixtures/nvmetcli: import carries every
 * field or names it in a warning; a fixture imported, applied to the stand-in configfs and read
 * back with treeToNvmetcli is the fixture again. Documented normalisation: `target show -o
 * nvmetcli` never prints DH-HMAC-CHAP keys (dhchap.key, dhchap.ctrl_key), and device paths are the
 * test's own files. Also the ANA rules: a group a namespace names must exist on its ports, states
 * are checked by name, a group still in use is not removed, a state change is one write.
 */
import assert from "node:assert/strict";
import { readTree } from "../../src/configfs/nvmet.ts";
import { StandinConfigfs } from "../standin/configfs.ts";
import { applyPlan } from "../../src/target/apply.ts";
import { nvmetcliToSpec, treeToNvmetcli } from "../../src/target/nvmetcli.ts";
import { planUp } from "../../src/target/plan.ts";
import { treeToSpec } from "../../src/target/show.ts";
import { SpecError, validateSpec } from "../../src/target/spec.ts";
import { type Doc, snapshot, standin } from "./target_fixtures.ts";

const FIXTURES = new URL("../fixtures/nvmetcli/", import.meta.url).pathname;
const SIXONE = ["loop", "rdma", "tcp", "ana"];

function fixture(name: string): Doc {
  return JSON.parse(Deno.readTextFileSync(`${FIXTURES}/${name}.json`));
}

/** A fixture with its /dev/nvmetcliN devices replaced by temporary files (and the way back). */
function withDevices(name: string): { doc: Doc; back: (d: Doc) => Doc } & Disposable {
  const dir = Deno.makeTempDirSync({ prefix: "nvmeof-nvmetcli-" });
  const text = Deno.readTextFileSync(`${FIXTURES}/${name}.json`);
  for (const m of text.matchAll(/\/dev\/(nvmetcli\d)/g)) {
    Deno.writeFileSync(`${dir}/${m[1]}`, new Uint8Array(4096));
  }
  return {
    doc: JSON.parse(text.replaceAll("/dev/nvmetcli", `${dir}/nvmetcli`)),
    back: (d: Doc) => JSON.parse(JSON.stringify(d).replaceAll(`${dir}/nvmetcli`, "/dev/nvmetcli")),
    [Symbol.dispose]: () => Deno.removeSync(dir, { recursive: true }),
  };
}

/** The fixture as `show -o nvmetcli` prints it: no DH-HMAC-CHAP keys. */
function withoutKeys(doc: Doc): Doc {
  const d = structuredClone(doc);
  for (const h of d.hosts) {
    delete h.dhchap.key;
    delete h.dhchap.ctrl_key;
  }
  return d;
}

/** Writes the key files an import asks for into dir (mode 0600), as `target import` does. */
function writeKeys(keyFiles: Array<{ path: string; secret: string }>) {
  for (const k of keyFiles) {
    Deno.mkdirSync(k.path.slice(0, k.path.lastIndexOf("/")), { recursive: true });
    Deno.writeTextFileSync(k.path, k.secret + "\n", { mode: 0o600 });
  }
}

for (const name of [...SIXONE, "dhchap"]) {
  Deno.test(`nvmetcli ${name}.json: import, apply, treeToNvmetcli gives the file back`, () => {
    using dev = withDevices(name);
    using io = standin([], name === "dhchap" ? {} : { kernel: "6.1" });
    const keyDir = `${io.root}/../keys`;
    const imp = nvmetcliToSpec(dev.doc, { keyDir });
    assert.deepEqual(imp.warnings, [], "every field of the fixture is carried");
    writeKeys(imp.keyFiles);
    const spec = validateSpec(imp.spec);
    const secrets = { readLiveSecret: (p: string) => (io.exists(p) ? io.read(p) : undefined) };
    applyPlan(io, planUp(readTree(io), spec, secrets));
    const back = dev.back(treeToNvmetcli(readTree(io)));
    assert.deepEqual(back, withoutKeys(fixture(name)));
    // Nothing left to do: the spec and the tree agree.
    assert.deepEqual(planUp(readTree(io), spec, secrets), []);
  });
}

Deno.test("nvmetcli import: the fields of each fixture land in the spec", () => {
  const keyDir = "/etc/nvmeof/keys";
  const rdma = nvmetcliToSpec(fixture("rdma"), { keyDir }).spec as Doc;
  assert.deepEqual(
    [rdma.subsystems[0].version, rdma.subsystems[0].cntlid_min, rdma.subsystems[0].cntlid_max],
    ["1.4", 16, 4095],
  );
  assert.equal(rdma.subsystems[0].qid_max, 32);
  assert.equal(rdma.subsystems[0].namespaces[1].enabled, false);
  assert.equal(rdma.ports[0].inline_data_size, 8192);
  assert.deepEqual(rdma.ports[0].referrals, [
    {
      name: "backup-dc",
      trtype: "rdma",
      adrfam: "ipv4",
      traddr: "10.77.0.20",
      trsvcid: 4420,
      portid: 7,
    },
  ]);
  const tcp = nvmetcliToSpec(fixture("tcp"), { keyDir }).spec as Doc;
  assert.equal(tcp.subsystems[0].pi_enable, true);
  assert.equal(tcp.ports[0].treq, "not required");
  assert.equal(tcp.ports[0].referrals[0].name, "parked");
  assert.equal(tcp.ports[0].referrals[0].enabled, false);
  assert.equal(tcp.ports[0].referrals[0].treq, "required");
  const ana = nvmetcliToSpec(fixture("ana"), { keyDir }).spec as Doc;
  assert.deepEqual(ana.ports[1].ana_groups, [
    { id: 1, state: "non-optimized" },
    { id: 2, state: "inaccessible" },
    { id: 3, state: "change" },
    { id: 4, state: "optimized" },
  ]);
  assert.deepEqual(ana.subsystems[0].namespaces.map((n: Doc) => n.ana_grpid), [2, 3]);
  const auth = nvmetcliToSpec(fixture("dhchap"), { keyDir });
  const h = (auth.spec as Doc).hosts;
  assert.match(h[0].dhchap_key_file, /^\/etc\/nvmeof\/keys\/target-host-[0-9a-f]{12}\.key$/);
  assert.match(h[0].dhchap_ctrl_key_file, /-ctrl\.key$/);
  assert.deepEqual([h[0].dhchap_hash, h[0].dhchap_dhgroup], ["hmac(sha384)", "ffdhe3072"]);
  assert.deepEqual(h[1], { nqn: fixture("dhchap").hosts[1].nqn }, "no key: defaults left out");
  assert.equal(auth.keyFiles.length, 2);
  assert.ok(!JSON.stringify(auth.spec).includes("DHHC-1"), "no secret in the spec");
  assert.ok(!auth.notes.join().includes("DHHC-1"), "no secret in the notes");
  const s = (auth.spec as Doc).subsystems[0];
  assert.deepEqual([s.firmware, s.ieee_oui], ["fw-2.1", "0xabcdef"]);
  assert.equal((auth.spec as Doc).ports[0].max_queue_size, 128);
});

Deno.test("nvmetcli import: what the spec cannot carry is named in a warning", () => {
  const doc = fixture("rdma");
  doc.discovery = { nqn: "nqn.2026-10.com.example:my-discovery" };
  doc.subsystems[0].passthru = [{ device: { path: "/dev/nvme0" }, enable: 1 }];
  doc.subsystems[0].attr.frobnicate = "1";
  doc.ports[0].addr.hostiface = "eth0";
  doc.subsystems[0].namespaces[0].p2pmem = "auto";
  const { warnings } = nvmetcliToSpec(doc, { keyDir: "/k" });
  const all = warnings.join("\n");
  for (const name of ["discovery.nqn", "passthru", "attr.frobnicate", "addr.hostiface", "p2pmem"]) {
    assert.match(all, new RegExp(name.replace(".", "\\.")), `${name} named`);
  }
});

Deno.test("nvmetcli fc.json: the fc port is refused by name", () => {
  const { spec } = nvmetcliToSpec(fixture("fc"), { keyDir: "/k" });
  assert.throws(
    () => validateSpec(spec, { checkFiles: false }),
    (e: unknown) =>
      e instanceof SpecError &&
      /ports\[0\]\.trtype: 'fc' is not a transport nvmeof configures/.test(e.message),
  );
});

/** The ANA fixture as a spec document. */
function anaSpec(): Doc {
  return nvmetcliToSpec(fixture("ana"), { keyDir: "/k" }).spec as Doc;
}

Deno.test("ANA: a namespace naming a group one of its ports lacks is refused, naming both", () => {
  const doc = anaSpec();
  doc.subsystems[0].namespaces[0].ana_grpid = 9;
  assert.throws(
    () => validateSpec(doc, { checkFiles: false }),
    (e: unknown) =>
      e instanceof SpecError && e.problems.length === 2 &&
      /subsystems\[0\]\.namespaces\[0\]\.ana_grpid: names ANA group 9, which port 4 \(ports\[0\]\) does not have/
        .test(e.message) &&
      /port 5 \(ports\[1\]\)/.test(e.message) &&
      /Add '- id: 9' to ports\[0\]\.ana_groups/.test(e.message),
  );
  // Group 1 is on every port without being listed.
  doc.subsystems[0].namespaces[0].ana_grpid = 1;
  validateSpec(doc, { checkFiles: false });
});

Deno.test("ANA: a misspelt state is refused with the valid ones and a suggestion", () => {
  const doc = anaSpec();
  doc.ports[0].ana_groups[2].state = "non-optimised";
  assert.throws(
    () => validateSpec(doc, { checkFiles: false }),
    (e: unknown) =>
      e instanceof SpecError &&
      e.message.includes(
        "ports[0].ana_groups[2].state: 'non-optimised' is not an ANA state (did you mean 'non-optimized'?). " +
          "Fix: Use optimized, non-optimized, inaccessible, persistent-loss or change.",
      ),
  );
  doc.ports[0].ana_groups[2].state = "optimized";
  doc.ports[0].ana_groups[2].id = 129;
  assert.throws(() => validateSpec(doc, { checkFiles: false }), /from 1 to 128/);
});

Deno.test("ANA: removing a group a namespace is still in is refused; nothing is written", () => {
  using dev = withDevices("ana");
  using io = standin([], { kernel: "6.1" });
  const imp = nvmetcliToSpec(dev.doc, { keyDir: "/k" });
  applyPlan(io, planUp(readTree(io), validateSpec(imp.spec)));
  const before = snapshot(io.root);
  // Group 3 leaves port 4's list; namespace 2 says nothing of its group, so it stays in 3.
  const doc = structuredClone(imp.spec) as Doc;
  doc.ports[0].ana_groups = doc.ports[0].ana_groups.filter((g: Doc) => g.id !== 3);
  doc.ports[1].ana_groups = doc.ports[1].ana_groups.filter((g: Doc) => g.id !== 3);
  delete doc.subsystems[0].namespaces[1].ana_grpid;
  const spec = validateSpec(doc);
  assert.throws(
    () => planUp(readTree(io), spec, { prune: true }),
    /Cannot remove an ANA group still in use: namespace 2 of '[^']+' is in ANA group 3 of port 4; .*Nothing was changed/,
  );
  assert.deepEqual(snapshot(io.root), before);
  // Without --prune the group stays: nothing to refuse, nothing to do.
  assert.deepEqual(planUp(readTree(io), spec), []);
  // Moved to group 2 first, group 3 may go.
  doc.subsystems[0].namespaces[1].ana_grpid = 2;
  const moved = planUp(readTree(io), validateSpec(doc), { prune: true });
  assert.ok(moved.some((s) => s.op === "rmdir" && s.path === "ports/4/ana_groups/3"));
  applyPlan(io, moved);
  assert.deepEqual(readTree(io).ports.map((p) => p.ana_groups?.map((g) => g.id)), [[1, 2, 4], [
    1,
    2,
    4,
  ]]);
});

Deno.test("ANA: a state change is one ana_state write, no port teardown", () => {
  using dev = withDevices("ana");
  using io = standin([], { kernel: "6.1" });
  const imp = nvmetcliToSpec(dev.doc, { keyDir: "/k" });
  applyPlan(io, planUp(readTree(io), validateSpec(imp.spec)));
  const doc = structuredClone(imp.spec) as Doc;
  doc.ports[1].ana_groups[1].state = "optimized";
  const steps = planUp(readTree(io), validateSpec(doc));
  assert.deepEqual(steps, [{
    op: "write",
    path: "ports/5/ana_groups/2/ana_state",
    value: "optimized",
    old: "inaccessible",
  }]);
  applyPlan(io, steps);
  assert.equal(io.read("ports/5/ana_groups/2/ana_state"), "optimized");
  assert.deepEqual(readTree(io).ports[1].subsystems, ["nqn.2026-10.com.example:ha-1"]);
});

Deno.test("referrals: an address change disables, writes, enables; removal keeps them for rollback", () => {
  using dev = withDevices("tcp");
  using io = standin([], { kernel: "6.1" });
  const imp = nvmetcliToSpec(dev.doc, { keyDir: "/k" });
  applyPlan(io, planUp(readTree(io), validateSpec(imp.spec)));
  const doc = structuredClone(imp.spec) as Doc;
  doc.ports[0].referrals[1].traddr = "10.77.0.31";
  const steps = planUp(readTree(io), validateSpec(doc));
  const dir = "ports/3/referrals/tcp-peer";
  assert.deepEqual(steps, [
    { op: "write", path: `${dir}/enable`, value: "0", old: "1" },
    { op: "write", path: `${dir}/addr_traddr`, value: "10.77.0.31", old: "10.77.0.21" },
    { op: "write", path: `${dir}/enable`, value: "1", old: "0" },
  ]);
  applyPlan(io, steps);
  const before = snapshot(io.root);
  // Pruning the other referral, then a later step fails: the referral comes back as it was.
  doc.ports[0].referrals = [doc.ports[0].referrals[1]];
  doc.ports.push({ id: 9, trtype: "tcp", traddr: "10.77.0.1", trsvcid: 4499, subsystems: [] });
  const prune = planUp(readTree(io), validateSpec(doc), { prune: true });
  assert.ok(prune.some((s) => s.op === "rmdir" && s.path === "ports/3/referrals/parked"));
  const failing = new StandinConfigfs(io.root, {
    kernel: "6.1",
    failures: [{ op: "mkdir", path: "ports/9", errno: "EIO" }],
  });
  assert.throws(() => applyPlan(failing, prune), /rolled back/);
  assert.deepEqual(snapshot(io.root), before);
});

for (const name of ["rdma", "tcp", "ana"]) {
  Deno.test(`target show of the ${name}.json tree, applied again, changes nothing`, () => {
    using dev = withDevices(name);
    using io = standin([], { kernel: "6.1" });
    const imp = nvmetcliToSpec(dev.doc, { keyDir: "/k" });
    applyPlan(io, planUp(readTree(io), validateSpec(imp.spec)));
    const shown = treeToSpec(readTree(io)) as Doc;
    assert.deepEqual(planUp(readTree(io), validateSpec(shown), { prune: true }), []);
    if (name === "ana") {
      assert.deepEqual(shown.ports[1].ana_groups[0], { id: 1, state: "non-optimized" });
      assert.equal(shown.subsystems[0].namespaces[1].ana_grpid, 3);
    }
    if (name === "rdma") {
      const s = shown.subsystems[0];
      assert.deepEqual([s.version, s.cntlid_min, s.cntlid_max, s.qid_max], ["1.4", 16, 4095, 32]);
    }
  });
}
