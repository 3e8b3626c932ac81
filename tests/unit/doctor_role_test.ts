/**
 * Which side the doctor checks: --role wins; else the local nvmet tree is checked only when -a is
 * an address of this machine (compared in canonical form), so a compute node with nvmet loaded
 * does not report its own empty tree as the target's.
 */
import assert from "node:assert/strict";
import { chooseRole } from "../../src/doctor/role.ts";
import { canonicalIp, localInterfaceOf } from "../../src/net/address.ts";

const LOCAL = [
  { name: "lo", address: "127.0.0.1" },
  { name: "fab0", address: "10.78.0.2" },
  { name: "fab0", address: "fd00:78::2" },
  { name: "fab1", address: "fe80::5054:ff:fe78:102" },
];

Deno.test("canonical addresses: RFC 5952 IPv6, IPv4-mapped as IPv4, zone dropped, junk undefined", () => {
  assert.equal(canonicalIp("10.78.0.1"), "10.78.0.1");
  assert.equal(canonicalIp("FD00:0078:0000:0000:0000:0000:0000:0002"), "fd00:78::2");
  assert.equal(canonicalIp("::ffff:10.78.0.2"), "10.78.0.2");
  assert.equal(canonicalIp("fe80::5054:ff:fe78:102%fab1"), "fe80::5054:ff:fe78:102");
  assert.equal(canonicalIp("target.example"), undefined);
});

Deno.test("a local interface is found by any spelling of its address", () => {
  assert.equal(localInterfaceOf("fd00:78:0:0::2", LOCAL)?.name, "fab0");
  assert.equal(localInterfaceOf("::ffff:10.78.0.2", LOCAL)?.name, "fab0");
  assert.equal(localInterfaceOf("10.78.0.1", LOCAL), undefined);
});

Deno.test("without --role, a remote -a makes the doctor an initiator only, and says why", () => {
  const r = chooseRole(undefined, "10.78.0.1", LOCAL);
  assert.equal(r.role, "initiator");
  assert.match(r.reason, /^10\.78\.0\.1 is not an address of this machine/);
});

Deno.test("without --role, a local -a (any spelling) checks both sides, naming the interface", () => {
  for (const a of ["10.78.0.2", "::ffff:10.78.0.2", "fd00:78::0:2"]) {
    const r = chooseRole(undefined, a, LOCAL);
    assert.equal(r.role, "both", a);
    assert.match(r.reason, /is an address of this machine \(fab0\)/);
  }
});

Deno.test("without --role and -a, both sides; --role always wins", () => {
  assert.equal(chooseRole(undefined, undefined, LOCAL).role, "both");
  assert.deepEqual(chooseRole("target", "10.78.0.1", LOCAL), {
    role: "target",
    reason: "--role target given",
  });
  assert.equal(chooseRole("both", "10.78.0.1", LOCAL).role, "both");
  assert.equal(chooseRole("initiator", "10.78.0.2", LOCAL).role, "initiator");
});
