/**
 * `nvmeof target …` as a user runs it, against a stand-in configfs in a temporary directory
 * (tests/standin/nvmeof: mkdir creates the kernel's attribute files; see
 * tests/standin/configfs.ts), with failures injected through NVMEOF_CONFIGFS_FAIL.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { nvmeof, tempDir } from "../helpers.ts";
import { snapshot } from "../unit/target_fixtures.ts";

const HOST1 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
const SUB1 = "nqn.2026-10.pk.nextgen:storage-pool-1";
const SUB2 = "nqn.2026-10.pk.nextgen:storage-pool-2";

interface Lab extends AsyncDisposable {
  dir: string;
  configfs: string;
  dev: string[];
  spec: string;
  run(args: string[], env?: Record<string, string>): ReturnType<typeof nvmeof>;
  tree(): Record<string, string>;
}

async function lab(): Promise<Lab> {
  const t = await tempDir();
  const configfs = `${t.path}/config`;
  // What `modprobe nvmet` makes: the three groups and the discovery NQN.
  for (const d of ["hosts", "subsystems", "ports"]) {
    Deno.mkdirSync(`${configfs}/nvmet/${d}`, { recursive: true });
  }
  Deno.writeTextFileSync(
    `${configfs}/nvmet/discovery_nqn`,
    "nqn.2014-08.org.nvmexpress.discovery\n",
  );
  const dev = [0, 1, 2, 3].map((i) => {
    const p = `${t.path}/disk${i}.img`;
    Deno.writeFileSync(p, new Uint8Array(4096));
    return p;
  });
  const spec = `${t.path}/target.yaml`;
  Deno.writeTextFileSync(
    spec,
    stringify({
      hosts: [{ nqn: HOST1 }],
      subsystems: [
        {
          nqn: SUB1,
          hosts: [HOST1],
          namespaces: [{ nsid: 1, device: dev[0] }, { nsid: 2, device: dev[1] }],
        },
        { nqn: SUB2, hosts: [HOST1], namespaces: [{ nsid: 1, device: dev[2] }] },
      ],
      ports: [{
        id: 1,
        trtype: "rdma",
        traddr: "10.77.0.1",
        trsvcid: 4420,
        subsystems: [SUB1, SUB2],
      }],
    }),
  );
  return {
    dir: t.path,
    configfs,
    dev,
    spec,
    run: (args, env = {}) =>
      nvmeof([...args, "--configfs", configfs], {
        standin: true,
        env: { NVMEOF_LOCK_DIR: t.path, ...env },
      }),
    tree: () => snapshot(`${configfs}/nvmet`),
    [Symbol.asyncDispose]: () => t[Symbol.asyncDispose](),
  };
}

Deno.test("target up applies a spec, and a second up changes nothing and says so", async () => {
  await using l = await lab();
  const r1 = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(r1.code, 0, r1.stderr);
  assert.match(r1.stdout, /^Apply the spec with \d+ step\(s\):/);
  assert.equal(Deno.readTextFileSync(`${l.configfs}/nvmet/ports/1/addr_traddr`), "10.77.0.1\n");
  assert.ok(Deno.lstatSync(`${l.configfs}/nvmet/ports/1/subsystems/${SUB2}`).isSymlink);
  const before = l.tree();
  const r2 = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(r2.code, 0, r2.stderr);
  assert.match(
    r2.stdout,
    /^No changes: configfs already matches the spec \(2 subsystem\(s\), 3 namespace\(s\), 1 port\(s\)\)/,
  );
  assert.deepEqual(l.tree(), before);
});

Deno.test("target up --dry-run -o json lists the steps in order and writes nothing", async () => {
  await using l = await lab();
  const before = l.tree();
  const r = await l.run(["target", "up", "-f", l.spec, "--dry-run", "-o", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  assert.equal(d.dry_run, true);
  assert.equal(d.changed, false);
  assert.deepEqual(d.steps[0], { op: "mkdir", path: `hosts/${HOST1}` });
  assert.deepEqual(d.steps.at(-1), {
    op: "link",
    path: `ports/1/subsystems/${SUB2}`,
    target: `subsystems/${SUB2}`,
  });
  assert.deepEqual(l.tree(), before);
});

Deno.test("target up rolls back when the kernel refuses the port's address (EADDRNOTAVAIL)", async () => {
  await using l = await lab();
  const before = l.tree();
  const r = await l.run(["target", "up", "-f", l.spec], {
    NVMEOF_CONFIGFS_FAIL: `link ports/1/subsystems/${SUB1}=EADDRNOTAVAIL`,
  });
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /error: The kernel refused 'link ports\/1\/subsystems\/.*': EADDRNOTAVAIL \(99\)\. The \d+ earlier step\(s\) of this run were rolled back/,
  );
  assert.match(r.stderr, /not an address configured on this host/);
  assert.equal(r.stdout, "");
  assert.deepEqual(l.tree(), before);
});

Deno.test("target up rolls back a failed change of an existing tree to exactly the old tree", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const before = l.tree();
  const spec = Deno.readTextFileSync(l.spec).replace(l.dev[1], l.dev[3]).replace(
    "10.77.0.1",
    "10.77.0.2",
  );
  Deno.writeTextFileSync(l.spec, spec);
  const r = await l.run(["target", "up", "-f", l.spec], { NVMEOF_CONFIGFS_FAIL: "#6=EINVAL" });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /EINVAL \(22\)/);
  assert.deepEqual(l.tree(), before);
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  assert.equal(Deno.readTextFileSync(`${l.configfs}/nvmet/ports/1/addr_traddr`), "10.77.0.2\n");
});

Deno.test("an invalid spec is refused with spec paths and fixes, exit 1, nothing written", async () => {
  await using l = await lab();
  Deno.writeTextFileSync(
    l.spec,
    Deno.readTextFileSync(l.spec).replace(l.dev[1], "/dev/nvmeof-no-such-disk").replace(
      "4420",
      "99999",
    ),
  );
  const before = l.tree();
  const r = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Invalid target spec '.*': 2 problems; nothing was changed\./);
  assert.match(
    r.stderr,
    /subsystems\[0\]\.namespaces\[1\]\.device: device '\/dev\/nvmeof-no-such-disk' does not exist\. Fix: /,
  );
  assert.match(r.stderr, /ports\[0\]\.trsvcid: must be an integer from 1 to 65535/);
  assert.deepEqual(l.tree(), before);
});

Deno.test("target check validates only: exit 0 with counts, exit 1 with problems", async () => {
  await using l = await lab();
  const ok = await l.run(["target", "check", "-f", l.spec, "-o", "json"]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), {
    file: l.spec,
    valid: true,
    hosts: 1,
    subsystems: 2,
    namespaces: 3,
    ports: 1,
    warnings: [],
  });
  assert.equal(Object.keys(l.tree()).length, 4, "check touches no configfs");
  Deno.writeTextFileSync(l.spec, "subsystems:\n  - nqn: [\n");
  const bad = await l.run(["target", "check", "-f", l.spec]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /line \d+, column \d+: /);
});

Deno.test("without -f, target check and up read target.yaml in NVMEOF_ETC", async () => {
  await using l = await lab();
  const etc = `${l.dir}/etc`;
  Deno.mkdirSync(etc);
  Deno.copyFileSync(l.spec, `${etc}/target.yaml`);
  const check = await l.run(["target", "check", "-o", "json"], { NVMEOF_ETC: etc });
  assert.equal(check.code, 0, check.stderr);
  assert.equal(JSON.parse(check.stdout).file, `${etc}/target.yaml`);
  const up = await l.run(["target", "up", "--dry-run"], { NVMEOF_ETC: etc });
  assert.equal(up.code, 0, up.stderr);
  assert.match(up.stdout, /^Would apply the spec with \d+ step\(s\)/);
  const missing = await l.run(["target", "check"], { NVMEOF_ETC: `${l.dir}/nowhere` });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, new RegExp(`'${l.dir}/nowhere/target.yaml'`));
});

Deno.test("the one-line form sets up a subsystem, is idempotent, and reuses the port of its address", async () => {
  await using l = await lab();
  const args = [
    "target",
    "up",
    "--nqn",
    SUB1,
    "--device",
    l.dev[0],
    "--traddr",
    "10.77.0.1",
    "--allow-host",
    HOST1,
  ];
  const r1 = await l.run(args);
  assert.equal(r1.code, 0, r1.stderr);
  const r2 = await l.run(args);
  assert.match(r2.stdout, /^No changes/);
  const r3 = await l.run([
    "target",
    "up",
    "--nqn",
    SUB2,
    "--device",
    l.dev[1],
    "-a",
    "10.77.0.1",
    "--allow-any-host",
  ]);
  assert.equal(r3.code, 0, r3.stderr);
  assert.match(r3.stderr, /warning: subsystem '.*storage-pool-2' allows any host/);
  const show = JSON.parse((await l.run(["target", "show", "-o", "json"])).stdout);
  assert.equal(show.ports.length, 1);
  assert.deepEqual(show.ports[0].subsystems, [SUB1, SUB2]);
});

Deno.test("the one-line form needs an explicit host choice (usage error, exit 2)", async () => {
  await using l = await lab();
  const r = await l.run([
    "target",
    "up",
    "--nqn",
    SUB1,
    "--device",
    l.dev[0],
    "--traddr",
    "10.77.0.1",
  ]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--allow-host HOSTNQN \(repeatable\) or --allow-any-host/);
  const r2 = await l.run([
    "target",
    "up",
    "--nqn",
    "bad nqn",
    "--device",
    l.dev[0],
    "--traddr",
    "10.77.0.1",
    "--allow-any-host",
  ]);
  assert.equal(r2.code, 1);
  assert.match(r2.stderr, /--nqn: NQN 'bad nqn' contains whitespace/);
});

Deno.test("target show round-trips: up of its output changes nothing", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const shown = await l.run(["target", "show"]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^hosts:\n/);
  const file = `${l.dir}/shown.yaml`;
  Deno.writeTextFileSync(file, shown.stdout);
  const again = await l.run(["target", "up", "-f", file]);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /^No changes/);
});

Deno.test("target show -o yaml is the text form; -o nvmetcli is nvmetcli's JSON; others are usage errors", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const text = await l.run(["target", "show"]);
  const yaml = await l.run(["target", "show", "-o", "yaml"]);
  assert.equal(yaml.code, 0, yaml.stderr);
  assert.equal(yaml.stdout, text.stdout);
  const cli = await l.run(["target", "show", "-o", "nvmetcli"]);
  assert.equal(cli.code, 0, cli.stderr);
  const saved = JSON.parse(cli.stdout);
  assert.ok(
    Array.isArray(saved.subsystems) && Array.isArray(saved.ports) && Array.isArray(saved.hosts),
  );
  const bad = await l.run(["target", "show", "-o", "xml"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Invalid output format 'xml' for 'nvmeof target show'/);
  assert.match(bad.stderr, /-o yaml, -o nvmetcli/);
  const elsewhere = await l.run(["target", "check", "-f", l.spec, "-o", "yaml"]);
  assert.equal(elsewhere.code, 2);
});

Deno.test("target down --all removes everything in order and leaves nvmet empty", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const dry = await l.run(["target", "down", "--all", "--dry-run"]);
  assert.match(dry.stdout, /^Would remove with \d+ step\(s\)/);
  const r = await l.run(["target", "down", "--all"]);
  assert.equal(r.code, 0, r.stderr);
  for (const d of ["hosts", "subsystems", "ports"]) {
    assert.deepEqual(Deno.readDirSync(`${l.configfs}/nvmet/${d}`).toArray(), []);
  }
  const again = await l.run(["target", "down", "--all"]);
  assert.match(again.stdout, /^Nothing to remove/);
});

/** Brings up SUB1 (any host, one namespace) on port 1 at 10.77.0.1:4420 over TRTYPE. */
async function upOnePort(l: Lab, trtype: "tcp" | "rdma"): Promise<void> {
  const spec = `${l.dir}/${trtype}.yaml`;
  const sub = { nqn: SUB1, allow_any_host: true, namespaces: [{ nsid: 1, device: l.dev[0] }] };
  const port = { id: 1, trtype, traddr: "10.77.0.1", trsvcid: 4420, subsystems: [SUB1] };
  Deno.writeTextFileSync(spec, stringify({ subsystems: [sub], ports: [port] }));
  assert.equal((await l.run(["target", "up", "-f", spec])).code, 0);
}

