/**
 * `nvmeof target` with ANA groups and referrals, as a user runs it against the stand-in configfs:
 * up with groups, a state change in place (the plan is the one ana_state write), a group still in
 * use refused with nothing written, import of an nvmetcli file and show -o nvmetcli.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { nvmeof, ROOT, tempDir } from "../helpers.ts";
import { snapshot } from "../unit/target_fixtures.ts";

const HOST1 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
const SUB1 = "nqn.2026-10.pk.nextgen:ha-pool-1";

async function lab() {
  const t = await tempDir();
  const configfs = `${t.path}/config`;
  for (const d of ["hosts", "subsystems", "ports"]) {
    Deno.mkdirSync(`${configfs}/nvmet/${d}`, { recursive: true });
  }
  const dev = [0, 1].map((i) => {
    const p = `${t.path}/disk${i}.img`;
    Deno.writeFileSync(p, new Uint8Array(4096));
    return p;
  });
  const spec = `${t.path}/target.yaml`;
  const doc = {
    hosts: [{ nqn: HOST1 }],
    subsystems: [{
      nqn: SUB1,
      hosts: [HOST1],
      namespaces: [
        { nsid: 1, device: dev[0], ana_grpid: 2 },
        { nsid: 2, device: dev[1], ana_grpid: 3 },
      ],
    }],
    ports: [1, 2].map((id) => ({
      id,
      trtype: id === 1 ? "rdma" : "tcp",
      traddr: "10.77.0.1",
      trsvcid: 4419 + id,
      subsystems: [SUB1],
      ana_groups: [{ id: 2, state: "optimized" }, { id: 3, state: "non-optimized" }],
      referrals: [{ trtype: "tcp", traddr: "10.77.0.9", trsvcid: 8009 }],
    })),
  };
  Deno.writeTextFileSync(spec, stringify(doc));
  return {
    dir: t.path,
    configfs,
    spec,
    doc,
    run: (args: string[]) =>
      nvmeof([...args, "--configfs", configfs], {
        standin: true,
        env: { NVMEOF_LOCK_DIR: t.path, NVMEOF_ETC: t.path },
      }),
    tree: () => snapshot(`${configfs}/nvmet`),
    [Symbol.asyncDispose]: () => t[Symbol.asyncDispose](),
  };
}

Deno.test("target up with ANA groups; a state change in place is only the ana_state write", async () => {
  await using l = await lab();
  const up = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(up.code, 0, up.stderr);
  const nvmet = `${l.configfs}/nvmet`;
  assert.equal(Deno.readTextFileSync(`${nvmet}/ports/2/ana_groups/3/ana_state`), "non-optimized\n");
  assert.equal(Deno.readTextFileSync(`${nvmet}/subsystems/${SUB1}/namespaces/2/ana_grpid`), "3\n");
  assert.equal(
    Deno.readTextFileSync(`${nvmet}/ports/1/referrals/tcp-10.77.0.9-8009/enable`),
    "1\n",
  );
  // Drain port 1: its groups become inaccessible; port 2 untouched, no link removed.
  l.doc.ports[0].ana_groups = [{ id: 2, state: "inaccessible" }, { id: 3, state: "inaccessible" }];
  Deno.writeTextFileSync(l.spec, stringify(l.doc));
  const dry = await l.run(["target", "up", "-f", l.spec, "--dry-run", "-o", "json"]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.deepEqual(JSON.parse(dry.stdout).steps, [
    {
      op: "write",
      path: "ports/1/ana_groups/2/ana_state",
      value: "inaccessible",
      old: "optimized",
    },
    {
      op: "write",
      path: "ports/1/ana_groups/3/ana_state",
      value: "inaccessible",
      old: "non-optimized",
    },
  ]);
  const apply = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(apply.code, 0, apply.stderr);
  assert.equal(Deno.readTextFileSync(`${nvmet}/ports/1/ana_groups/2/ana_state`), "inaccessible\n");
  assert.ok(Deno.lstatSync(`${nvmet}/ports/1/subsystems/${SUB1}`).isSymlink);
});

Deno.test("target up --prune refuses to remove an ANA group a namespace is in; nothing written", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const before = l.tree();
  for (const p of l.doc.ports) p.ana_groups = [{ id: 2, state: "optimized" }];
  delete (l.doc.subsystems[0].namespaces[1] as { ana_grpid?: number }).ana_grpid;
  Deno.writeTextFileSync(l.spec, stringify(l.doc));
  const r = await l.run(["target", "up", "-f", l.spec, "--prune"]);
  assert.equal(r.code, 1, r.stdout);
  assert.match(
    r.stderr,
    /Cannot remove an ANA group still in use: namespace 2 of '[^']+' is in ANA group 3 of port 1/,
  );
  assert.match(r.stderr, /Nothing was changed/);
  assert.deepEqual(l.tree(), before);
});

Deno.test("target check names a misspelt ANA state and a group no port has", async () => {
  await using l = await lab();
  l.doc.ports[1].ana_groups[0].state = "optimised";
  l.doc.subsystems[0].namespaces[0].ana_grpid = 7;
  Deno.writeTextFileSync(l.spec, stringify(l.doc));
  const r = await l.run(["target", "check", "-f", l.spec]);
  assert.equal(r.code, 1, r.stdout);
  assert.match(
    r.stderr,
    /ports\[1\]\.ana_groups\[0\]\.state: 'optimised' is not an ANA state \(did you mean 'optimized'\?\)/,
  );
  assert.match(
    r.stderr,
    /subsystems\[0\]\.namespaces\[0\]\.ana_grpid: names ANA group 7, which port 1/,
  );
});

Deno.test("target import --from-nvmetcli moves inline keys to 0600 files and prints no secret", async () => {
  await using l = await lab();
  const r = await l.run([
    "target",
    "import",
    "--from-nvmetcli",
    `${ROOT}/tests/fixtures/nvmetcli/dhchap.json`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout + r.stderr, /DHHC-1/);
  assert.match(r.stdout, /dhchap_key_file: .*\/keys\/target-host-[0-9a-f]{12}\.key/);
  assert.match(r.stderr, /note: hosts\[0\]\.dhchap\.key moved to /);
  const keys = [...Deno.readDirSync(`${l.dir}/keys`)];
  assert.equal(keys.length, 2);
  for (const k of keys) assert.equal(Deno.statSync(`${l.dir}/keys/${k.name}`).mode! & 0o777, 0o600);
  // --dry-run writes none.
  Deno.removeSync(`${l.dir}/keys`, { recursive: true });
  const dry = await l.run([
    "target",
    "import",
    "--from-nvmetcli",
    `${ROOT}/tests/fixtures/nvmetcli/dhchap.json`,
    "--dry-run",
  ]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.throws(() => Deno.statSync(`${l.dir}/keys`));
});

Deno.test("target show -o nvmetcli carries ANA groups, ana_grpid and referrals", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const r = await l.run(["target", "show", "-o", "nvmetcli"]);
  assert.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  assert.deepEqual(d.ports[0].ana_groups, [
    { ana: { state: "optimized" }, grpid: 1 },
    { ana: { state: "optimized" }, grpid: 2 },
    { ana: { state: "non-optimized" }, grpid: 3 },
  ]);
  assert.deepEqual(d.ports[0].referrals, [{
    addr: {
      adrfam: "ipv4",
      portid: "0",
      traddr: "10.77.0.9",
      treq: "not specified",
      trsvcid: "8009",
      trtype: "tcp",
    },
    enable: 1,
    name: "tcp-10.77.0.9-8009",
  }]);
  assert.deepEqual(
    d.subsystems[0].namespaces.map((n: { ana_grpid: number }) => n.ana_grpid),
    [2, 3],
  );
});

Deno.test("target ana drains a port live and brings it back; target up --dry-run shows the drift", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const nvmet = `${l.configfs}/nvmet`;
  const state = (port: number, g: number) =>
    Deno.readTextFileSync(`${nvmet}/ports/${port}/ana_groups/${g}/ana_state`).trim();
  const before = l.tree();
  const dry = await l.run(["target", "ana", "--port", "1", "--state", "inaccessible", "--dry-run"]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /Would change ANA state with 3 step\(s\) \(dry run, nothing changed\)/);
  assert.deepEqual(l.tree(), before);

  const drain = await l.run(["target", "ana", "-p", "1", "-S", "inaccessible", "-o", "json"]);
  assert.equal(drain.code, 0, drain.stderr);
  const d = JSON.parse(drain.stdout);
  assert.equal(Object.keys(d)[0], "nvmeof_json");
  assert.equal(d.changed, true);
  assert.equal(d.port, 1);
  assert.deepEqual(d.groups, [
    { id: 1, old: "optimized", new: "inaccessible" },
    { id: 2, old: "optimized", new: "inaccessible" },
    { id: 3, old: "non-optimized", new: "inaccessible" },
  ]);
  assert.deepEqual(d.steps.map((s: { path: string }) => s.path), [
    "ports/1/ana_groups/1/ana_state",
    "ports/1/ana_groups/2/ana_state",
    "ports/1/ana_groups/3/ana_state",
  ]);
  assert.deepEqual([1, 2, 3].map((g) => state(1, g)), Array(3).fill("inaccessible"));
  // Port 2 and port 1's link stay as they were.
  assert.deepEqual([1, 2, 3].map((g) => state(2, g)), ["optimized", "optimized", "non-optimized"]);
  assert.ok(Deno.lstatSync(`${nvmet}/ports/1/subsystems/${SUB1}`).isSymlink);

  // Again: nothing to do, exit 0.
  const again = await l.run(["target", "ana", "-p", "1", "-S", "inaccessible"]);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /Nothing to change: port 1's group\(s\) 1, 2, 3 are inaccessible/);

  // The spec is untouched: target up would put its states back.
  const drift = await l.run(["target", "up", "-f", l.spec, "--dry-run", "-o", "json"]);
  assert.deepEqual(
    JSON.parse(drift.stdout).steps.map((s: { path: string; value: string }) =>
      `${s.path}=${s.value}`
    ),
    [
      "ports/1/ana_groups/1/ana_state=optimized",
      "ports/1/ana_groups/2/ana_state=optimized",
      "ports/1/ana_groups/3/ana_state=non-optimized",
    ],
  );

  // Back, one group at a time.
  const back = await l.run(["target", "ana", "-p", "1", "-g", "2", "-S", "optimized"]);
  assert.equal(back.code, 0, back.stderr);
  assert.match(back.stdout, /write {2}ports\/1\/ana_groups\/2\/ana_state = 'optimized'/);
  assert.match(back.stdout, /'nvmeof target up' puts back the spec's states/);
  assert.deepEqual([1, 2, 3].map((g) => state(1, g)), [
    "inaccessible",
    "optimized",
    "inaccessible",
  ]);
});

Deno.test("target ana names an unknown port, group or state and writes nothing", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const before = l.tree();
  const cases: Array<[string[], number, RegExp]> = [
    [
      ["-p", "3", "-S", "inaccessible"],
      1,
      /Port '3' does not exist in nvmet \(did you mean '[12]'\?\)/,
    ],
    [
      ["-p", "1", "-g", "4", "-S", "inaccessible"],
      1,
      /Port 1 has no ANA group 4 \(did you mean '[13]'\?\)/,
    ],
    [["-p", "1", "-g", "two", "-S", "inaccessible"], 2, /ANA group 'two' is not a number/],
    [
      ["-p", "1", "-S", "inaccesible"],
      2,
      /'inaccesible' is not an ANA state \(did you mean 'inaccessible'\?\)/,
    ],
    [["-p", "1", "-S", "non_optimized"], 2, /did you mean 'non-optimized'/],
    [["-p", "1"], 2, /--state is required/],
    [["--state", "optimized"], 2, /--port is required/],
  ];
  for (const [args, code, re] of cases) {
    const r = await l.run(["target", "ana", ...args]);
    assert.equal(r.code, code, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, re, args.join(" "));
    assert.match(r.stderr, /Ports:|Use one of|groups:|For example|Give a group id/, args.join(" "));
  }
  const j = await l.run(["target", "ana", "-p", "9", "-S", "optimized", "-o", "json"]);
  assert.equal(j.code, 1);
  assert.equal(JSON.parse(j.stdout).error.exit_code, 1);
  assert.deepEqual(l.tree(), before);
});

Deno.test("target ana refuses to leave a namespace with no usable path, unless --force", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  assert.equal((await l.run(["target", "ana", "-p", "1", "-S", "inaccessible"])).code, 0);
  const before = l.tree();
  const r = await l.run(["target", "ana", "-p", "2", "-g", "3", "-S", "persistent-loss"]);
  assert.equal(r.code, 1, r.stdout);
  assert.match(
    r.stderr,
    /would leave namespace 2 of '[^']+' \(ANA group 3\) with no optimized or non-optimized path on any port; nothing was changed/,
  );
  assert.deepEqual(l.tree(), before);
  // Group 1 holds no namespace: moving it strands nothing.
  assert.equal((await l.run(["target", "ana", "-p", "2", "-g", "1", "-S", "change"])).code, 0);
  const forced = await l.run([
    "target",
    "ana",
    "-p",
    "2",
    "-g",
    "3",
    "-S",
    "inaccessible",
    "--force",
  ]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(
    forced.stderr,
    /warning: namespace 2 of .* has no optimized or non-optimized path left/,
  );
  assert.equal(
    Deno.readTextFileSync(`${l.configfs}/nvmet/ports/2/ana_groups/3/ana_state`).trim(),
    "inaccessible",
  );
});
