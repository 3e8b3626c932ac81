import assert from "node:assert/strict";
import { specWarnings } from "../../src/target/report.ts";
import { parseSpecText, SpecError, validateSpec } from "../../src/target/spec.ts";
import { BAD_SPECS, devices, HOST1, SUB1, SUB2, twoSubsystemSpec } from "./target_fixtures.ts";

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

for (const [name, mutate, path, message] of BAD_SPECS) {
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
  spec.subsystems[0].nqn = "bad/nqn";
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

Deno.test("YAML syntax errors carry line and column", async () => {
  try {
    await parseSpecText("subsystems:\n  - nqn: a\n   bad: [\n", "'t.yaml'");
    assert.fail("expected a SpecError");
  } catch (err) {
    assert.ok(err instanceof SpecError);
    assert.match(err.problems[0].path, /^line \d+, column \d+$/);
    assert.match(err.message, /Invalid target spec 't\.yaml'/);
  }
});

Deno.test("duplicate keys in YAML are refused", async () => {
  await assert.rejects(() => parseSpecText("ports: []\nports: []\n", "x"), SpecError);
});

Deno.test("JSON is accepted as a spec", async () => {
  const raw = await parseSpecText(JSON.stringify({ hosts: [{ nqn: HOST1 }] }), "x");
  assert.equal(validateSpec(raw).hosts[0].nqn, HOST1);
});

Deno.test("text fields keep what the file says, however YAML would type it", async () => {
  const raw = await parseSpecText(
    `subsystems:
  - nqn: ${SUB1}
    serial: 0123
    model: 1e3
    version: 1.10
    firmware: 2.0
    ieee_oui: 0xABCDEF
    namespaces:
      - nsid: 1
        device: /dev/null
        nguid: 12345678901234567890123456789012
ports:
  - id: 1
    traddr: 10.77.0.1
    trsvcid: 4420
    subsystems: [${SUB1}]
`,
    "'t.yaml'",
  );
  const spec = validateSpec(raw, { checkFiles: false });
  const s = spec.subsystems[0];
  assert.deepEqual(
    [s.serial, s.model, s.version, s.firmware, s.ieee_oui],
    ["0123", "1e3", "1.10", "2.0", "0xabcdef"],
  );
  assert.equal(s.namespaces[0].nguid, "12345678901234567890123456789012");
  // Numbers stay numbers where the spec wants one.
  assert.equal(s.namespaces[0].nsid, 1);
  assert.equal(spec.ports[0].id, 1);
  assert.equal(spec.ports[0].trsvcid, "4420");
});

Deno.test("a quoted or unquoted host NQN list item is the same text", async () => {
  const raw = await parseSpecText(`hosts: [0x10, "0x10"]\n`, "'t.yaml'") as {
    hosts: unknown[];
  };
  assert.deepEqual(raw.hosts, ["0x10", "0x10"]);
});

Deno.test("any NQN nvmet takes is valid; only the form is warned about", () => {
  const spec = validateSpec({
    hosts: ["hostnqn-1"],
    subsystems: [{ nqn: "nvmet-always", hosts: ["hostnqn-1"] }, { nqn: SUB1 }],
  });
  assert.deepEqual(spec.subsystems.map((s) => s.nqn), ["nvmet-always", SUB1]);
  assert.deepEqual(specWarnings(spec), [
    "warning: NQN 'nvmet-always' is not of the form nqn.<yyyy-mm>.<reverse-domain>[:<name>]; " +
    "nvmet accepts it, but the NVMe specification asks for that form.",
    "warning: NQN 'hostnqn-1' is not of the form nqn.<yyyy-mm>.<reverse-domain>[:<name>]; " +
    "nvmet accepts it, but the NVMe specification asks for that form.",
  ]);
  assert.match(
    problems({ subsystems: [{ nqn: "nqn.2014-08.org.nvmexpress.discovery" }] })[0].message,
    /is the discovery NQN/,
  );
});
