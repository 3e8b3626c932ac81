/** The one IP address parser: what connect, the target spec, RDMA-CM and the doctor accept. */
import assert from "node:assert/strict";
import { hostPort, isIpv4, isIpv6, parseIpv4, parseIpv6 } from "../../src/net/address.ts";
import { checkAddress } from "../../src/fabrics/option_checks.ts";
import { validateSpec } from "../../src/target/spec.ts";

Deno.test("isIpv4 takes dotted quads 0-255 and refuses leading zeros, extra parts and junk", () => {
  for (const ok of ["10.77.0.1", "0.0.0.0", "255.255.255.255"]) assert.ok(isIpv4(ok), ok);
  for (const bad of ["010.1.1.1", "10.1.1.1.1", "256.1.1.1", "10.1.1", "a.b.c.d", ""]) {
    assert.ok(!isIpv4(bad), bad);
  }
  assert.deepEqual([...parseIpv4("10.77.0.2")!], [10, 77, 0, 2]);
  assert.equal(parseIpv4("10.77.0.256"), undefined);
});

Deno.test("isIpv6 takes RFC 4291 text and an IPv4 tail, and refuses junk", () => {
  for (
    const ok of ["::1", "::", "2001:db8::8:800:200c:417a", "::ffff:10.0.0.1", "1:2:3:4:5:6:7:8"]
  ) {
    assert.ok(isIpv6(ok), ok);
  }
  for (
    const bad of ["1:2:3:4:5:6:7:8:9", "12345::1", "1::2::3", "::g", "::ffff:10.0.0.256", "1.2.3.4"]
  ) {
    assert.ok(!isIpv6(bad), bad);
  }
  assert.equal(parseIpv6("::ffff:010.0.0.1"), undefined);
});

Deno.test("isIpv6 takes a %zone only when asked to", () => {
  assert.ok(!isIpv6("fe80::1%eth0"));
  assert.ok(isIpv6("fe80::1%eth0", { zone: true }));
  for (const bad of ["fe80::1%", "fe80::1%a%b", "fe80::1%has space", "fe80::1%sixteen-chars-xx"]) {
    assert.ok(!isIpv6(bad, { zone: true }), bad);
  }
});

Deno.test("connect accepts an IPv6 zone; a target port refuses it with its own message", () => {
  assert.equal(checkAddress("fe80::1%eth0", "-a/--traddr"), "fe80::1%eth0");
  assert.throws(() => checkAddress("010.0.0.1", "-a/--traddr"), /not an IPv4 or IPv6 address/);
  const spec = {
    ports: [{ id: 1, trtype: "tcp", traddr: "fe80::1%eth0", trsvcid: 4420 }],
  };
  assert.throws(() => validateSpec(spec), /neither an IPv4 nor an IPv6 address/);
});

Deno.test("hostPort brackets an IPv6 address and leaves IPv4 as it is", () => {
  assert.equal(hostPort("10.0.0.1", 4420), "10.0.0.1:4420");
  assert.equal(hostPort("10.0.0.1", "4420"), "10.0.0.1:4420");
  assert.equal(hostPort("fd00::1", 4420), "[fd00::1]:4420");
  assert.equal(hostPort("::ffff:10.0.0.1", "4420"), "[::ffff:10.0.0.1]:4420");
  assert.equal(hostPort("fe80::1%eth0", 4420), "[fe80::1%eth0]:4420");
});