/** A stand-in /proc/net/tcp: nvmet-tcp on 10.77.0.1:4420 (0x1144) listening, and 10.77.0.2 connected. */
const PROC_NET_TCP =
  `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 01004D0A:1144 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12446 1 0 100 0 0 10 0
   1: 01004D0A:1144 02004D0A:E354 01 00000000:00000000 00:00000000 00000000     0        0 12450 1 0 21 4 29 10 -1
`;

Deno.test("target down refuses while a remote host is connected to a tcp port, naming host and port; --force removes", async () => {
  await using l = await lab();
  await upOnePort(l, "tcp");
  const proc = `${l.dir}/proc`;
  Deno.mkdirSync(`${proc}/net`, { recursive: true });
  Deno.writeTextFileSync(`${proc}/net/tcp`, PROC_NET_TCP);
  const env = { NVMEOF_PROC: proc, NVMEOF_SYSFS: `${l.dir}/sys` };
  const before = l.tree();
  const r = await l.run(["target", "down", "--all"], env);
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `to port 1 \\(tcp 10\\.77\\.0\\.1:4420, serving '${SUB1}'\\): 10\\.77\\.0\\.2; nothing was changed`,
    ),
  );
  assert.match(r.stderr, /--force/);
  assert.deepEqual(l.tree(), before);
  const forced = await l.run(["target", "down", "--all", "--force"], env);
  assert.equal(forced.code, 0, forced.stderr);
  assert.deepEqual(Deno.readDirSync(`${l.configfs}/nvmet/ports`).toArray(), []);
});

