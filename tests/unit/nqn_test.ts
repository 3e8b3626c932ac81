/**
 * One NQN length limit for both sides: the longest NQN a target offers is the longest a Linux
 * host can connect to (NVMF_NQN_SIZE - 1 bytes; the kernel refuses `nqnlen >= 223`).
 */
import assert from "node:assert/strict";
import { DISCOVERY_NQN, NQN_MAX_BYTES, NVMF_NQN_SIZE } from "../../src/fabrics/nqn.ts";
import { checkNqn } from "../../src/fabrics/option_checks.ts";
import { validateSpec } from "../../src/target/spec.ts";
import { SPEC_DEFS } from "../../src/target/schema.ts";
import { devices, twoSubsystemSpec } from "./target_fixtures.ts";

/** An NQN of exactly `bytes` UTF-8 bytes. */
function nqnOf(bytes: number): string {
  const nqn = "nqn.2026-10.pk.nextgen:" + "x".repeat(bytes - 23);
  assert.equal(new TextEncoder().encode(nqn).length, bytes);
  return nqn;
}

Deno.test("the NQN limit is the kernel's: NVMF_NQN_SIZE 223 counts the terminator", () => {
  assert.equal(NVMF_NQN_SIZE, 223);
  assert.equal(NQN_MAX_BYTES, 222);
  assert.equal(DISCOVERY_NQN, "nqn.2014-08.org.nvmexpress.discovery");
  assert.equal(SPEC_DEFS.subsystem.properties.nqn.maxLength, NQN_MAX_BYTES);
});

Deno.test("connect takes a 222-byte NQN and refuses 223 bytes", () => {
  assert.equal(checkNqn(nqnOf(NQN_MAX_BYTES), "-n/--nqn"), nqnOf(NQN_MAX_BYTES));
  assert.throws(() => checkNqn(nqnOf(NQN_MAX_BYTES + 1), "-n/--nqn"), /is 223 bytes/);
});

Deno.test("a target subsystem takes a 222-byte NQN and refuses 223 bytes", () => {
  using dev = devices(3);
  for (const [bytes, ok] of [[NQN_MAX_BYTES, true], [NQN_MAX_BYTES + 1, false]] as const) {
    const doc = twoSubsystemSpec(dev);
    doc.subsystems[1].nqn = nqnOf(bytes);
    doc.ports[0].subsystems = [doc.subsystems[0].nqn, doc.subsystems[1].nqn];
    if (ok) assert.equal(validateSpec(doc).subsystems[1].nqn, nqnOf(bytes));
    else assert.throws(() => validateSpec(doc), /223 bytes long; Linux hosts accept at most 222/);
  }
});
