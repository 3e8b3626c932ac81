/**
 * The netlink codec and the RDMA resource-tracking answers, on byte fixtures laid out by hand the
 * way the kernel writes them (nlmsghdr, nested nlattr tables with NLA_F_NESTED, sockaddr_storage).
 */
import assert from "node:assert/strict";
import {
  attrString,
  attrU32,
  encodeMessage,
  messageErrno,
  nlAlign,
  parseAttrs,
  parseMessages,
  u32Attr,
} from "../../src/net/netlink.ts";
import { canonicalIp, formatIp, parseSockaddr } from "../../src/net/address.ts";
import { cmIdDumpAttrs, nldevType, parseCmIds, parseDevices } from "../../src/rdma/restrack.ts";
import { NLM_F, RDMA_NLDEV_CMD } from "../../ffi/enums.ts";

const NESTED = 0x8000;
// enum rdma_nldev_attr values, spelled out here as the fixture's bytes carry them.
const DEV_INDEX = 1, DEV_NAME = 2, PORT_INDEX = 3, RES_STATE = 27, RES_KERN_NAME = 29;
const RES_CM_ID = 30, RES_CM_ID_ENTRY = 31, RES_PS = 32, RES_SRC_ADDR = 33, RES_DST_ADDR = 34;

function le16(n: number): number[] {
  return [n & 0xff, n >> 8];
}
function le32(n: number): number[] {
  return [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
}
/** nla_len, nla_type, payload, zero padding to 4. */
function attr(type: number, payload: number[]): number[] {
  const len = 4 + payload.length;
  return [...le16(len), ...le16(type), ...payload, ...Array(nlAlign(len) - len).fill(0)];
}
function str(s: string): number[] {
  return [...new TextEncoder().encode(s), 0];
}
/** A struct __kernel_sockaddr_storage (128 bytes) holding a sockaddr_in. */
function sin(ip: number[], port: number): number[] {
  const b = Array(128).fill(0);
  b.splice(0, 8, 2, 0, port >> 8, port & 0xff, ...ip);
  return b;
}
/** A struct __kernel_sockaddr_storage holding a sockaddr_in6. */
function sin6(ip: number[], port: number): number[] {
  const b = Array(128).fill(0);
  b.splice(0, 4, 10, 0, port >> 8, port & 0xff);
  b.splice(8, 16, ...ip);
  return b;
}
function message(type: number, flags: number, seq: number, payload: number[]): number[] {
  return [
    ...le32(16 + payload.length),
    ...le16(type),
    ...le16(flags),
    ...le32(seq),
    ...le32(0),
    ...payload,
  ];
}
function cmIdEntry(state: number, src: number[], dst: number[]): number[] {
  return attr(NESTED | RES_CM_ID_ENTRY, [
    ...attr(PORT_INDEX, le32(1)),
    ...attr(RES_STATE, [state]),
    ...attr(RES_PS, le32(0x106)),
    ...attr(RES_KERN_NAME, str("nvmet_rdma")),
    ...attr(RES_SRC_ADDR, src),
    ...attr(RES_DST_ADDR, dst),
  ]);
}

Deno.test("the CM id dump request is an RDMA_NL_NLDEV RES_CM_ID_GET dump naming the device", () => {
  const req = encodeMessage(
    { type: nldevType(RDMA_NLDEV_CMD.RES_CM_ID_GET), flags: NLM_F.REQUEST | NLM_F.DUMP, seq: 7 },
    cmIdDumpAttrs(3),
  );
  assert.deepEqual([...req], [
    ...[24, 0, 0, 0], // nlmsg_len
    ...[0x0b, 0x14], // nlmsg_type: RDMA_NL_NLDEV (5) << 10 | RDMA_NLDEV_CMD_RES_CM_ID_GET (11)
    ...[0x01, 0x03], // nlmsg_flags: NLM_F_REQUEST | NLM_F_DUMP
    ...[7, 0, 0, 0], // nlmsg_seq
    ...[0, 0, 0, 0], // nlmsg_pid: the kernel
    ...[8, 0, 1, 0, 3, 0, 0, 0], // RDMA_NLDEV_ATTR_DEV_INDEX = 3
  ]);
});

Deno.test("u32Attr pads nothing and encodes host order", () => {
  assert.deepEqual([...u32Attr(0x1234, 0x01020304)], [8, 0, 0x34, 0x12, 4, 3, 2, 1]);
});

Deno.test("parseMessages splits a datagram at the padded lengths and keeps each payload", () => {
  const a = message(5121, 2, 9, [...attr(DEV_INDEX, le32(0)), ...attr(DEV_NAME, str("rxe0"))]);
  const done = message(3, 2, 9, le32(0));
  const msgs = parseMessages(new Uint8Array([...a, ...done]));
  assert.equal(msgs.length, 2);
  assert.equal(msgs[0].type, 5121);
  assert.equal(msgs[1].type, 3);
  assert.equal(messageErrno(msgs[1]), 0);
  assert.deepEqual(parseDevices([msgs[0]]), [{ index: 0, name: "rxe0" }]);
});

Deno.test("parseMessages refuses a message that runs past the datagram", () => {
  const m = message(5121, 2, 9, attr(DEV_INDEX, le32(0)));
  assert.throws(() => parseMessages(new Uint8Array(m.slice(0, 20))), RangeError);
});

Deno.test("messageErrno reads -errno from NLMSG_ERROR", () => {
  const err = message(2, 0, 1, [...le32(-22 >>> 0), ...Array(16).fill(0)]);
  assert.equal(messageErrno(parseMessages(new Uint8Array(err))[0]), 22);
});

Deno.test("parseAttrs masks NLA_F_NESTED off the type and says the attribute is nested", () => {
  const a = parseAttrs(new Uint8Array(attr(NESTED | RES_CM_ID, attr(DEV_NAME, str("rxe1")))));
  assert.equal(a[0].type, RES_CM_ID);
  assert.equal(a[0].nested, true);
  assert.equal(attrString(parseAttrs(a[0].payload)[0]), "rxe1");
  assert.equal(attrU32(undefined), undefined);
});

Deno.test("parseCmIds reads nvmet-rdma's listener and connected queues with their addresses", () => {
  const payload = [
    ...attr(DEV_INDEX, le32(0)),
    ...attr(DEV_NAME, str("rxe0")),
    ...attr(NESTED | RES_CM_ID, [
      ...cmIdEntry(8, sin([10, 78, 0, 1], 4420), sin([0, 0, 0, 0], 0)),
      ...cmIdEntry(5, sin([10, 78, 0, 1], 4420), sin([10, 78, 0, 2], 32950)),
      ...cmIdEntry(
        5,
        sin6([0xfd, 0, ...Array(13).fill(0), 1], 4420),
        sin6([0xfd, 0, ...Array(13).fill(0), 2], 50000),
      ),
    ]),
  ];
  const ids = parseCmIds(parseMessages(new Uint8Array(message(5131, 2, 7, payload))));
  assert.deepEqual(ids.map((i) => [i.device, i.port, i.state, i.ps, i.kernName]), [
    ["rxe0", 1, "LISTEN", 0x106, "nvmet_rdma"],
    ["rxe0", 1, "CONNECT", 0x106, "nvmet_rdma"],
    ["rxe0", 1, "CONNECT", 0x106, "nvmet_rdma"],
  ]);
  assert.deepEqual(ids[0].dst, { address: "0.0.0.0", port: 0 });
  assert.deepEqual(ids[1].src, { address: "10.78.0.1", port: 4420 });
  assert.deepEqual(ids[1].dst, { address: "10.78.0.2", port: 32950 });
  assert.deepEqual(ids[2].dst, { address: "fd00::2", port: 50000 });
});

Deno.test("parseCmIds skips entries without a state or port space (as the rdma tool does)", () => {
  const payload = [
    ...attr(DEV_NAME, str("rxe0")),
    ...attr(NESTED | RES_CM_ID, attr(NESTED | RES_CM_ID_ENTRY, attr(RES_STATE, [5]))),
  ];
  assert.deepEqual(parseCmIds(parseMessages(new Uint8Array(message(5131, 2, 7, payload)))), []);
});

Deno.test("parseSockaddr reads AF_INET and AF_INET6 and nothing else", () => {
  assert.deepEqual(parseSockaddr(new Uint8Array(sin([192, 168, 1, 9], 4420))), {
    address: "192.168.1.9",
    port: 4420,
  });
  assert.equal(parseSockaddr(new Uint8Array([1, 0, 0, 0])), undefined);
});

Deno.test("formatIp writes RFC 5952 IPv6 and IPv4-mapped addresses as IPv4", () => {
  const v6 = (words: number[]) => new Uint8Array(words.flatMap((w) => [w >> 8, w & 0xff]));
  assert.equal(formatIp(v6([0xfe80, 0, 0, 0, 0, 0, 0, 1])), "fe80::1");
  assert.equal(formatIp(v6([0, 0, 0, 0, 0, 0, 0, 0])), "::");
  assert.equal(formatIp(v6([1, 0, 2, 0, 0, 3, 0, 0])), "1:0:2::3:0:0");
  assert.equal(formatIp(v6([1, 2, 3, 4, 5, 6, 0, 8])), "1:2:3:4:5:6:0:8");
  assert.equal(formatIp(v6([0, 0, 0, 0, 0, 0xffff, 0x0a4e, 0x0002])), "10.78.0.2");
});

Deno.test("canonicalIp gives one spelling per address and undefined for non-addresses", () => {
  assert.equal(canonicalIp("FD00:0:0::0001"), "fd00::1");
  assert.equal(canonicalIp("10.78.0.1"), "10.78.0.1");
  assert.equal(canonicalIp("::ffff:10.78.0.1"), "10.78.0.1");
  assert.equal(canonicalIp("300.1.1.1"), undefined);
  assert.equal(canonicalIp(""), undefined);
});
