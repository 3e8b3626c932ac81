/**
 * Boot persistence from the command line, against temporary directories (NVMEOF_ETC,
 * NVMEOF_SYSTEMD_DIR, NVMEOF_ETC_NVME, and the initiator's NVMEOF_SYSFS/NVMEOF_DEV): target
 * enable/disable, enable-autoconnect, saved connections, completions and the schema. The units
 * written are checked by systemd's own `systemd-analyze verify`.
 */
import assert from "node:assert/strict";
import { nvmeof, ROOT, tempDir } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HI = "5a1e0000-0000-4000-8000-000000000001";
const NQN = "nqn.2024-01.io.example:disk1";
const LAUNCHER = `${ROOT}/scripts/nvmeof`;

/** A host tree in `root`: etc/nvmeof, systemd dir, /etc/nvme with identity and nvme-cli files. */
async function host(root: string): Promise<Record<string, string>> {
  for (const d of ["etc/nvmeof", "systemd", "etc/nvme", "sys/class/nvme", "dev"]) {
    await Deno.mkdir(`${root}/${d}`, { recursive: true });
  }
  await Deno.writeTextFile(`${root}/etc/nvme/hostnqn`, HQ + "\n");
  await Deno.writeTextFile(`${root}/etc/nvme/hostid`, HI + "\n");
  return {
    NVMEOF_ETC: `${root}/etc/nvmeof`,
    NVMEOF_SYSTEMD_DIR: `${root}/systemd`,
    NVMEOF_ETC_NVME: `${root}/etc/nvme`,
    NVMEOF_SYSFS: `${root}/sys`,
    NVMEOF_DEV: `${root}/dev`,
  };
}

async function spec(root: string, traddr = "10.77.0.1"): Promise<string> {
  const dev = `${root}/disk.img`;
  await Deno.writeFile(dev, new Uint8Array(1 << 20));
  const file = `${root}/etc/nvmeof/target.yaml`;
  await Deno.writeTextFile(
    file,
    `hosts: [${HQ}]
subsystems:
  - nqn: ${NQN}
    hosts: [${HQ}]
    namespaces:
      - nsid: 1
        device: ${dev}
ports:
  - id: 1
    traddr: ${traddr}
    subsystems: [${NQN}]
`,
  );
  return file;
}

function listDir(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of Deno.readDirSync(`${dir}/${rel}`)) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      out.push(p);
      if (e.isDirectory) walk(p);
    }
  };
  walk("");
  return out.sort();
}

Deno.test("target enable --dry-run prints the unit with the launcher and the spec, writes nothing", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  const file = await spec(d.path);
  const r = await nvmeof(["target", "enable", "--dry-run"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^# would write .*\/systemd\/nvmeof-target\.service/);
  assert.ok(r.stdout.includes(`ExecStart=${LAUNCHER} target up -f ${file}\n`), r.stdout);
  assert.ok(r.stdout.includes(`ExecStop=${LAUNCHER} target down -f ${file}\n`));
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), []);
  const j = await nvmeof(["target", "enable", "--dry-run", "-o", "json"], { env });
  const data = JSON.parse(j.stdout);
  assert.equal(data.program, LAUNCHER);
  assert.equal(data.spec_file, file);
  assert.equal(data.dry_run, true);
});

Deno.test("target enable installs and links the unit; disable removes both", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  const file = await spec(d.path);
  const r = await nvmeof(["target", "enable", "-f", file], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /installed .*nvmeof-target\.service/);
  assert.match(r.stdout, /systemctl not run: .*NVMEOF_SYSTEMD_DIR/);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), [
    "multi-user.target.wants",
    "multi-user.target.wants/nvmeof-target.service",
    "nvmeof-target.service",
  ]);
  const unit = await Deno.readTextFile(`${env.NVMEOF_SYSTEMD_DIR}/nvmeof-target.service`);
  assert.ok(unit.includes(`ExecStart=${LAUNCHER} target up -f ${file}\n`));
  const off = await nvmeof(["target", "disable"], { env });
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /removed/);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), ["multi-user.target.wants"]);
  const again = await nvmeof(["target", "disable"], { env });
  assert.equal(again.code, 0);
  assert.match(again.stdout, /not installed; nothing to do/);
});

