/**
 * nvmetcli's format on the real 6.1 nvmet: each fixture of tests/fixtures/nvmetcli is imported,
 * applied with `target up`, read back with `target show -o nvmetcli` and compared with the file,
 * key for key. The lab guest has nvmet-rdma (on rxe0, 10.77.0.1) and nvmet-tcp but no nvme-loop,
 * and its 6.1 has no DH-HMAC-CHAP: those fixtures must be refused clearly with nothing changed.
 * Then an ANA state change with a host connected: one write, the connection stays.
 */
import assert from "node:assert/strict";
import { bash, must, nvmeof, ROOT, tempDir } from "../helpers.ts";

const FIXTURES = `${ROOT}/tests/fixtures/nvmetcli`;
const NVMET = "/sys/kernel/config/nvmet";
const NULLB = "/sys/kernel/config/nullb";
const DEVICES = ["nvmetcli0", "nvmetcli1", "nvmetcli2", "nvmetcli3", "nvmetcli4"];
const HOST1 = "nqn.2014-08.org.nvmexpress:uuid:6b1f1f3e-4c44-4d0a-9b8e-0f1b2c3d4e01";
const HA_NQN = "nqn.2026-10.com.example:ha-1";

/** Memory-backed null_blk devices named /dev/nvmetcliN, as the fixtures name them. */
async function makeDevices(): Promise<void> {
  await must(
    "modprobe null_blk nr_devices=0; modprobe nvmet-tcp; modprobe nvme-tcp; modprobe nvmet-rdma",
  );
  for (const d of DEVICES) {
    await must(
      `[ -d ${NULLB}/${d} ] || { mkdir ${NULLB}/${d} && echo 64 > ${NULLB}/${d}/size && ` +
        `echo 1 > ${NULLB}/${d}/memory_backed && echo 1 > ${NULLB}/${d}/power; }; ` +
        `for i in $(seq 50); do [ -b /dev/${d} ] && exit 0; sleep 0.1; done; exit 1`,
    );
  }
}

/** The whole nvmet tree as `find` shows it: to prove a refusal changed nothing. */
async function treeListing(): Promise<string> {
  return await must(`cd ${NVMET} && find . | sort`);
}

/** Removes everything nvmet holds (connected hosts first). */
async function clearTarget(): Promise<void> {
  await bash("nvme disconnect-all >/dev/null 2>&1");
  const r = await nvmeof(["target", "down", "--all", "--force"]);
  assert.equal(r.code, 0, r.stderr);
}

/** `target import` of a fixture into dir/<name>.yaml; returns the spec file. */
async function importFixture(name: string, dir: string, env: Record<string, string>) {
  const r = await nvmeof(["target", "import", "--from-nvmetcli", `${FIXTURES}/${name}.json`], {
    env,
  });
  assert.equal(r.code, 0, `import ${name}: ${r.stderr}`);
  const spec = `${dir}/${name}.yaml`;
  await Deno.writeTextFile(spec, r.stdout);
  return { spec, stderr: r.stderr };
}

for (const name of ["rdma", "tcp", "ana"]) {
  Deno.test(`nvmetcli ${name}.json: import, up, show -o nvmetcli gives the file back`, async () => {
    await makeDevices();
    await clearTarget();
    await using dir = await tempDir();
    const env = { NVMEOF_ETC: dir.path };
    const { spec, stderr } = await importFixture(name, dir.path, env);
    assert.doesNotMatch(stderr, /warning/, "the 6.1 fixtures carry every field");
    try {
      const up = await nvmeof(["target", "up", "-f", spec]);
      assert.equal(up.code, 0, up.stderr);
      const show = await nvmeof(["target", "show", "-o", "nvmetcli"]);
      assert.equal(show.code, 0, show.stderr);
      const want = JSON.parse(await Deno.readTextFile(`${FIXTURES}/${name}.json`));
      assert.deepEqual(JSON.parse(show.stdout), want);
      // nvmetcli's own formatting: sorted keys, two-space indent.
      assert.equal(show.stdout.trimEnd(), JSON.stringify(want, null, 2));
      // Applying the same spec again changes nothing.
      const again = await nvmeof(["target", "up", "-f", spec, "--dry-run", "-o", "json"]);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(JSON.parse(again.stdout).steps, []);
    } finally {
      await clearTarget();
    }
  });
}

Deno.test("nvmetcli fc.json: import refuses the fc port by name", async () => {
  await using dir = await tempDir();
  const r = await nvmeof(["target", "import", "--from-nvmetcli", `${FIXTURES}/fc.json`], {
    env: { NVMEOF_ETC: dir.path },
  });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /ports\[0\]\.trtype: 'fc' is not a transport nvmeof configures/);
});

