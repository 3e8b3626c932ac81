import assert from "node:assert/strict";
import { parseSpecText, SpecError, validateSpec } from "../../src/target/spec.ts";
import { devices, type Doc, HOST1, SUB1, SUB2, twoSubsystemSpec } from "./target_fixtures.ts";

function problems(raw: unknown): Array<{ path: string; message: string; fix: string }> {
  try {
    validateSpec(raw);
  } catch (err) {
    assert.ok(err instanceof SpecError, String(err));
    return err.problems;
  }
  return [];
}

Deno.test("a valid spec gets its defaults: enabled namespaces, trsvcid 4420, adrfam from traddr", () => {
  using dev = devices(3);
  const spec = validateSpec(twoSubsystemSpec(dev));
  assert.equal(spec.subsystems[0].allow_any_host, false);
  assert.equal(spec.subsystems[0].namespaces[1].enabled, true);
  assert.equal(spec.ports[0].trsvcid, "4420");
  assert.equal(spec.ports[0].adrfam, "ipv4");
  assert.deepEqual(spec.ports[0].subsystems, [SUB1, SUB2]);
});

type Mutate = (s: Doc, dev: string[]) => void;

// Each row: what to break, the spec path the error must name, and words of its message.
const BAD: Array<[string, Mutate, string, RegExp]> = [
  ["unknown top-level key", (s) => (s.portz = []), "portz", /not a known key/],
  [
    "unknown subsystem key",
    (s) => (s.subsystems[0].allow_any_hosts = true),
    "subsystems[0].allow_any_hosts",
    /not a known key/,
  ],
  [
    "NQN without nqn. prefix",
    (s) => (s.subsystems[0].nqn = "storage-pool-1"),
    "subsystems[0].nqn",
    /not of the form nqn\./,
  ],
  [
    "NQN longer than 222 bytes",
    (s) => (s.subsystems[0].nqn = "nqn.2026-10.pk.nextgen:" + "x".repeat(200)),
    "subsystems[0].nqn",
    /223 bytes long; Linux hosts accept at most 222/,
  ],
  [
    "discovery NQN as subsystem",
    (s) => (s.subsystems[0].nqn = "nqn.2014-08.org.nvmexpress.discovery"),
    "subsystems[0].nqn",
    /discovery NQN/,
  ],
  [
    "NQN with a slash",
    (s) => (s.subsystems[0].nqn = "nqn.2026-10.pk.nextgen:a/b"),
    "subsystems[0].nqn",
    /contains '\/'/,
  ],
  [
    "duplicate subsystem NQN",
    (s) => (s.subsystems[1].nqn = SUB1),
    "subsystems[1].nqn",
    /duplicates subsystem NQN/,
  ],
  [
    "duplicate nsid",
    (s) => (s.subsystems[0].namespaces[1].nsid = 1),
    "subsystems[0].namespaces[1].nsid",
    /duplicates nsid '1'/,
  ],
  [
    "nsid zero",
    (s) => (s.subsystems[0].namespaces[0].nsid = 0),
    "subsystems[0].namespaces[0].nsid",
    /integer from 1/,
  ],
  [
    "missing device",
    (s) => (s.subsystems[0].namespaces[1].device = "/dev/does-not-exist-nvmeof"),
    "subsystems[0].namespaces[1].device",
    /does not exist/,
  ],
  [
    "device is a directory",
    (s) => (s.subsystems[0].namespaces[1].device = "/tmp"),
    "subsystems[0].namespaces[1].device",
    /neither a block device nor a regular file/,
  ],
  [
    "device is a character device",
    (s) => (s.subsystems[0].namespaces[0].device = "/dev/null"),
    "subsystems[0].namespaces[0].device",
    /neither a block device/,
  ],
  [
    "bad uuid",
    (s) => (s.subsystems[0].namespaces[0].uuid = "1234"),
    "subsystems[0].namespaces[0].uuid",
    /not a UUID/,
  ],
  [
    "bad nguid",
    (s) => (s.subsystems[0].namespaces[0].nguid = "xyz"),
    "subsystems[0].namespaces[0].nguid",
    /not an NGUID/,
  ],
  [
    "serial too long",
    (s) => (s.subsystems[0].serial = "x".repeat(21)),
    "subsystems[0].serial",
    /1 to 20 printable ASCII/,
  ],
  [
    "allow_any_host with hosts",
    (s) => (s.subsystems[0].allow_any_host = true),
    "subsystems[0].allow_any_host",
    /EINVAL/,
  ],
  [
    "allow_any_host not a boolean",
    (s) => (s.subsystems[1].allow_any_host = "yes"),
    "subsystems[1].allow_any_host",
    /true or false/,
  ],
  [
    "host NQN invalid",
    (s) => (s.subsystems[0].hosts = ["host1"]),
    "subsystems[0].hosts[0]",
    /not of the form/,
  ],
  [
    "duplicate port id",
    (s) => s.ports.push({ id: 1, traddr: "10.77.0.2", subsystems: [] }),
    "ports[1].id",
    /duplicates port id '1'/,
  ],
  [
    "same address twice",
    (s) => s.ports.push({ id: 2, traddr: "10.77.0.1", subsystems: [] }),
    "ports[1].traddr",
    /EADDRINUSE/,
  ],
  [
    "bad IPv4",
    (s) => (s.ports[0].traddr = "10.77.0.256"),
    "ports[0].traddr",
    /neither an IPv4 nor an IPv6/,
  ],
  [
    "IPv6 address with adrfam ipv4",
    (s) => {
      s.ports[0].traddr = "fd00::1";
      s.ports[0].adrfam = "ipv4";
    },
    "ports[0].traddr",
    /not an IPv4 address/,
  ],
  ["adrfam ib on rdma", (s) => (s.ports[0].adrfam = "ib"), "ports[0].adrfam", /ipv4 or ipv6/],
  ["trsvcid out of range", (s) => (s.ports[0].trsvcid = 70000), "ports[0].trsvcid", /1 to 65535/],
  ["unknown transport", (s) => (s.ports[0].trtype = "fc"), "ports[0].trtype", /rdma, tcp or loop/],
  [
    "port names an undefined subsystem",
    (s) => (s.ports[0].subsystems = ["nqn.2026-10.pk.nextgen:nope"]),
    "ports[0].subsystems[0]",
    /does not define/,
  ],
  ["tsas on rdma", (s) => (s.ports[0].tsas = "tls1.3"), "ports[0].tsas", /only for tcp/],
  [
    "missing key file",
    (s) => (s.hosts[0].dhchap_key_file = "/nonexistent/key"),
    "hosts[0].dhchap_key_file",
    /does not exist/,
  ],
  [
    "namespaces not a list",
    (s) => (s.subsystems[0].namespaces = { nsid: 1 }),
    "subsystems[0].namespaces",
    /must be a list/,
  ],
];

