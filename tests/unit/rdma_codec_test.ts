/**
 * Codecs and tables of the RDMA layer that need no device: addresses, GID text, enum names,
 * and the fast call path through libffi against the UnsafeFnPointer fallback.
 */
import assert from "node:assert/strict";
import { sockaddr } from "../../src/net/address.ts";
import { formatIp, parseIpv6 } from "../../src/net/address.ts";
import {
  cmEventName,
  IB_CM_REJ_REASON,
  mtuBytes,
  qpStateName,
  wcStatusName,
} from "../../ffi/enums.ts";
import { NativeCall, usingLibffi } from "../../ffi/libffi.ts";
import { SOCKADDR_IN, SOCKADDR_IN6 } from "../../ffi/libc_structs.ts";

Deno.test("sockaddr encodes IPv4 with the port in network order", () => {
  const sa = sockaddr("10.77.0.1", 7174);
  assert.equal(sa.length, SOCKADDR_IN.$size);
  assert.deepEqual([...sa.subarray(0, 8)], [2, 0, 0x1c, 0x06, 10, 77, 0, 1]);
});

Deno.test("sockaddr encodes IPv6 as sockaddr_in6 (family 10)", () => {
  const sa = sockaddr("fe80::1", 4420);
  assert.equal(sa.length, SOCKADDR_IN6.$size);
  assert.deepEqual([...sa.subarray(0, 4)], [10, 0, 0x11, 0x44]);
  assert.equal(sa[8], 0xfe);
  assert.equal(sa[23], 1);
});

Deno.test("parseIpv6 accepts compressed and IPv4-mapped forms and refuses junk", () => {
  assert.deepEqual([...parseIpv6("::ffff:10.77.0.1")!.subarray(10)], [0xff, 0xff, 10, 77, 0, 1]);
  assert.equal(parseIpv6("1::2::3"), undefined);
  assert.equal(parseIpv6("hello"), undefined);
  assert.equal(parseIpv6("1:2:3:4:5:6:7:8")![15], 8);
});

Deno.test("formatIp with keepMapped prints GIDs the way ibv_devinfo does", () => {
  const gid = new Uint8Array(16);
  gid.set([0xfe, 0x80], 0);
  gid.set([0x98, 0x65, 0xf9, 0xff, 0xfe, 0x66, 0x55, 0x66], 8);
  assert.equal(formatIp(gid, { keepMapped: true }), "fe80::9865:f9ff:fe66:5566");
  const mapped = new Uint8Array(16);
  mapped.set([0xff, 0xff, 10, 77, 0, 1], 10);
  assert.equal(formatIp(mapped, { keepMapped: true }), "::ffff:10.77.0.1");
  assert.equal(formatIp(parseIpv6("1:0:0:2:0:0:0:3")!, { keepMapped: true }), "1:0:0:2::3");
});

Deno.test("enum names: CM events, QP states, WC statuses, reject reasons, MTUs", () => {
  assert.equal(cmEventName(8), "REJECTED");
  assert.equal(cmEventName(99), "UNKNOWN_EVENT_99");
  assert.equal(qpStateName(3), "RTS");
  assert.equal(wcStatusName(10), "IBV_WC_REM_ACCESS_ERR");
  assert.equal(wcStatusName(12), "IBV_WC_RETRY_EXC_ERR");
  assert.equal(wcStatusName(5), "IBV_WC_WR_FLUSH_ERR");
  assert.equal(IB_CM_REJ_REASON[8], "INVALID_SERVICE_ID");
  assert.equal(IB_CM_REJ_REASON[28], "CONSUMER_DEFINED");
  assert.deepEqual([1, 2, 3, 4, 5, 0].map(mtuBytes), [256, 512, 1024, 2048, 4096, 0]);
});

/** The address of libc's `abs` and `div`-free int functions, to call through a pointer. */
function libcFunction(name: "abs" | "toupper"): Deno.PointerObject {
  const lib = Deno.dlopen("/lib/x86_64-linux-gnu/libc.so.6", { [name]: { type: "pointer" } });
  return (lib.symbols as Record<string, Deno.PointerObject>)[name];
}

Deno.test("NativeCall calls a C function pointer through libffi's ffi_call", () => {
  assert.ok(usingLibffi(), "libffi.so.8 should be present where the tests run");
  const call = new NativeCall(libcFunction("abs"), ["i32"]);
  call.setI32(0, -42);
  assert.equal(call.invoke(), 42);
  call.setI32(0, 7);
  assert.equal(call.invoke(), 7);
});

Deno.test("NativeCall falls back to UnsafeFnPointer without libffi (NVMEOF_NO_LIBFFI=1)", async () => {
  const code = `
    import { NativeCall, usingLibffi } from "${new URL("../../ffi/libffi.ts", import.meta.url)}";
    const lib = Deno.dlopen("/lib/x86_64-linux-gnu/libc.so.6", { toupper: { type: "pointer" } });
    const c = new NativeCall(lib.symbols.toupper, ["i32"]);
    c.setI32(0, 97);
    console.log(usingLibffi(), c.invoke());`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", code],
    env: { NVMEOF_NO_LIBFFI: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(text, "false 65", new TextDecoder().decode(out.stderr));
});
