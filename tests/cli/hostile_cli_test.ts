/**
 * `nvmeof` against what a hostile or careless environment does: a reader that closes the pipe
 * early, a truncated spec with --prune, a lock taken through another spelling of the tree, a lock
 * held too long. Spawned as a user runs it, against a stand-in configfs in a temporary directory.
 */
import assert from "node:assert/strict";
import { bash, nvmeof, ROOT, tempDir } from "../helpers.ts";
import { snapshot } from "../unit/target_fixtures.ts";

/** A stand-in configfs under `dir` with what `modprobe nvmet` makes. */
function nvmetRoot(dir: string): string {
  const configfs = `${dir}/config`;
  for (const d of ["hosts", "subsystems", "ports"]) {
    Deno.mkdirSync(`${configfs}/nvmet/${d}`, { recursive: true });
  }
  return configfs;
}

Deno.test("target show into a pipe closed early ends quietly with exit 0", async () => {
  await using t = await tempDir();
  const configfs = nvmetRoot(t.path);
  // ~2000 hosts: far more YAML than a pipe holds, so the write meets the closed pipe.
  for (let i = 0; i < 2000; i++) {
    Deno.mkdirSync(
      `${configfs}/nvmet/hosts/nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-${
        String(i).padStart(12, "0")
      }`,
    );
  }
  const r = await bash(
    `NVMEOF_LOCK_DIR='${t.path}' '${ROOT}/tests/standin/nvmeof' ` +
      `target show --configfs '${configfs}' 2>'${t.path}/err' | head -c 50 >/dev/null; ` +
      `echo "\${PIPESTATUS[0]}"`,
  );
  assert.equal(r.stdout.trim(), "0", "exit code of nvmeof");
  assert.equal(Deno.readTextFileSync(`${t.path}/err`), "", "nothing on stderr");
});

const HOST1 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
const SUB1 = "nqn.2026-10.pk.nextgen:storage-pool-1";

/** A temporary target: a stand-in tree, a one-subsystem spec, and a runner. */
async function target() {
  const t = await tempDir();
  const configfs = nvmetRoot(t.path);
  const dev = `${t.path}/disk0.img`;
  Deno.writeFileSync(dev, new Uint8Array(4096));
  const spec = `${t.path}/target.yaml`;
  Deno.writeTextFileSync(
    spec,
    JSON.stringify({
      hosts: [{ nqn: HOST1 }],
      subsystems: [{ nqn: SUB1, hosts: [HOST1], namespaces: [{ nsid: 1, device: dev }] }],
      ports: [{ id: 1, trtype: "rdma", traddr: "10.77.0.1", subsystems: [SUB1] }],
    }),
  );
  return {
    dir: t.path,
    configfs,
    spec,
    run: (args: string[], env: Record<string, string> = {}) =>
      nvmeof([...args, "--configfs", configfs], {
        standin: true,
        env: { NVMEOF_LOCK_DIR: t.path, ...env },
      }),
    tree: () => snapshot(`${configfs}/nvmet`),
    [Symbol.asyncDispose]: () => t[Symbol.asyncDispose](),
  };
}