Deno.test("nvmetcli loop.json: imported; up on a kernel without nvme-loop is refused, nothing left", async () => {
  await makeDevices();
  await clearTarget();
  await using dir = await tempDir();
  const { spec } = await importFixture("loop", dir.path, { NVMEOF_ETC: dir.path });
  const before = await treeListing();
  const up = await nvmeof(["target", "up", "-f", spec]);
  // The transport's module is loaded before anything is written: a missing one is the
  // environment (exit 3), named, with the tree as it was.
  assert.equal(up.code, 3, up.stdout + up.stderr);
  assert.match(up.stderr, /nvme-loop/);
  assert.equal(await treeListing(), before);
});

Deno.test("nvmetcli dhchap.json: keys go to 0600 files; 6.1 without DH-HMAC-CHAP refuses, nothing left", async () => {
  await makeDevices();
  await clearTarget();
  await using dir = await tempDir();
  const { spec, stderr } = await importFixture("dhchap", dir.path, { NVMEOF_ETC: dir.path });
  const text = await Deno.readTextFile(spec);
  assert.doesNotMatch(text + stderr, /DHHC-1/, "no secret in the spec or on stderr");
  const files = [...Deno.readDirSync(`${dir.path}/keys`)].map((e) => `${dir.path}/keys/${e.name}`);
  assert.equal(files.length, 2);
  for (const f of files) assert.equal(Deno.statSync(f).mode! & 0o777, 0o600);
  // The fixture's device does not exist here; point it at one that does.
  await Deno.writeTextFile(spec, text.replace("/dev/nvmetcli5", "/dev/nvmetcli0"));
  const before = await treeListing();
  const up = await nvmeof(["target", "up", "-f", spec]);
  assert.equal(up.code, 1, up.stdout);
  assert.match(up.stderr, /CONFIG_NVME_TARGET_AUTH/);
  assert.equal(await treeListing(), before);
});

Deno.test("ANA: a state change with a host connected is one write; the controller stays", async () => {
  await makeDevices();
  await clearTarget();
  await using dir = await tempDir();
  const { spec } = await importFixture("ana", dir.path, { NVMEOF_ETC: dir.path });
  try {
    const up = await nvmeof(["target", "up", "-f", spec]);
    assert.equal(up.code, 0, up.stderr);
    await must(
      `nvme connect -t tcp -a 10.77.0.1 -s 4423 -n ${HA_NQN} -q ${HOST1}`,
    );
    const ctrlBefore = (await must(
      `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = ${HA_NQN} ] && basename $c; done`,
    )).trim();
    assert.match(ctrlBefore, /^nvme\d+$/);
    // Port 5 (tcp), group 2: inaccessible → optimized.
    const text = await Deno.readTextFile(spec);
    const changed = text.replace(
      /(id: 5[\s\S]*?- id: 2\n\s+state: )inaccessible/,
      "$1optimized",
    );
    assert.notEqual(changed, text);
    await Deno.writeTextFile(spec, changed);
    const plan = await nvmeof(["target", "up", "-f", spec, "--dry-run", "-o", "json"]);
    assert.equal(plan.code, 0, plan.stderr);
    assert.deepEqual(JSON.parse(plan.stdout).steps, [
      {
        op: "write",
        path: "ports/5/ana_groups/2/ana_state",
        value: "optimized",
        old: "inaccessible",
      },
    ]);
    const apply = await nvmeof(["target", "up", "-f", spec]);
    assert.equal(apply.code, 0, apply.stderr);
    assert.equal(
      (await Deno.readTextFile(`${NVMET}/ports/5/ana_groups/2/ana_state`)).trim(),
      "optimized",
    );
    const ctrlAfter = (await must(
      `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = ${HA_NQN} ] && basename $c; done`,
    )).trim();
    assert.equal(ctrlAfter, ctrlBefore, "the same controller, never reconnected");
    assert.equal((await Deno.readTextFile(`/sys/class/nvme/${ctrlAfter}/state`)).trim(), "live");
    // The host learns the new state from the ANA log (change notice): namespace 1 is in group 2.
    const seen = await bash(
      `for i in $(seq 100); do for n in /sys/class/nvme/${ctrlAfter}/nvme*c*n*; do ` +
        `[ "$(cat $n/ana_grpid 2>/dev/null)" = 2 ] && [ "$(cat $n/ana_state)" = optimized ] && exit 0; ` +
        `done; sleep 0.1; done; exit 1`,
    );
    assert.equal(seen.code, 0, "the host sees group 2 optimized");
  } finally {
    await clearTarget();
  }
});
