/**
 * Boot persistence: the unit files' text, their installation into a unit directory, the saved
 * connections file, the nvme-cli import from fixture files, and the bounded backoff of
 * `connect --saved`.
 */
import assert from "node:assert/strict";
import { UsageError } from "../../src/errors.ts";
import {
  connectionsText,
  loadConnections,
  mergeConnections,
  optionsFromSaved,
  saveConnections,
  type SavedConnection,
  savedFromOptions,
} from "../../src/persist/connections.ts";
import { importConfigJson } from "../../src/persist/config_json.ts";
import { importDiscoveryConf } from "../../src/persist/discovery_conf.ts";
import type { PersistPaths } from "../../src/persist/etc_paths.ts";
import { backoffDelay, retrySaved } from "../../src/persist/retry.ts";
import { selfPath } from "../../src/persist/self.ts";
import {
  autoconnectUnitText,
  execWord,
  installUnit,
  removeUnit,
  targetUnitText,
} from "../../src/persist/systemd.ts";
import { TARGET_UNIT } from "../../src/persist/units.ts";
import { ROOT } from "../helpers.ts";

const SELF = { path: "/usr/local/bin/nvmeof", how: "compiled binary" };
const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HI = "5a1e0000-0000-4000-8000-000000000001";
const DISC = "nqn.2014-08.org.nvmexpress.discovery";

function lines(text: string, section: string): string[] {
  const body = text.split(`[${section}]\n`)[1] ?? "";
  return body.split("\n[")[0].split("\n").filter((l) => l && !l.startsWith("#"));
}

Deno.test("the target unit runs target up/down with the spec, after configfs and the network", () => {
  const t = targetUnitText(SELF, "/etc/nvmeof/target.yaml");
  const unit = lines(t, "Unit");
  const service = lines(t, "Service");
  assert.ok(unit.includes("Requires=sys-kernel-config.mount"));
  assert.ok(unit.some((l) => /^After=.*sys-kernel-config\.mount/.test(l)));
  assert.ok(unit.some((l) => /^After=.*network-online\.target/.test(l)));
  assert.ok(unit.includes("Wants=network-online.target"));
  assert.ok(service.includes("Type=oneshot"));
  assert.ok(service.includes("RemainAfterExit=yes"));
  assert.ok(
    service.includes("ExecStart=/usr/local/bin/nvmeof target up -f /etc/nvmeof/target.yaml"),
  );
  assert.ok(
    service.includes("ExecStop=/usr/local/bin/nvmeof target down -f /etc/nvmeof/target.yaml"),
  );
  assert.ok(service.includes("Restart=on-failure"), "a port whose IP is late is retried");
  assert.deepEqual(lines(t, "Install"), ["WantedBy=multi-user.target"]);
  assert.match(t, /compiled binary: \/usr\/local\/bin\/nvmeof/);
});

Deno.test("unit words with spaces, % and $ are quoted the way systemd reads them", () => {
  assert.equal(execWord("/opt/nvmeof/bin/nvmeof"), "/opt/nvmeof/bin/nvmeof");
  assert.equal(execWord("/srv/my specs/t.yaml"), '"/srv/my specs/t.yaml"');
  assert.equal(execWord("/srv/100%/t.yaml"), "/srv/100%%/t.yaml");
  assert.equal(execWord("/srv/$HOME/t.yaml"), "/srv/$$HOME/t.yaml");
  assert.equal(execWord('/a "b"'), '"/a \\"b\\""');
  assert.throws(() => execWord("/a\nb"), /newline/);
  const t = targetUnitText(
    { path: "/opt/my tools/nvmeof", how: "compiled binary" },
    "/srv/t 1.yaml",
  );
  assert.match(t, /^ExecStart="\/opt\/my tools\/nvmeof" target up -f "\/srv\/t 1\.yaml"$/m);
  assert.match(targetUnitText(SELF, "/srv/50%/t.yaml"), /^Description=.* \/srv\/50%%\/t\.yaml /m);
});

Deno.test("the autoconnect unit runs connect --saved with its bound and the file's directory", () => {
  const dflt = autoconnectUnitText(SELF, { etc: "/etc/nvmeof" }, 90);
  const s = lines(dflt, "Service");
  assert.ok(s.includes("ExecStart=/usr/local/bin/nvmeof connect --saved --retry-for 90"));
  assert.ok(s.includes("TimeoutStartSec=180"), "the start timeout outlasts the retries");
  assert.ok(!s.some((l) => l.startsWith("Environment=")), "no override for the default directory");
  assert.ok(lines(dflt, "Unit").includes("ConditionPathExists=/etc/nvmeof/connections.yaml"));
  assert.ok(lines(dflt, "Unit").includes("Before=remote-fs-pre.target"));
  const other = autoconnectUnitText(SELF, { etc: "/srv/nvmeof etc" });
  assert.ok(lines(other, "Service").includes('Environment="NVMEOF_ETC=/srv/nvmeof etc"'));
});