Deno.test("target up --prune refuses to drop a tcp port a remote host is connected to", async () => {
  await using l = await lab();
  const sub = { nqn: SUB1, allow_any_host: true, namespaces: [{ nsid: 1, device: l.dev[0] }] };
  const spec = `${l.dir}/tcp.yaml`;
  Deno.writeTextFileSync(
    spec,
    stringify({
      subsystems: [sub],
      ports: [{ id: 1, trtype: "tcp", traddr: "10.77.0.1", trsvcid: 4420, subsystems: [SUB1] }],
    }),
  );
  assert.equal((await l.run(["target", "up", "-f", spec])).code, 0);
  const proc = `${l.dir}/proc`;
  Deno.mkdirSync(`${proc}/net`, { recursive: true });
  Deno.writeTextFileSync(`${proc}/net/tcp`, PROC_NET_TCP);
  const noPort = `${l.dir}/noport.yaml`;
  Deno.writeTextFileSync(noPort, stringify({ subsystems: [sub] }));
  const before = l.tree();
  const r = await l.run(["target", "up", "-f", noPort, "--prune"], {
    NVMEOF_PROC: proc,
    NVMEOF_SYSFS: `${l.dir}/sys`,
  });
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /what --prune would remove: to port 1 \(tcp 10\.77\.0\.1:4420, serving '[^']+'\): 10\.77\.0\.2;/,
  );
  assert.deepEqual(l.tree(), before);
});