Deno.test("target enable refuses an invalid or missing spec and installs nothing", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  const file = await spec(d.path, "10.77.0.300");
  const r = await nvmeof(["target", "enable"], { env });
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /ports\[0\]\.traddr: '10\.77\.0\.300' is neither an IPv4 nor an IPv6 address/,
  );
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), []);
  await Deno.remove(file);
  const missing = await nvmeof(["target", "enable"], { env });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /target\.yaml/);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), []);
});

Deno.test("enable-autoconnect needs saved connections (or --force) and checks them first", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  const none = await nvmeof(["enable-autoconnect"], { env });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no saved connections/);
  assert.match(none.stderr, /--force/);
  await Deno.writeTextFile(`${env.NVMEOF_ETC}/connections.yaml`, "connections:\n  - traddr: x\n");
  const broken = await nvmeof(["enable-autoconnect", "--force"], { env });
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /connections\[0\]/);
  await Deno.remove(`${env.NVMEOF_ETC}/connections.yaml`);
  const forced = await nvmeof(["enable-autoconnect", "--force", "--retry-for", "30"], { env });
  assert.equal(forced.code, 0, forced.stderr);
  const unit = await Deno.readTextFile(`${env.NVMEOF_SYSTEMD_DIR}/nvmeof-autoconnect.service`);
  assert.ok(unit.includes(`ExecStart=${LAUNCHER} connect --saved --retry-for 30\n`));
  assert.ok(unit.includes(`Environment=NVMEOF_ETC=${env.NVMEOF_ETC}\n`));
  const off = await nvmeof(["disable-autoconnect"], { env });
  assert.equal(off.code, 0);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), ["multi-user.target.wants"]);
});

Deno.test("exporter enable installs the unit with --listen, after the network, restarted on failure; disable removes it", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  const bad = await nvmeof(["exporter", "enable", "--listen", "127.0.0.1"], { env });
  assert.equal(bad.code, 2);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), [], "a wrong --listen installs nothing");
  const r = await nvmeof(["exporter", "enable", "--listen", "0.0.0.0:9723"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /installed .*nvmeof-exporter\.service/);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), [
    "multi-user.target.wants",
    "multi-user.target.wants/nvmeof-exporter.service",
    "nvmeof-exporter.service",
  ]);
  const unit = await Deno.readTextFile(`${env.NVMEOF_SYSTEMD_DIR}/nvmeof-exporter.service`);
  assert.ok(unit.includes(`ExecStart=${LAUNCHER} exporter --listen 0.0.0.0:9723\n`), unit);
  assert.match(unit, /^After=network-online\.target$/m);
  assert.match(unit, /^Restart=on-failure$/m);
  const plain = await nvmeof(["exporter", "enable", "--dry-run", "-o", "json"], { env });
  const data = JSON.parse(plain.stdout);
  assert.equal(data.listen, "127.0.0.1:9723");
  assert.match(data.unit_text, new RegExp(`^ExecStart=${LAUNCHER} exporter$`, "m"));
  const off = await nvmeof(["exporter", "disable"], { env });
  assert.equal(off.code, 0, off.stderr);
  assert.deepEqual(listDir(env.NVMEOF_SYSTEMD_DIR), ["multi-user.target.wants"]);
});

