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