Deno.test("target up --prune refuses an empty spec, naming what would go, unless --allow-empty", async () => {
  await using l = await target();
  const up = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(up.code, 0, up.stderr);
  const before = l.tree();
  const empty = `${l.dir}/empty.yaml`;
  for (const text of ["", "---\n", "null\n", "{}\n", "# truncated\n"]) {
    Deno.writeTextFileSync(empty, text);
    for (const extra of [[], ["--dry-run"]]) {
      const r = await l.run(["target", "up", "-f", empty, "--prune", ...extra]);
      assert.equal(r.code, 1, `${JSON.stringify(text)} ${extra}: ${r.stdout}`);
      assert.match(r.stderr, /is empty, and with --prune it would remove the whole target/);
      assert.match(
        r.stderr,
        new RegExp(`1 subsystem\\(s\\) \\('${SUB1}'\\), 1 port\\(s\\) \\(1\\)`),
      );
      assert.match(r.stderr, /--allow-empty/);
      assert.deepEqual(l.tree(), before, "nothing changed");
    }
  }
  const ok = await l.run(["target", "up", "-f", empty, "--prune", "--allow-empty"]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(Deno.readDirSync(`${l.configfs}/nvmet/subsystems`).toArray(), []);
});

Deno.test("four target up at once, the tree named four ways, run one after another", async () => {
  await using l = await target();
  const spellings = [l.configfs, `${l.configfs}/`, `${l.configfs}//`, `${l.configfs}/./`];
  const runs = await Promise.all(
    spellings.map((c) =>
      nvmeof(["target", "up", "-f", l.spec, "--configfs", c], {
        standin: true,
        env: { NVMEOF_LOCK_DIR: l.dir },
      })
    ),
  );
  for (const r of runs) assert.equal(r.code, 0, r.stderr);
  // Exactly one run applied the spec; the others, after it, found nothing to do.
  assert.equal(runs.filter((r) => r.stdout.startsWith("Apply the spec")).length, 1);
  assert.equal(runs.filter((r) => r.stdout.startsWith("No changes")).length, 3);
});

Deno.test("connections import reads at most 16 MiB of nvme-cli's files", async () => {
  await using t = await tempDir();
  Deno.mkdirSync(`${t.path}/nvme`);
  Deno.symlinkSync("/dev/zero", `${t.path}/nvme/config.json`);
  const t0 = Date.now();
  const r = await nvmeof(["connections", "import", "--from-nvme-cli", "--dry-run"], {
    env: { NVMEOF_ETC_NVME: `${t.path}/nvme`, NVMEOF_ETC: `${t.path}/etc` },
  });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /config\.json' is larger than 16777216 bytes/);
  assert.ok(Date.now() - t0 < 20_000);
});

Deno.test("connections import never prints a key from a mangled discovery.conf, even --verbose", async () => {
  await using t = await tempDir();
  const key = "DHHC-1:00:ia3Hm9kQP8XhK4i8QPq0l8uKy5wOxQsJ3Xw1p3VnN2c0Vw==:";
  Deno.mkdirSync(`${t.path}/nvme`);
  Deno.writeTextFileSync(`${t.path}/nvme/hostnqn`, `${HOST1}\n`);
  Deno.writeTextFileSync(`${t.path}/nvme/hostid`, "11111111-2222-3333-4444-555555555555\n");
  for (
    const line of [
      `--transport=rdma --traddr=10.0.0.1 --dhchap_secret=${key}`,
      `--transport=rdma --traddr=10.0.0.1 --dhchap-secret= ${key}`,
      `--transport=rdma --traddr=${key}`,
    ]
  ) {
    Deno.writeTextFileSync(`${t.path}/nvme/discovery.conf`, line + "\n");
    Deno.writeTextFileSync(`${t.path}/nvme/config.json`, `[{"hostnqn": "${HOST1}", "x": ${key}}]`);
    const r = await nvmeof(
      ["connections", "import", "--from-nvme-cli", "--dry-run", "--verbose", "-o", "json"],
      { env: { NVMEOF_ETC_NVME: `${t.path}/nvme`, NVMEOF_ETC: `${t.path}/etc` } },
    );
    assert.notEqual(r.code, 0, line);
    for (const part of ["ia3Hm9kQ", "3VnN2c0Vw", "DHHC-1:00:i"]) {
      assert.ok(!(r.stdout + r.stderr).includes(part), `${line}:\n${r.stdout}${r.stderr}`);
    }
  }
});

Deno.test("target down failing midway puts back a removed host with its keys, hash and group", async () => {
  await using l = await target();
  const HOST2 = "nqn.2014-08.org.nvmexpress:uuid:66666666-7777-8888-9999-000000000000";
  const key = `${l.dir}/host1.key`;
  const secret = "DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj:";
  Deno.writeTextFileSync(key, secret + "\n", { mode: 0o600 });
  Deno.chmodSync(key, 0o600);
  const spec = JSON.parse(Deno.readTextFileSync(l.spec));
  spec.hosts = [
    { nqn: HOST1, dhchap_key_file: key, dhchap_hash: "hmac(sha384)", dhchap_dhgroup: "ffdhe3072" },
    { nqn: HOST2 },
  ];
  Deno.writeTextFileSync(l.spec, JSON.stringify(spec));
  const up = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(up.code, 0, up.stderr);
  const before = l.tree();
  assert.equal(before[`hosts/${HOST1}/dhchap_key`], secret + "\n");
  // HOST1 goes first (hosts are removed in name order); the removal of HOST2 fails.
  const r = await l.run(["target", "down", "-f", l.spec], {
    NVMEOF_CONFIGFS_FAIL: `rmdir hosts/${HOST2}=EIO`,
  });
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stderr, /rolled back; configfs is as before/);
  assert.ok(!(r.stdout + r.stderr).includes("c2VjcmV0"), "secret leaked");
  assert.deepEqual(l.tree(), before);
});
