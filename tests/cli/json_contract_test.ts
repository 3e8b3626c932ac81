/**
 * The JSON contract (docs/json.md): nvmeof's own results carry `"nvmeof_json": 1` first
 * and the documented keys with their types; nvme-cli's shapes carry nothing of ours. The Ansible
 * modules (integrations/ansible) read exactly these keys.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";
import { multipathTree } from "../sysfs_standin.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HI = "5a1e0000-0000-4000-8000-000000000001";
const SUB = "nqn.2026-12.io.nvmeof.test:contract";

/** KEY → typeof, for every key the contract promises (extra keys are allowed). */
function assertShape(d: Record<string, unknown>, shape: Record<string, string>): void {
  assert.equal(Object.keys(d)[0], "nvmeof_json", "the version is the first key");
  assert.equal(d.nvmeof_json, 1);
  for (const [k, t] of Object.entries(shape)) {
    const got = Array.isArray(d[k]) ? "array" : typeof d[k];
    assert.equal(got, t, `key '${k}': ${JSON.stringify(d[k])}`);
  }
}

const PLAN = { dry_run: "boolean", changed: "boolean", steps: "array", warnings: "array" };

function targetLab(path: string) {
  const configfs = `${path}/config`;
  for (const d of ["hosts", "subsystems", "ports"]) {
    Deno.mkdirSync(`${configfs}/nvmet/${d}`, { recursive: true });
  }
  Deno.writeTextFileSync(
    `${configfs}/nvmet/discovery_nqn`,
    "nqn.2014-08.org.nvmexpress.discovery\n",
  );
  Deno.writeFileSync(`${path}/disk0.img`, new Uint8Array(4096));
  const spec = `${path}/target.yaml`;
  Deno.writeTextFileSync(
    spec,
    `hosts: [{nqn: "${HQ}"}]
subsystems:
  - nqn: ${SUB}
    hosts: ["${HQ}"]
    namespaces: [{nsid: 1, device: ${path}/disk0.img}]
ports:
  - {id: 1, trtype: rdma, traddr: 10.77.0.1, trsvcid: 4420, subsystems: [${SUB}]}
`,
  );
  const run = async (args: string[]) => {
    const r = await nvmeof([...args, "--configfs", configfs, "-o", "json"], {
      standin: true,
      env: { NVMEOF_LOCK_DIR: path },
    });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  return { spec, run };
}

Deno.test("contract: target up and down, dry run or not, carry nvmeof_json 1 and the plan's keys", async () => {
  await using dir = await tempDir();
  const t = targetLab(dir.path);
  const dry = await t.run(["target", "up", "-f", t.spec, "--dry-run"]);
  assertShape(dry, { ...PLAN, summary: "object" });
  assert.equal(dry.dry_run, true);
  assert.equal(dry.changed, false);
  assert.ok(dry.steps.length > 0);
  for (const s of dry.steps) assert.equal(typeof s.op, "string", JSON.stringify(s));
  const up = await t.run(["target", "up", "-f", t.spec]);
  assertShape(up, { ...PLAN, summary: "object" });
  assert.equal(up.changed, true);
  assert.deepEqual(up.steps, dry.steps);
  const again = await t.run(["target", "up", "-f", t.spec]);
  assert.equal(again.changed, false);
  assert.deepEqual(again.steps, []);
  const downDry = await t.run(["target", "down", "-f", t.spec, "--dry-run"]);
  assertShape(downDry, PLAN);
  assert.ok(downDry.steps.length > 0);
  const down = await t.run(["target", "down", "-f", t.spec]);
  assertShape(down, PLAN);
  assert.equal(down.changed, true);
});

Deno.test("contract: target ana, dry run or not, carries nvmeof_json 1, the plan's keys, port, state, groups", async () => {
  await using dir = await tempDir();
  const t = targetLab(dir.path);
  await t.run(["target", "up", "-f", t.spec]);
  // The spec's one port is the namespace's only path: --force to drain it.
  const args = ["target", "ana", "-p", "1", "-S", "inaccessible", "--force"];
  const dry = await t.run([...args, "--dry-run"]);
  const ana = { ...PLAN, port: "number", state: "string", groups: "array" };
  assertShape(dry, ana);
  assert.equal(dry.changed, false);
  const done = await t.run(args);
  assertShape(done, ana);
  assert.equal(done.changed, true);
  assert.deepEqual(done.steps, dry.steps);
  assert.deepEqual(done.groups, [{ id: 1, old: "optimized", new: "inaccessible" }]);
  assert.equal(done.warnings.length, 1);
});

async function hostTree(root: string) {
  const w = async (path: string, text: string) => {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text);
  };
  await Deno.mkdir(`${root}/dev`, { recursive: true });
  await w("etc/nvme/hostnqn", HQ + "\n");
  await w("etc/nvme/hostid", HI + "\n");
  const d = "sys/class/nvme/nvme3";
  await w(`${d}/transport`, "rdma\n");
  await w(`${d}/address`, "traddr=10.0.0.2,trsvcid=4420\n");
  await w(`${d}/subsysnqn`, SUB + "\n");
  await w(`${d}/hostnqn`, HQ + "\n");
  await w(`${d}/cntlid`, "5\n");
  await w(`${d}/state`, "live\n");
  await w(`${d}/delete_controller`, "");
  return {
    NVMEOF_SYSFS: `${root}/sys`,
    NVMEOF_DEV: `${root}/dev`,
    NVMEOF_ETC_NVME: `${root}/etc/nvme`,
  };
}

