/**
 * `nvmeof target schema` against the validator it is derived from: every example spec in the
 * repository passes both, and the bad inputs of the validator's table fail the schema too,
 * except the few only the validator can see (files on disk, duplicates, cross-references).
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { loadCommands } from "../../src/cli/command.ts";
import { COMMANDS as ENTRIES } from "../../src/commands/mod.ts";
import { targetSpecSchema } from "../../src/target/schema.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { ROOT } from "../helpers.ts";
import { schemaErrors } from "./json_schema_check.ts";
import { BAD_SPECS, devices, type Doc, twoSubsystemSpec } from "./target_fixtures.ts";

/** The whole table, every module loaded. */
const COMMANDS = await loadCommands(ENTRIES);

const schema = targetSpecSchema();

/** Every example spec the repository shows users, by where it is. */
function exampleSpecs(dev: string[]): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  const target = COMMANDS.find((c) => c.name === "target")!;
  const up = target.subcommands!.find((c) => c.name === "up")!;
  const help = up.description!.split("Spec example:\n")[1];
  assert.ok(help, "target up's help has a spec example");
  out.push(["nvmeof target up --help", parse(help.replace(/^ {2}/gm, ""))]);
  out.push(["tests/unit/target_fixtures.ts twoSubsystemSpec", twoSubsystemSpec(dev)]);
  const demo = Deno.readTextFileSync(`${ROOT}/scripts/lab/demo.sh`);
  const block = /\nspec="(hosts:[\s\S]*?)"\n/.exec(demo);
  assert.ok(block, 'scripts/lab/demo.sh still writes its spec from spec="…"');
  out.push([
    "scripts/lab/demo.sh",
    parse(
      block[1]
        .replaceAll(
          "$hostnqn",
          "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000d1",
        )
        .replaceAll("$NQN", "nqn.2026-11.io.nvmeof:lab-demo")
        .replaceAll("$DISK", dev[0])
        .replaceAll("$ADDR", "10.78.0.1"),
    ),
  ]);
  const readme = Deno.readTextFileSync(`${ROOT}/README.md`);
  for (const m of readme.matchAll(/```yaml\n([\s\S]*?)```/g)) {
    if (/^subsystems:/m.test(m[1])) out.push(["README.md yaml block", parse(m[1])]);
  }
  return out;
}

Deno.test("the schema accepts every example spec in the repository, as the validator does", () => {
  using dev = devices(3);
  const examples = exampleSpecs(dev);
  assert.ok(examples.length >= 3, `found only ${examples.length} examples`);
  for (const [where, spec] of examples) {
    assert.deepEqual(schemaErrors(spec, schema), [], `schema refuses the example in ${where}`);
    validateSpec(spec, { checkFiles: false, source: where });
  }
});

// Bad inputs only the validator can catch: they need the file system (a device or key file that
// does not exist or has the wrong kind), or compare one item with another (duplicates, a port
// naming a subsystem). Every other row must fail the schema.
const VALIDATOR_ONLY = new Set([
  "duplicate subsystem NQN",
  "a host listed twice under a subsystem",
  "duplicate nsid",
  "missing device",
  "device is a directory",
  "device is a character device",
  "duplicate port id",
  "same address twice",
  "port names an undefined subsystem",
  "missing key file",
]);

for (const [name, mutate] of BAD_SPECS) {
  if (VALIDATOR_ONLY.has(name)) continue;
  Deno.test(`the schema refuses ${name}`, () => {
    using dev = devices(3);
    const s: Doc = twoSubsystemSpec(dev);
    assert.deepEqual(schemaErrors(s, schema), [], "the base spec passes");
    mutate(s, dev);
    assert.notDeepEqual(schemaErrors(s, schema), [], `schema accepted: ${JSON.stringify(s)}`);
  });
}

Deno.test("the validator-only list names rows of the bad-input table", () => {
  const names = new Set(BAD_SPECS.map(([n]) => n));
  for (const n of VALIDATOR_ONLY) {
    assert.ok(names.has(n), `'${n}' is not a row of the table any more`);
  }
});

Deno.test("the schema's key lists are exactly the keys the validator knows", () => {
  // Every key the schema allows is accepted by the validator (no 'not a known key' problem).
  using dev = devices(1);
  const full = {
    hosts: [{
      nqn: "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555",
      dhchap_hash: "hmac(sha256)",
      dhchap_dhgroup: "ffdhe2048",
    }],
    subsystems: [{
      nqn: "nqn.2026-10.pk.nextgen:full",
      allow_any_host: false,
      hosts: ["nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"],
      serial: "SN1",
      model: "M",
      version: "1.3",
      firmware: "1.0",
      ieee_oui: "0x123456",
      cntlid_min: 1,
      cntlid_max: 10,
      qid_max: 16,
      pi_enable: false,
      namespaces: [{
        nsid: 1,
        device: dev[0],
        uuid: "11111111-2222-3333-4444-555555555555",
        nguid: "0123456789abcdef0123456789abcdef",
        buffered_io: true,
        ana_grpid: 2,
        resv_enable: false,
        enabled: true,
      }],
    }],
    ports: [{
      id: 1,
      trtype: "tcp",
      adrfam: "ipv4",
      traddr: "10.0.0.1",
      trsvcid: 4420,
      subsystems: ["nqn.2026-10.pk.nextgen:full"],
      inline_data_size: 0,
      max_queue_size: 128,
      pi_enable: false,
      tsas: "none",
      treq: "not specified",
      ana_groups: [{ id: 2, state: "non-optimized" }],
      referrals: [{
        name: "dc-b",
        trtype: "rdma",
        adrfam: "ipv4",
        traddr: "10.0.0.9",
        trsvcid: 4420,
        portid: 3,
        treq: "required",
        enabled: true,
      }],
    }],
  };
  for (
    const kind of ["host", "subsystem", "namespace", "port", "ana_group", "referral"] as const
  ) {
    const def = schema.$defs![kind];
    const used = kind === "host"
      ? full.hosts[0]
      : kind === "subsystem"
      ? full.subsystems[0]
      : kind === "namespace"
      ? full.subsystems[0].namespaces[0]
      : kind === "ana_group"
      ? full.ports[0].ana_groups[0]
      : kind === "referral"
      ? full.ports[0].referrals[0]
      : full.ports[0];
    const optionalKeyFiles = kind === "host" ? ["dhchap_key_file", "dhchap_ctrl_key_file"] : [];
    assert.deepEqual(
      Object.keys(def.properties!).filter((k) => !optionalKeyFiles.includes(k)).sort(),
      Object.keys(used).sort(),
      `the ${kind} example covers every key of the schema`,
    );
  }
  assert.deepEqual(schemaErrors(full, schema), []);
  validateSpec(full, { checkFiles: false });
  const unknown = structuredClone(full) as Record<string, unknown>;
  (unknown.ports as Array<Record<string, unknown>>)[0].speed = 100;
  assert.notDeepEqual(schemaErrors(unknown, schema), []);
  assert.throws(() => validateSpec(unknown, { checkFiles: false }), /ports\[0\]\.speed/);
});
