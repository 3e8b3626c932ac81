/**
 * The ICMP echo codec of the doctor's IP probes: RFC 1071 checksums, requests of a chosen IP
 * size, and replies as a ping socket and a raw socket deliver them.
 */
import assert from "node:assert/strict";
import {
  echoRequest,
  ICMP_ECHO_REPLY,
  ICMPV6_ECHO_REPLY,
  inetChecksum,
  parseEchoReply,
  payloadForIpSize,
} from "../../src/net/icmp.ts";

Deno.test("the Internet checksum matches RFC 1071's worked example and pads an odd byte", () => {
  // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2; the checksum is its complement.
  assert.equal(
    inetChecksum(new Uint8Array([0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])),
    0x220d,
  );
  assert.equal(inetChecksum(new Uint8Array([0xab])), ~0xab00 & 0xffff);
  assert.equal(inetChecksum(new Uint8Array(0)), 0xffff);
});

Deno.test("an IPv4 echo request is type 8 with id, seq and a checksum that verifies to 0", () => {
  const b = echoRequest({ family: 4, id: 0x1234, seq: 7, payload: 56 });
  assert.equal(b.length, 64);
  assert.deepEqual([b[0], b[1]], [8, 0]);
  const dv = new DataView(b.buffer);
  assert.deepEqual([dv.getUint16(4), dv.getUint16(6)], [0x1234, 7]);
  assert.equal(inetChecksum(b), 0);
  assert.equal(b[8 + 10], 10);
});

Deno.test("an ICMPv6 echo request is type 128 and leaves the checksum to the kernel", () => {
  const b = echoRequest({ family: 6, id: 1, seq: 2, payload: 0 });
  assert.deepEqual([...b], [128, 0, 0, 0, 0, 1, 0, 2]);
});

Deno.test("IP sizes map to ICMP payloads: 1500 is 1472 over IPv4 and 1452 over IPv6", () => {
  assert.equal(payloadForIpSize(1500, 4), 1472);
  assert.equal(payloadForIpSize(9000, 4), 8972);
  assert.equal(payloadForIpSize(1500, 6), 1452);
});

function reply(family: 4 | 6, seq: number, payload: number): Uint8Array {
  const b = echoRequest({ family, id: 0x4242, seq, payload });
  b[0] = family === 4 ? ICMP_ECHO_REPLY : ICMPV6_ECHO_REPLY;
  b[2] = b[3] = 0;
  if (family === 4) new DataView(b.buffer).setUint16(2, inetChecksum(b));
  return b;
}

Deno.test("an echo reply parses from a ping socket (ICMP first) and a raw socket (IPv4 header first)", () => {
  assert.deepEqual(parseEchoReply(reply(4, 9, 100), { family: 4 }), {
    id: 0x4242,
    seq: 9,
    payload: 100,
  });
  const ip = new Uint8Array(20 + 108);
  ip[0] = 0x45; // version 4, IHL 5 words
  ip[9] = 1; // ICMP
  ip.set(reply(4, 9, 100), 20);
  assert.equal(parseEchoReply(ip, { family: 4, ipHeader: true })?.seq, 9);
  assert.equal(parseEchoReply(reply(6, 3, 8), { family: 6 })?.seq, 3);
});

Deno.test("a request, a corrupted reply, another protocol or a short packet is no echo reply", () => {
  assert.equal(
    parseEchoReply(echoRequest({ family: 4, id: 1, seq: 1, payload: 8 }), { family: 4 }),
    undefined,
  );
  const bad = reply(4, 1, 8);
  bad[10] ^= 0xff;
  assert.equal(parseEchoReply(bad, { family: 4 }), undefined);
  const udp = new Uint8Array(40);
  udp[0] = 0x45;
  udp[9] = 17;
  assert.equal(parseEchoReply(udp, { family: 4, ipHeader: true }), undefined);
  assert.equal(parseEchoReply(new Uint8Array(4), { family: 4 }), undefined);
  assert.equal(parseEchoReply(reply(4, 1, 8), { family: 6 }), undefined);
});