Deno.test("the generated units pass systemd-analyze verify without a warning", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  await spec(d.path);
  for (
    const args of [
      ["target", "enable"],
      ["enable-autoconnect", "--force"],
      ["exporter", "enable", "--listen", "0.0.0.0:9723"],
    ]
  ) {
    const r = await nvmeof(args, { env });
    assert.equal(r.code, 0, r.stderr);
  }
  let out;
  try {
    out = await new Deno.Command("systemd-analyze", {
      args: [
        "verify",
        "--man=no",
        `${env.NVMEOF_SYSTEMD_DIR}/nvmeof-target.service`,
        `${env.NVMEOF_SYSTEMD_DIR}/nvmeof-autoconnect.service`,
        `${env.NVMEOF_SYSTEMD_DIR}/nvmeof-exporter.service`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      assert.fail(
        "systemd-analyze is not installed, so the units cannot be verified. " +
          "Install Debian's systemd package: apt-get install -y --no-install-recommends systemd",
      );
    }
    throw err;
  }
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.equal(text.trim(), "", "systemd-analyze printed warnings");
});

Deno.test("connections import --from-nvme-cli, then list and remove by number, NQN and all", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  for (const f of ["discovery.conf", "config.json"]) {
    await Deno.copyFile(`${ROOT}/tests/fixtures/nvme-cli/${f}`, `${env.NVMEOF_ETC_NVME}/${f}`);
  }
  const dry = await nvmeof(["connections", "import", "--from-nvme-cli", "--dry-run"], { env });
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /7 new, 0 updated, 0 already saved/);
  assert.deepEqual(listDir(env.NVMEOF_ETC), [], "a dry run writes nothing");
  const imp = await nvmeof(["connections", "import", "--from-nvme-cli"], { env });
  assert.equal(imp.code, 0, imp.stderr);
  assert.match(imp.stderr, /note: .*transport 'fc' skipped/);
  assert.ok(!(imp.stdout + imp.stderr).includes("DHHC-1"), "secrets are never printed");
  const keys = listDir(`${env.NVMEOF_ETC}/keys`);
  assert.equal(keys.length, 2);
  for (const k of keys) {
    assert.equal((Deno.statSync(`${env.NVMEOF_ETC}/keys/${k}`).mode ?? 0) & 0o777, 0o600);
  }
  const again = await nvmeof(["connections", "import", "--from-nvme-cli"], { env });
  assert.match(again.stdout, /0 new, 0 updated, 7 already saved/);

  const list = await nvmeof(["connections"], { env });
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.trim().split("\n");
  assert.equal(rows.length, 7);
  assert.match(rows[0], /^1 {2}discovery \(connect-all\) at rdma 10\.77\.0\.1:4420$/);
  assert.match(
    rows[3],
    /^4 {2}'nqn\.2026-10\.pk\.nextgen:storage-pool-1' at rdma 10\.77\.0\.1:4420/,
  );

  const rm = await nvmeof(["connections", "remove", "1", "2"], { env });
  assert.equal(rm.code, 0, rm.stderr);
  assert.match(rm.stdout, /5 saved connection\(s\) remain/);
  const byNqn = await nvmeof(
    ["connections", "remove", "-n", "nqn.2026-10.pk.nextgen:storage-pool-1", "-a", "10.77.1.1"],
    { env },
  );
  assert.equal(byNqn.code, 0, byNqn.stderr);
  assert.match(byNqn.stdout, /removed: .*10\.77\.1\.1/);
  const j = JSON.parse((await nvmeof(["connections", "list", "-o", "json"], { env })).stdout);
  assert.equal(j.connections.length, 4);
  assert.ok(!j.connections.some((c: { traddr: string }) => c.traddr === "10.77.1.1"));

  const bad = await nvmeof(["connections", "remove", "9"], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /'9' is not the number of a saved connection \(there are 4\)/);
  const none = await nvmeof(["connections", "remove"], { env });
  assert.equal(none.code, 2);
  const allDry = await nvmeof(["connections", "remove", "--all", "--dry-run"], { env });
  assert.match(allDry.stdout, /0 saved connection\(s\) remain/);
  assert.equal(
    JSON.parse((await nvmeof(["connections", "-o", "json"], { env })).stdout)
      .connections.length,
    4,
    "the dry run removed nothing",
  );
  const all = await nvmeof(["connections", "remove", "--all"], { env });
  assert.equal(all.code, 0);
  assert.match((await nvmeof(["connections"], { env })).stdout, /no saved connections/);
});

Deno.test("connect --persist --dry-run shows what would be saved; --saved --dry-run the option strings", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  const key = `${d.path}/disk1.key`;
  await Deno.writeTextFile(key, "DHHC-1:00:ia3Hm9kQP8XhK4i8QPq0l8uKy5wOxQsJ3Xw1p3VnN2c0Vw==:\n", {
    mode: 0o600,
  });
  const r = await nvmeof([
    "connect",
    "-a",
    "10.0.0.2",
    "-n",
    NQN,
    "--persist",
    "--dry-run",
    "--dhchap-secret-file",
    key,
  ], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /would save: 'nqn\.2024-01\.io\.example:disk1' at rdma 10\.0\.0\.2:4420/);
  assert.deepEqual(listDir(env.NVMEOF_ETC), []);
  await Deno.writeTextFile(
    `${env.NVMEOF_ETC}/connections.yaml`,
    `connections:
  - {transport: rdma, traddr: 10.0.0.2, trsvcid: 4420, nqn: ${NQN}, hostnqn: "${HQ}", hostid: ${HI}, dhchap_secret_file: ${key}}
  - {transport: rdma, traddr: 10.0.0.3, nqn: nqn.2014-08.org.nvmexpress.discovery, hostnqn: "${HQ}", hostid: ${HI}}
`,
  );
  const s = await nvmeof(["connect", "--saved", "--dry-run"], { env });
  assert.equal(s.code, 0, s.stderr);
  assert.equal(
    s.stdout,
    `nqn=${NQN},transport=rdma,traddr=10.0.0.2,trsvcid=4420,hostnqn=${HQ},hostid=${HI},` +
      "dhchap_secret=<secret from file>\n" +
      "connect-all via nqn=nqn.2014-08.org.nvmexpress.discovery,transport=rdma,traddr=10.0.0.3," +
      `trsvcid=4420,hostnqn=${HQ},hostid=${HI}\n`,
  );
  const mixed = await nvmeof(["connect", "--saved", "-a", "10.0.0.2"], { env });
  assert.equal(mixed.code, 2);
  assert.match(mixed.stderr, /--traddr does not apply/);
  const stray = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN, "--retry-for", "5"], { env });
  assert.equal(stray.code, 2);
  assert.match(stray.stderr, /--retry-for only applies to --saved/);
});