Deno.test("target down refuses while a remote host is connected to an rdma port, read from the CM ids", async () => {
  await using l = await lab();
  await upOnePort(l, "rdma");
  // nvmet-rdma's queue of a host at 10.77.0.2, as the RDMA netlink lists it.
  const cmIds = `${l.dir}/cm_ids.json`;
  const queue = {
    device: "rxe0",
    port: 1,
    state: "CONNECT",
    ps: 0x106,
    kernName: "nvmet_rdma",
    src: { address: "10.77.0.1", port: 4420 },
    dst: { address: "10.77.0.2", port: 51234 },
  };
  Deno.writeTextFileSync(cmIds, JSON.stringify([queue]));
  const before = l.tree();
  const r = await l.run(["target", "down", "--all"], { NVMEOF_STANDIN_CM_IDS: cmIds });
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(
      `to port 1 \\(rdma 10\\.77\\.0\\.1:4420, serving '${SUB1}'\\): 10\\.77\\.0\\.2; nothing was changed`,
    ),
  );
  assert.deepEqual(l.tree(), before);
  // A listener only (no CONNECT id): nothing is in use, the port goes.
  Deno.writeTextFileSync(cmIds, JSON.stringify([{ ...queue, state: "LISTEN", dst: undefined }]));
  const free = await l.run(["target", "down", "--all"], { NVMEOF_STANDIN_CM_IDS: cmIds });
  assert.equal(free.code, 0, free.stderr);
  assert.deepEqual(Deno.readDirSync(`${l.configfs}/nvmet/ports`).toArray(), []);
});