Deno.test("the unit names the launcher from source and the binary itself when compiled", () => {
  const env = (m: Record<string, string>) => (k: string) => m[k];
  assert.deepEqual(selfPath(env({ NVMEOF_LAUNCHER: "/w/scripts/nvmeof" }), false), {
    path: "/w/scripts/nvmeof",
    how: "source launcher (scripts/nvmeof)",
  });
  assert.equal(selfPath(env({ NVMEOF_LAUNCHER: "/w/scripts/nvmeof" }), true).path, Deno.execPath());
  assert.throws(() => selfPath(env({}), false), /without its launcher/);
  assert.throws(() => selfPath(env({ NVMEOF_LAUNCHER: "scripts/nvmeof" }), false));
});

Deno.test("installing writes the unit and the wants link; removing takes both away", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-units-" });
  try {
    const paths: PersistPaths = { etc: `${dir}/etc`, systemd: `${dir}/sd`, etcNvme: `${dir}/nvme` };
    await Deno.mkdir(paths.systemd);
    const text = targetUnitText(SELF, "/etc/nvmeof/target.yaml");
    const dry = await installUnit(paths, TARGET_UNIT, { text, dryRun: true });
    assert.equal(dry.dry_run, true);
    assert.deepEqual([...Deno.readDirSync(paths.systemd)], [], "a dry run writes nothing");
    assert.match(dry.systemctl_skipped ?? "", /NVMEOF_SYSTEMD_DIR/);
    const c = await installUnit(paths, TARGET_UNIT, { text });
    assert.equal(Deno.readTextFileSync(c.unit_file), text);
    assert.equal((Deno.statSync(c.unit_file).mode ?? 0) & 0o777, 0o644);
    assert.equal(Deno.readLinkSync(c.wants_link), c.unit_file);
    // Enabling again replaces both without error.
    await installUnit(paths, TARGET_UNIT, { text: text + "# again\n" });
    assert.match(Deno.readTextFileSync(c.unit_file), /# again/);
    const r = await removeUnit(paths, TARGET_UNIT, {});
    assert.equal(r.was_installed, true);
    assert.throws(() => Deno.lstatSync(c.unit_file));
    assert.throws(() => Deno.lstatSync(c.wants_link));
    const again = await removeUnit(paths, TARGET_UNIT, {});
    assert.equal(again.was_installed, false, "removing twice is not an error");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const SAMPLE: SavedConnection[] = [
  {
    transport: "rdma",
    traddr: "10.77.0.1",
    trsvcid: "4420",
    nqn: "nqn.2026-10.pk.nextgen:storage-pool-1",
    hostnqn: HQ,
    hostid: HI,
    nr_io_queues: 4,
    queue_size: 128,
    ctrl_loss_tmo: -1,
    dhchap_secret_file: "/etc/nvmeof/keys/pool1.key",
  },
  { transport: "tcp", traddr: "fd00::10", trsvcid: "8009", nqn: DISC, hostnqn: HQ, hostid: HI },
];

Deno.test("the connections file round-trips: what is saved is what is loaded", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-conn-" });
  try {
    const file = `${dir}/sub/connections.yaml`;
    assert.deepEqual(await loadConnections(file), [], "a missing file is no connections");
    await saveConnections(file, SAMPLE);
    assert.deepEqual(await loadConnections(file), SAMPLE);
    const text = Deno.readTextFileSync(file);
    assert.equal(text, await connectionsText(SAMPLE));
    assert.match(text, /^# Saved NVMe-oF connections/);
    assert.deepEqual([...Deno.readDirSync(`${dir}/sub`)].map((e) => e.name), [
      "connections.yaml",
    ], "no temporary file is left behind");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a broken connections file names the entry, the key and the fix", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-conn-" });
  try {
    const file = `${dir}/connections.yaml`;
    const bad = async (yaml: string, re: RegExp) => {
      Deno.writeTextFileSync(file, yaml);
      await assert.rejects(() => loadConnections(file), (e: Error) => {
        assert.ok(e instanceof UsageError, String(e));
        assert.match(e.message, re);
        return true;
      });
    };
    const ok = `transport: rdma\n    traddr: 10.0.0.2\n    nqn: nqn.2024-01.io.example:a\n` +
      `    hostnqn: ${HQ}\n    hostid: ${HI}\n`;
    await bad(
      `connections:\n  - ${ok}    speed: 1\n`,
      /connections\[0\]\.speed is not a known key/,
    );
    await bad(`connections:\n  - ${ok.replace("10.0.0.2", "storage1")}`, /traddr 'storage1'/);
    await bad(
      `connections:\n  - ${ok.replace(`hostid: ${HI}`, "hostid: xyz")}`,
      /hostid 'xyz' is not a UUID/,
    );
    await bad(`connections:\n  - ${ok}    queue_size: 4\n`, /queue_size 4 is out of range/);
    await bad(`connections: 3\n`, /no 'connections:' list/);
    await bad(`connections: [\n`, /Cannot parse/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("merging adds new connections, replaces changed ones, and keeps duplicates out", () => {
  const [a, b] = SAMPLE;
  const once = mergeConnections([a], [a, b]);
  assert.deepEqual(once.list, [a, b]);
  assert.deepEqual(once.added, [b]);
  const tuned = { ...a, nr_io_queues: 8 };
  const twice = mergeConnections(once.list, [tuned]);
  assert.deepEqual(twice.list, [tuned, b]);
  assert.deepEqual(twice.replaced, [tuned]);
  const otherHost = {
    ...a,
    hostnqn: HQ.replace("0001", "0002"),
    hostid: HI.replace("0001", "0002"),
  };
  assert.equal(mergeConnections(twice.list, [otherHost]).added.length, 1, "per host NQN");
});

Deno.test("a saved entry becomes connect options, the secret read from its file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-conn-" });
  try {
    const key = `${dir}/k`;
    Deno.writeTextFileSync(key, "DHHC-1:00:ia3Hm9kQP8XhK4i8QPq0l8uKy5wOxQsJ3Xw1p3VnN2c0Vw==:\n", {
      mode: 0o600,
    });
    const o = await optionsFromSaved({ ...SAMPLE[0], dhchap_secret_file: key });
    assert.equal(o.dhchapSecret, "DHHC-1:00:ia3Hm9kQP8XhK4i8QPq0l8uKy5wOxQsJ3Xw1p3VnN2c0Vw==:");
    assert.equal(o.ctrlLossTmo, -1);
    assert.deepEqual(savedFromOptions(o, key), { ...SAMPLE[0], dhchap_secret_file: key });
    await assert.rejects(
      () => optionsFromSaved({ ...SAMPLE[0], dhchap_secret_file: `${dir}/gone` }),
      /key file '.*gone' does not exist/,
    );
    Deno.chmodSync(key, 0o640);
    await assert.rejects(
      () => optionsFromSaved({ ...SAMPLE[0], dhchap_secret_file: key }),
      /readable or writable by group or others \(mode 640\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("nvme-cli's discovery.conf becomes discovery entries with the host's identity", async () => {
  const text = Deno.readTextFileSync(`${ROOT}/tests/fixtures/nvme-cli/discovery.conf`);
  const r = await importDiscoveryConf(text, "discovery.conf", { hostnqn: HQ, hostid: HI }, "/e");
  assert.deepEqual(r.connections, [
    { transport: "rdma", traddr: "10.77.0.1", trsvcid: "4420", nqn: DISC, hostnqn: HQ, hostid: HI },
    {
      transport: "rdma",
      traddr: "192.168.100.10",
      trsvcid: "4421",
      nqn: DISC,
      hostnqn: HQ,
      hostid: HI,
      host_traddr: "192.168.100.20",
      keep_alive_tmo: 30,
    },
    {
      transport: "tcp",
      traddr: "fd00::10",
      trsvcid: "8009",
      nqn: DISC,
      hostnqn: HQ,
      hostid: HI,
      host_iface: "eth1",
    },
  ]);
  assert.deepEqual(r.notes, [
    "discovery.conf line 8: --persistent not carried over (nvmeof has no such option).",
  ]);
  assert.throws(
    () => importDiscoveryConf("--traddr=10.0.0.1\n", "d", {}, "/e"),
    /no host NQN and host ID/,
  );
  assert.throws(
    () =>
      importDiscoveryConf("--traddr=10.0.0.1 --bogus\n", "d", { hostnqn: HQ, hostid: HI }, "/e"),
    /d line 1: unknown nvme-cli flag '--bogus'/,
  );
});

Deno.test("libnvme's config.json becomes connections; inline keys move to key files", async () => {
  const text = Deno.readTextFileSync(`${ROOT}/tests/fixtures/nvme-cli/config.json`);
  const r = await importConfigJson(text, "config.json", "/etc/nvmeof");
  const h1 = "nqn.2014-08.org.nvmexpress:uuid:2c8b4c3a-9f3e-4b6e-8d21-6a1c1f0e7b55";
  const id1 = "2c8b4c3a-9f3e-4b6e-8d21-6a1c1f0e7b55";
  const id2 = "7d1f7b0e-1a2b-4c3d-8e4f-5a6b7c8d9e0f";
  assert.equal(r.connections.length, 4, "the fc port is skipped");
  const [p1, p2, disc, p3] = r.connections;
  assert.deepEqual(p1, {
    transport: "rdma",
    traddr: "10.77.0.1",
    trsvcid: "4420",
    nqn: "nqn.2026-10.pk.nextgen:storage-pool-1",
    hostnqn: h1,
    hostid: id1,
    nr_io_queues: 4,
    queue_size: 128,
    reconnect_delay: 10,
    ctrl_loss_tmo: 600,
  });
  assert.equal(p2.host_traddr, "10.77.1.2");
  assert.equal(p2.ctrl_loss_tmo, -1);
  assert.match(p2.dhchap_secret_file ?? "", /^\/etc\/nvmeof\/keys\/[0-9a-f]{12}\.key$/);
  assert.deepEqual(disc, {
    transport: "tcp",
    traddr: "192.168.100.10",
    trsvcid: "8009",
    nqn: DISC,
    hostnqn: h1,
    hostid: id1,
  });
  assert.equal(p3.hostnqn, `nqn.2014-08.org.nvmexpress:uuid:${id2}`);
  assert.equal(p3.hostid, id2, "hostid derived from the uuid of the hostnqn");
  assert.equal(p3.nqn, "nqn.2026-10.pk.nextgen:storage-pool-2");
  assert.ok(p3.dhchap_secret_file, "the host's key applies to its ports");
  assert.deepEqual(r.keyFiles.map((k) => k.path), [p2.dhchap_secret_file, p3.dhchap_secret_file]);
  assert.equal(r.keyFiles[0].secret, "DHHC-1:00:ia3Hm9kQP8XhK4i8QPq0l8uKy5wOxQsJ3Xw1p3VnN2c0Vw==:");
  assert.ok(!r.notes.join("\n").includes("DHHC-1"), "notes never hold a secret");
  assert.ok(r.connections.some((c) => c.fast_io_fail_tmo === 30), "fast_io_fail_tmo is kept");
  assert.ok(r.notes.some((n) => /transport 'fc' skipped/.test(n)));
  assert.ok(
    r.connections.some((c) => c.hdr_digest === true && c.data_digest === true),
    "the digests are kept",
  );
  assert.ok(!r.notes.some((n) => /not carried over/.test(n)), r.notes.join("\n"));
  // libnvme's schema also describes {"hosts": [...]}.
  const wrapped = await importConfigJson(`{"hosts": ${text}}`, "c", "/etc/nvmeof");
  assert.deepEqual(wrapped.connections, r.connections);
  assert.throws(() => importConfigJson("{}", "c", "/e"), /holds no list of hosts/);
});

Deno.test("the backoff doubles from 1 s to a 15 s ceiling", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 9].map(backoffDelay), [
    1000,
    2000,
    4000,
    8000,
    15000,
    15000,
    15000,
  ]);
});

Deno.test("retries stop at the bound, retry only what failed, and never retry a usage error", async () => {
  let clock = 0;
  const slept: number[] = [];
  const tries: Record<string, number> = { a: 0, b: 0, c: 0 };
  const r = await retrySaved(
    ["a", "b", "c"],
    (e) => {
      tries[e]++;
      if (e === "c") throw new UsageError("broken entry");
      if (e === "a" && tries.a >= 3) return Promise.resolve({ rows: [`${e} ok`], done: true });
      return Promise.reject(new Error("ECONNRESET"));
    },
    (e) => e,
    (e, why) => `${e} failed: ${why}`,
    {
      retryForMs: 10_000,
      now: () => clock,
      sleep: (ms) => {
        slept.push(ms);
        clock += ms;
        return Promise.resolve();
      },
    },
  );
  assert.deepEqual(r.rows, ["a ok", "b failed: ECONNRESET", "c failed: broken entry"]);
  assert.equal(tries.c, 1, "a usage error is final");
  assert.equal(tries.a, 3);
  // 1 + 2 + 4 s, then only 3 s are left of the 10 s bound: one last try at the bound.
  assert.deepEqual(slept, [1000, 2000, 4000, 3000]);
  assert.equal(tries.b, 5);
  assert.equal(r.elapsed_ms, 10_000);
});