Deno.test("connect --saved reports a saved connection that is already up, and exit 1 for one that fails", async () => {
  await using d = await tempDir();
  const env = await host(d.path);
  // A live controller in the temporary sysfs, as the kernel shows one.
  const c = `${d.path}/sys/class/nvme/nvme3`;
  await Deno.mkdir(`${c}/nvme3c3n1`, { recursive: true });
  const files: Record<string, string> = {
    transport: "rdma",
    address: "traddr=10.0.0.2,trsvcid=4420",
    subsysnqn: NQN,
    hostnqn: HQ,
    hostid: HI,
    cntlid: "5",
    state: "live",
    delete_controller: "",
    "nvme3c3n1/nsid": "1",
    "nvme3c3n1/size": "2048",
  };
  for (const [k, v] of Object.entries(files)) await Deno.writeTextFile(`${c}/${k}`, v + "\n");
  await Deno.writeTextFile(`${d.path}/dev/nvme3n1`, "");
  const entry = (addr: string) =>
    `  - {transport: rdma, traddr: ${addr}, trsvcid: 4420, nqn: ${NQN}, hostnqn: "${HQ}", hostid: ${HI}}\n`;
  await Deno.writeTextFile(
    `${env.NVMEOF_ETC}/connections.yaml`,
    "connections:\n" + entry("10.0.0.2"),
  );
  const up = await nvmeof(["connect", "--saved", "-o", "json"], { env });
  assert.equal(up.code, 0, up.stderr);
  const data = JSON.parse(up.stdout);
  assert.equal(data.attempts, 1);
  assert.equal(data.records[0].status, "already connected");
  assert.equal(data.records[0].device, "nvme3");

  // A second entry the fake tree cannot connect (no /dev/nvme-fabrics): one attempt, exit 1.
  await Deno.writeTextFile(
    `${env.NVMEOF_ETC}/connections.yaml`,
    "connections:\n" + entry("10.0.0.2") + entry("10.0.0.9"),
  );
  const half = await nvmeof(["connect", "--saved", "--retry-for", "0"], { env });
  assert.equal(half.code, 1, half.stdout);
  assert.match(half.stdout, /already connected: nvme3/);
  assert.match(half.stdout, /failed: '.*' at rdma 10\.0\.0\.9:4420: /);
  assert.match(half.stderr, /attempt 1: '.*' at rdma 10\.0\.0\.9:4420/);
});

Deno.test("completions print a script per shell; an unknown shell is a usage error", async () => {
  const b = await nvmeof(["completions", "bash"]);
  assert.equal(b.code, 0, b.stderr);
  assert.match(b.stdout, /^complete -F _nvmeof nvmeof$/m);
  const z = await nvmeof(["completions", "zsh"]);
  assert.match(z.stdout, /^#compdef nvmeof/);
  const f = await nvmeof(["completions", "fish"]);
  assert.match(f.stdout, /^complete -c nvmeof -f$/m);
  const bad = await nvmeof(["completions", "tcsh"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /No completion for shell 'tcsh'/);
});

Deno.test("target schema prints the JSON Schema of the spec", async () => {
  const r = await nvmeof(["target", "schema"]);
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout);
  assert.equal(s.$schema, "https://json-schema.org/draft/2020-12/schema");
  assert.deepEqual(Object.keys(s.$defs), [
    "host",
    "namespace",
    "subsystem",
    "port",
    "ana_group",
    "referral",
  ]);
  assert.equal(s.$defs.port.properties.trsvcid.default, 4420);
});
