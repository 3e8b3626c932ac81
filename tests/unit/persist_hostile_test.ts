/**
 * Hostile input to the initiator side and the key files of both sides: nvme-cli's files, saved
 * connections and DH-HMAC-CHAP key files. Each must end in the project's own typed error, and no
 * message may hold any part of a key.
 */
import assert from "node:assert/strict";
import { NvmeofError, UsageError } from "../../src/errors.ts";
import { loadConnections, validateSaved } from "../../src/persist/connections.ts";
import { importConfigJson } from "../../src/persist/config_json.ts";
import { importDiscoveryConf } from "../../src/persist/discovery_conf.ts";
import { SpecError, validateSpec } from "../../src/target/spec.ts";
import { devices, SUB1, twoSubsystemSpec } from "./target_fixtures.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
const HI = "00000000-0000-0000-0000-000000000001";
const KEY = "DHHC-1:00:ia3Hm9kQP8XhK4i8QPq0l8uKy5wOxQsJ3Xw1p3VnN2c0Vw==:";
/** Parts of KEY no message may hold. */
const KEY_PARTS = ["ia3Hm9kQ", "3VnN2c0Vw", "DHHC-1:00:i"];

function assertNoKey(text: string): void {
  for (const part of KEY_PARTS) assert.ok(!text.includes(part), `key part in: ${text}`);
}

function tempFile(text: string, mode = 0o600): string & Disposable {
  const p = Deno.makeTempFileSync({ prefix: "nvmeof-hostile-" });
  Deno.writeTextFileSync(p, text, { mode });
  Deno.chmodSync(p, mode);
  return Object.assign(Object(p), { [Symbol.dispose]: () => Deno.removeSync(p) });
}

Deno.test("config.json with a null port or a toString value is a usage error naming it", () => {
  const host = { hostnqn: HQ, hostid: HI };
  assert.throws(
    () =>
      importConfigJson(
        JSON.stringify([{ ...host, subsystems: [{ nqn: SUB1, ports: [null] }] }]),
        "c.json",
        "/e",
      ),
    (e: Error) => e instanceof UsageError && /ports\[0\] is not a mapping/.test(e.message),
  );
  assert.throws(
    () => validateSaved({ transport: { toString: "x" } }, "c[0]"),
    (e: Error) => e instanceof UsageError && /c\[0\]\.transport must be a string/.test(e.message),
  );
});

Deno.test("connections.yaml with a toString value is a usage error naming the entry", async () => {
  using f = tempFile(
    `connections:\n  - transport: {toString: x}\n    traddr: 10.0.0.1\n    nqn: ${SUB1}\n` +
      `    hostnqn: ${HQ}\n    hostid: ${HI}\n`,
  );
  await assert.rejects(
    () => loadConnections(String(f)),
    (e: Error) => e instanceof UsageError && /connections\[0\]\.transport/.test(e.message),
  );
});

Deno.test("discovery.conf errors never quote a key, however the flag is spelled", () => {
  for (
    const line of [
      `--transport=rdma --traddr=10.0.0.1 --dhchap_secret=${KEY}`,
      `--transport=rdma --traddr=10.0.0.1 --dhchap-secret= ${KEY}`,
      `--transport=rdma --traddr=10.0.0.1 ${KEY}`,
      `--transport=rdma --traddr=10.0.0.1 --dhchap-secret ${KEY} ${KEY}`,
      `--transport=rdma --traddr=${KEY}`,
    ]
  ) {
    assert.throws(
      () => importDiscoveryConf(line + "\n", "d.conf", { hostnqn: HQ, hostid: HI }, "/e"),
      (e: Error) => {
        assert.ok(e instanceof NvmeofError, String(e));
        assertNoKey(e.message + (e as NvmeofError).hint);
        return true;
      },
      line,
    );
  }
});

Deno.test("a config.json syntax error says where, never the text around it", () => {
  const text = `[{"hostnqn": "${HQ}", "dhchap_key": ${KEY}}]`;
  assert.throws(() => importConfigJson(text, "c.json", "/e"), (e: Error) => {
    assert.ok(e instanceof UsageError);
    assert.match(e.message, /Cannot parse c\.json: not valid JSON/);
    assertNoKey(e.message);
    return true;
  });
});

Deno.test("an rdma and a tcp entry to one address get their own key files", async () => {
  const conf = `--transport=rdma --traddr=10.0.0.1 --dhchap-secret=${KEY}\n` +
    `--transport=tcp --traddr=10.0.0.1 --dhchap-secret=${KEY.replace("ia3H", "zz3H")}\n`;
  const r = await importDiscoveryConf(conf, "d", { hostnqn: HQ, hostid: HI }, "/e");
  const [a, b] = r.keyFiles;
  assert.notEqual(a.path, b.path);
  assert.equal(r.connections[0].dhchap_secret_file, a.path);
  assert.equal(r.connections[1].dhchap_secret_file, b.path);
  assert.notEqual(a.secret, b.secret);
});

Deno.test("a target key file that is empty or not DHHC-1 fails validation, secret unquoted", () => {
  using dev = devices(3);
  for (const [text, why] of [["\n", /is empty/], ["hunter2\n", /DHHC-1 form/]] as const) {
    using f = tempFile(text);
    const spec = twoSubsystemSpec(dev);
    spec.hosts[0].dhchap_key_file = String(f);
    try {
      validateSpec(spec);
      assert.fail("accepted");
    } catch (err) {
      assert.ok(err instanceof SpecError);
      const p = err.problems.find((x) => x.path === "hosts[0].dhchap_key_file");
      assert.ok(p, err.message);
      assert.match(p.message, why);
      assert.ok(!err.message.includes("hunter2"));
    }
  }
});