Deno.test("target down goes ahead once the remote host's connection is gone", async () => {
  await using l = await lab();
  await upOnePort(l, "tcp");
  const proc = `${l.dir}/proc`;
  Deno.mkdirSync(`${proc}/net`, { recursive: true });
  // Only the listener is left (state 0A).
  Deno.writeTextFileSync(`${proc}/net/tcp`, PROC_NET_TCP.split("\n").slice(0, 2).join("\n") + "\n");
  const r = await l.run(["target", "down", "--all"], {
    NVMEOF_PROC: proc,
    NVMEOF_SYSFS: `${l.dir}/sys`,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(Deno.readDirSync(`${l.configfs}/nvmet/subsystems`).toArray(), []);
});

Deno.test("DH-HMAC-CHAP keys go to configfs from a 0600 file and are never printed", async () => {
  await using l = await lab();
  const key = `${l.dir}/host1.key`;
  const secret = "DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj:";
  Deno.writeTextFileSync(key, secret + "\n", { mode: 0o600 });
  Deno.chmodSync(key, 0o600);
  const spec = `${l.dir}/auth.yaml`;
  Deno.writeTextFileSync(spec, stringify({ hosts: [{ nqn: HOST1, dhchap_key_file: key }] }));
  for (
    const args of [["target", "up", "-f", spec, "--dry-run", "-o", "json"], [
      "target",
      "up",
      "-f",
      spec,
    ]]
  ) {
    const r = await l.run(args);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes("c2VjcmV0") && !r.stderr.includes("c2VjcmV0"), "secret leaked");
  }
  assert.equal(
    Deno.readTextFileSync(`${l.configfs}/nvmet/hosts/${HOST1}/dhchap_key`),
    secret + "\n",
  );
  const show = await l.run(["target", "show", "-o", "json"]);
  assert.ok(!show.stdout.includes("c2VjcmV0"));
  Deno.chmodSync(key, 0o640);
  const bad = await l.run(["target", "up", "-f", spec]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /readable or writable by group or others \(mode 640\)/);
});

Deno.test("target import converts nvmetcli JSON into a spec that validates", async () => {
  await using l = await lab();
  const file = `${l.dir}/config.json`;
  Deno.writeTextFileSync(
    file,
    JSON.stringify({
      hosts: [{ nqn: HOST1 }],
      ports: [{
        portid: 2,
        addr: {
          trtype: "rdma",
          adrfam: "ipv4",
          traddr: "10.77.0.1",
          trsvcid: "4420",
          treq: "not specified",
        },
        param: { inline_data_size: "-1" },
        referrals: [],
        subsystems: [SUB1],
      }],
      subsystems: [{
        nqn: SUB1,
        attr: { allow_any_host: "0", serial: "abc123", version: "1.3" },
        allowed_hosts: [HOST1],
        namespaces: [{
          nsid: 1,
          enable: 1,
          device: {
            path: l.dev[0],
            uuid: "0c1e5a8e-7c2b-4a53-9a5e-1f1f3f1f2a01",
            nguid: "00000000-0000-0000-0000-000000000000",
          },
        }],
      }],
    }),
  );
  const r = await l.run(["target", "import", "--from-nvmetcli", file, "-o", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const spec = JSON.parse(r.stdout);
  assert.deepEqual(spec.ports, [{
    id: 2,
    trtype: "rdma",
    adrfam: "ipv4",
    traddr: "10.77.0.1",
    trsvcid: 4420,
    subsystems: [SUB1],
  }]);
  assert.deepEqual(spec.subsystems[0].namespaces, [{
    nsid: 1,
    device: l.dev[0],
    uuid: "0c1e5a8e-7c2b-4a53-9a5e-1f1f3f1f2a01",
    enabled: true,
  }]);
  const out = `${l.dir}/imported.json`;
  Deno.writeTextFileSync(out, r.stdout);
  assert.equal((await l.run(["target", "up", "-f", out])).code, 0);
  const back = JSON.parse((await l.run(["target", "show", "--nvmetcli", "-o", "json"])).stdout);
  assert.equal(back.ports[0].portid, 2);
  assert.equal(back.subsystems[0].attr.serial, "abc123");
  assert.equal(back.subsystems[0].namespaces[0].device.path, l.dev[0]);
});

Deno.test("target help lists the subcommands and up's help has worked examples", async () => {
  const r = await nvmeof(["target", "up", "--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /Examples:\n {2}nvmeof target up -f/);
  assert.match(r.stdout, /--allow-any-host/);
  const t = await nvmeof(["target", "--help"]);
  for (const s of ["up", "down", "show", "check", "import"]) {
    assert.match(t.stdout, new RegExp(`^ {2}${s} `, "m"));
  }
});

Deno.test("two target up at once do not interleave: the second waits for the lock", async () => {
  await using l = await lab();
  const [a, b] = await Promise.all([
    l.run(["target", "up", "-f", l.spec]),
    l.run(["target", "up", "-f", l.spec]),
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const outs = [a.stdout, b.stdout].sort();
  assert.match(outs[0], /^Apply the spec/);
  assert.match(outs[1], /^No changes/);
});

Deno.test("without nvmet and no configfs mount point, up is an environment error (exit 3) after validation", async () => {
  await using l = await lab();
  const env = { NVMEOF_LOCK_DIR: l.dir };
  const missing = `${l.dir}/no-configfs`;
  const r = await nvmeof(["target", "up", "-f", l.spec, "--configfs", missing], { env });
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr,
    /error: (Configfs mount point '.*no-configfs' does not exist|nvmet is not loaded)/,
  );
  const dry = await nvmeof(["target", "up", "-f", l.spec, "--configfs", missing, "--dry-run"], {
    env,
  });
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(
    dry.stdout,
    /^Would apply the spec with \d+ step\(s\) \(dry run, nothing changed\):\n {2}mkdir {2}hosts\//,
  );
  const show = await nvmeof(["target", "show", "-o", "json", "--configfs", missing], { env });
  assert.equal(show.code, 0, show.stderr);
  assert.deepEqual(JSON.parse(show.stdout), { hosts: [], subsystems: [], ports: [] });
  assert.match(show.stderr, /nvmet is not loaded/);
});

Deno.test("target up writes ieee_oui, version and serial as the file spells them, unquoted", async () => {
  await using l = await lab();
  Deno.writeTextFileSync(
    l.spec,
    `subsystems:
  - nqn: ${SUB1}
    allow_any_host: true
    serial: 0123
    version: 1.10
    ieee_oui: 0xABCDEF
    namespaces:
      - nsid: 1
        device: ${l.dev[0]}
`,
  );
  const r = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(r.code, 0, r.stderr);
  const t = l.tree();
  const attr = (name: string) => t[`subsystems/${SUB1}/attr_${name}`]?.trim();
  assert.equal(attr("serial"), "0123");
  assert.equal(attr("version"), "1.10");
  assert.equal(attr("ieee_oui"), "0xabcdef");
  const again = await l.run(["target", "up", "-f", l.spec, "-o", "json"]);
  assert.deepEqual(JSON.parse(again.stdout).steps, []);
});

Deno.test("NQNs nvmet accepts (nvmetcli's 'testnqn') import, check with a warning, and apply", async () => {
  await using l = await lab();
  const file = `${l.dir}/loop.json`;
  // The shape of nvmetcli's loop example: a non-nqn.-form NQN, empty address fields.
  Deno.writeTextFileSync(
    file,
    JSON.stringify({
      hosts: [],
      ports: [{
        addr: { adrfam: "", traddr: "", treq: "not specified", trsvcid: "", trtype: "loop" },
        portid: 1,
        referrals: [],
        subsystems: ["testnqn"],
      }],
      subsystems: [{
        allowed_hosts: [],
        attr: { allow_any_host: "1" },
        namespaces: [{
          device: { nguid: "ef90689c-6c46-d44c-89c1-4067801309a8", path: l.dev[0] },
          enable: 1,
          nsid: 1,
        }],
        nqn: "testnqn",
      }],
    }),
  );
  const imported = await l.run(["target", "import", "--from-nvmetcli", file]);
  assert.equal(imported.code, 0, imported.stderr);
  Deno.writeTextFileSync(l.spec, imported.stdout);
  const check = await l.run(["target", "check", "-f", l.spec, "-o", "json"]);
  assert.equal(check.code, 0, check.stderr);
  assert.match(check.stderr, /warning: NQN 'testnqn' is not of the form nqn\./);
  const up = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(up.code, 0, up.stderr);
  assert.match(l.tree()["ports/1/subsystems/testnqn"], /^-> .*\/subsystems\/testnqn$/);
  const disc = await l.run([
    "target",
    "up",
    "--nqn",
    "nqn.2014-08.org.nvmexpress.discovery",
    "--device",
    l.dev[1],
    "--trtype",
    "loop",
    "--allow-any-host",
  ]);
  assert.equal(disc.code, 1);
  assert.match(disc.stderr, /is the discovery NQN/);
});

Deno.test("target show keeps every subsystem attribute: its output rebuilds the same target", async () => {
  await using l = await lab();
  Deno.writeTextFileSync(
    l.spec,
    stringify({
      hosts: [{ nqn: HOST1 }],
      subsystems: [{
        nqn: SUB1,
        hosts: [HOST1],
        serial: "0123",
        model: "Lab Array",
        version: "1.10",
        firmware: "fw-7",
        ieee_oui: "0xabcdef",
        cntlid_min: 10,
        cntlid_max: 20,
        namespaces: [{ nsid: 1, device: l.dev[0] }],
      }],
      ports: [{ id: 1, trtype: "rdma", traddr: "10.77.0.1", subsystems: [SUB1] }],
    }),
  );
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  const before = l.tree();
  const shown = await l.run(["target", "show", "-o", "json"]);
  assert.equal(shown.code, 0, shown.stderr);
  const sub = JSON.parse(shown.stdout).subsystems[0];
  assert.deepEqual(
    [
      sub.serial,
      sub.model,
      sub.version,
      sub.firmware,
      sub.ieee_oui,
      sub.cntlid_min,
      sub.cntlid_max,
    ],
    ["0123", "Lab Array", "1.10", "fw-7", "0xabcdef", 10, 20],
  );
  const file = `${l.dir}/shown.yaml`;
  Deno.writeTextFileSync(file, (await l.run(["target", "show"])).stdout);
  const same = await l.run(["target", "up", "-f", file, "-o", "json"]);
  assert.deepEqual(JSON.parse(same.stdout).steps, [], "show output re-applied plans nothing");
  assert.equal((await l.run(["target", "down", "--all"])).code, 0);
  const rebuilt = await l.run(["target", "up", "-f", file]);
  assert.equal(rebuilt.code, 0, rebuilt.stderr);
  const after = l.tree();
  for (
    const k of ["serial", "model", "version", "firmware", "ieee_oui", "cntlid_min", "cntlid_max"]
  ) {
    const f = `subsystems/${SUB1}/attr_${k}`;
    assert.equal(after[f], before[f], f);
  }
});

Deno.test("target up --prune of a port as another trtype leaves none of its old address", async () => {
  await using l = await lab();
  assert.equal((await l.run(["target", "up", "-f", l.spec])).code, 0);
  assert.equal(l.tree()["ports/1/addr_traddr"].trim(), "10.77.0.1");
  const loop = {
    hosts: [{ nqn: HOST1 }],
    subsystems: [{ nqn: SUB1, hosts: [HOST1], namespaces: [{ nsid: 1, device: l.dev[0] }] }],
    ports: [{ id: 1, trtype: "loop", subsystems: [SUB1] }],
  };
  Deno.writeTextFileSync(l.spec, stringify(loop));
  const r = await l.run(["target", "up", "--prune", "-f", l.spec]);
  assert.equal(r.code, 0, r.stderr);
  const t = l.tree();
  assert.equal(t["ports/1/addr_trtype"].trim(), "loop");
  for (const f of ["addr_traddr", "addr_trsvcid", "addr_adrfam"]) {
    assert.equal(t[`ports/1/${f}`].trim(), "", f);
  }
  assert.deepEqual(
    Object.keys(t).filter((k) => k.startsWith("ports/1/subsystems/")),
    [`ports/1/subsystems/${SUB1}`],
  );
  const again = await l.run(["target", "up", "--prune", "-f", l.spec, "-o", "json"]);
  assert.deepEqual(JSON.parse(again.stdout).steps, []);
});

Deno.test("a long plan is summarised in text unless -v; JSON carries every step", async () => {
  await using l = await lab();
  const hosts = Array.from({ length: 32 }, (_, i) => `nqn.2026-10.pk.nextgen:compute-${i}`);
  const subs = Array.from({ length: 8 }, (_, i) => `nqn.2026-10.pk.nextgen:scale-${i}`);
  const dev = subs.map((_, i) => {
    const p = `${l.dir}/scale${i}.img`;
    Deno.writeFileSync(p, new Uint8Array(4096));
    return p;
  });
  Deno.writeTextFileSync(
    l.spec,
    stringify({
      subsystems: subs.map((nqn, i) => ({
        nqn,
        hosts: hosts.slice(i * 4, i * 4 + 4),
        namespaces: [{ nsid: 1, device: dev[i] }],
      })),
      ports: [{ id: 1, trtype: "tcp", traddr: "10.77.0.1", trsvcid: 4420, subsystems: subs }],
    }),
  );
  const json = await l.run(["target", "up", "-f", l.spec, "--dry-run", "-o", "json"]);
  assert.equal(json.code, 0, json.stderr);
  const n = JSON.parse(json.stdout).steps.length;
  assert.ok(n > 100, `${n} steps`);

  const dry = await l.run(["target", "up", "-f", l.spec, "--dry-run"]);
  assert.equal(dry.code, 0, dry.stderr);
  const lines = dry.stdout.trimEnd().split("\n");
  assert.equal(lines[0], `Would apply the spec with ${n} step(s) (dry run, nothing changed):`);
  assert.ok(lines.length < 20, dry.stdout);
  assert.ok(
    lines.includes("  create: 32 host(s), 8 subsystem(s), 8 namespace(s), 1 port(s)"),
    dry.stdout,
  );
  assert.ok(lines.includes("  link: 32 allowed host(s), 8 port link(s)"), dry.stdout);
  assert.match(dry.stdout, /\n {2}write: 8 attr_serial, 8 device_path, 8 device_uuid, 8 enable, /);
  assert.match(dry.stdout, /\n {4}mkdir {2}hosts\/nqn\.2026-10\.pk\.nextgen:compute-0\n/);
  assert.equal(
    lines.at(-1),
    `  … ${n - 10} more: -v lists every step, -o json gives them as data.`,
  );

  const all = await l.run(["target", "up", "-f", l.spec, "--dry-run", "-v"]);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(all.stdout.trimEnd().split("\n").length, n + 1);

  const up = await l.run(["target", "up", "-f", l.spec]);
  assert.equal(up.code, 0, up.stderr);
  assert.match(up.stdout, new RegExp(`^Apply the spec with ${n} step\\(s\\):\n {2}create: `));
  const down = await l.run(["target", "down", "--all"]);
  assert.equal(down.code, 0, down.stderr);
  assert.match(
    down.stdout,
    /^Remove with \d+ step\(s\):\n {2}unlink: 8 port link\(s\), 32 allowed host\(s\)\n/,
  );
});