for (const [name, mutate, path, message] of BAD) {
  Deno.test(`validation refuses ${name}, naming ${path}`, () => {
    using dev = devices(3);
    const spec = twoSubsystemSpec(dev);
    mutate(spec, dev);
    const found = problems(spec);
    const hit = found.find((p) => p.path === path);
    assert.ok(hit, `no problem at ${path}; got ${JSON.stringify(found)}`);
    assert.match(hit.message, message);
    assert.ok(hit.fix.length > 0, "every problem says how to fix it");
  });
}

Deno.test("validation reports every problem at once, not just the first", () => {
  using dev = devices(3);
  const spec = twoSubsystemSpec(dev);
  spec.subsystems[0].nqn = "bad";
  spec.ports[0].trsvcid = 0;
  spec.subsystems[1].namespaces[0].device = "/nope/nope";
  const paths = problems(spec).map((p) => p.path);
  assert.ok(paths.includes("subsystems[0].nqn"));
  assert.ok(paths.includes("ports[0].trsvcid"));
  assert.ok(paths.includes("subsystems[1].namespaces[0].device"));
});

Deno.test("a key file readable by others is refused with the chmod fix", () => {
  using dev = devices(3);
  const key = Deno.makeTempFileSync();
  try {
    Deno.writeTextFileSync(key, "DHHC-1:00:aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQ=:\n");
    Deno.chmodSync(key, 0o644);
    const spec = twoSubsystemSpec(dev);
    spec.hosts[0].dhchap_key_file = key;
    const p = problems(spec).find((x) => x.path === "hosts[0].dhchap_key_file");
    assert.ok(p);
    assert.match(p.message, /readable or writable by group or others \(mode 644\)/);
    assert.match(p.fix, /chmod 600/);
    Deno.chmodSync(key, 0o600);
    assert.deepEqual(problems(spec), []);
  } finally {
    Deno.removeSync(key);
  }
});

Deno.test("YAML syntax errors carry line and column", () => {
  try {
    parseSpecText("subsystems:\n  - nqn: a\n   bad: [\n", "'t.yaml'");
    assert.fail("expected a SpecError");
  } catch (err) {
    assert.ok(err instanceof SpecError);
    assert.match(err.problems[0].path, /^line \d+, column \d+$/);
    assert.match(err.message, /Invalid target spec 't\.yaml'/);
  }
});

Deno.test("duplicate keys in YAML are refused", () => {
  assert.throws(() => parseSpecText("ports: []\nports: []\n", "x"), SpecError);
});

Deno.test("JSON is accepted as a spec", () => {
  const raw = parseSpecText(JSON.stringify({ hosts: [{ nqn: HOST1 }] }), "x");
  assert.equal(validateSpec(raw).hosts[0].nqn, HOST1);
});