Deno.test("contract: connect --dry-run and disconnect carry nvmeof_json 1 and their keys", async () => {
  await using dir = await tempDir();
  const env = await hostTree(dir.path);
  const c = await nvmeof(["connect", "-a", "10.0.0.9", "-n", SUB, "--dry-run", "-o", "json"], {
    env,
  });
  assert.equal(c.code, 0, c.stderr);
  const cj = JSON.parse(c.stdout);
  assertShape(cj, { dry_run: "boolean", device: "string", option_string: "string" });
  assert.match(cj.option_string, new RegExp(`^nqn=${SUB},transport=rdma,traddr=10\\.0\\.0\\.9`));
  const d = await nvmeof(["disconnect", "-n", SUB, "-o", "json"], { env });
  assert.equal(d.code, 0, d.stderr);
  const dj = JSON.parse(d.stdout);
  assertShape(dj, { controllers: "array" });
  assert.equal(dj.controllers[0].device, "nvme3");
  assert.equal(typeof dj.controllers[0].status, "string");
  const none = await nvmeof(["disconnect", "-n", `${SUB}-gone`, "-o", "json"], { env });
  assert.equal(none.code, 0, none.stderr);
  assertShape(JSON.parse(none.stdout), { controllers: "array", not_connected: "array" });
});

Deno.test("contract: list --paths carries nvmeof_json 1; nvme-cli's list and list-subsys carry none of ours", async () => {
  await using dir = await tempDir();
  const env = await multipathTree(dir.path);
  const own = await nvmeof(["list", "--paths", "-o", "json"], { env });
  assert.equal(own.code, 0, own.stderr);
  assertShape(JSON.parse(own.stdout), { subsystems: "array" });
  const devices = await nvmeof(["list", "-o", "json"], { env });
  assert.equal(devices.code, 0, devices.stderr);
  assert.deepEqual(Object.keys(JSON.parse(devices.stdout)), ["Devices"]);
  const subsys = await nvmeof(["list-subsys", "-o", "json"], { env });
  assert.equal(subsys.code, 0, subsys.stderr);
  assert.doesNotMatch(subsys.stdout, /nvmeof_json/);
});

Deno.test("contract: metrics -o json carries nvmeof_json 1 and its families, with --textfile the file", async () => {
  await using d = await tempDir();
  const env = await multipathTree(d.path);
  const r = await nvmeof(["metrics", "-o", "json", "--configfs", `${d.path}/config`], { env });
  assert.equal(r.code, 0, r.stderr);
  const data = JSON.parse(r.stdout);
  assertShape(data, { families: "array" });
  for (const f of data.families) {
    assert.deepEqual(Object.keys(f).sort(), ["help", "name", "samples", "type"]);
  }
  const file = `${d.path}/nvmeof.prom`;
  const t = await nvmeof(["metrics", "-o", "json", "--textfile", file], { env });
  assertShape(JSON.parse(t.stdout), { textfile: "string", families: "array" });
});
