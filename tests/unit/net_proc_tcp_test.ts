/**
 * /proc/net/tcp and /proc/net/tcp6 as the kernel prints them (lines taken in the lab from a
 * storage server serving nvmet-tcp on 10.78.0.1:4421, and IPv6 ones of the same form).
 */
import assert from "node:assert/strict";
import { establishedTcp, parseProcNetTcp, TCP_ESTABLISHED } from "../../src/net/proc_tcp.ts";
import { tempDir } from "../helpers.ts";

const TCP4 =
  `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 01004E0A:1145 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12446 1 00000000691e7dcf 100 0 0 10 0
   1: 01004E0A:1145 02004E0A:E354 01 00000000:00000000 00:00000000 00000000     0        0 12450 1 00000000df240fd6 21 4 29 10 -1
`;

// fd00::1 port 4420 listening; fd00::1:4420 ← fd00::2:50000; ::ffff:10.78.0.1:4420 ← ::ffff:10.78.0.3:40000
const TCP6 =
  `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 000000FD000000000000000001000000:1144 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3001 1 0000000000000000 100 0 0 10 0
   1: 000000FD000000000000000001000000:1144 000000FD000000000000000002000000:C350 01 00000000:00000000 00:00000000 00000000     0        0 3002 1 0000000000000000 20 4 30 10 -1
   2: 0000000000000000FFFF000001004E0A:1144 0000000000000000FFFF000003004E0A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3003 1 0000000000000000 20 4 30 10 -1
`;

Deno.test("parseProcNetTcp reads IPv4 lines: addresses in memory order, ports in hex", () => {
  const c = parseProcNetTcp(TCP4);
  assert.equal(c.length, 2);
  assert.deepEqual(c[0], {
    local: { address: "10.78.0.1", port: 4421 },
    remote: { address: "0.0.0.0", port: 0 },
    state: 0x0a,
  });
  assert.deepEqual(c[1].remote, { address: "10.78.0.2", port: 0xe354 });
  assert.equal(c[1].state, TCP_ESTABLISHED);
});

Deno.test("parseProcNetTcp reads IPv6 lines word by word, IPv4-mapped peers as IPv4", () => {
  const c = parseProcNetTcp(TCP6);
  assert.deepEqual(c.map((x) => [x.local.address, x.local.port, x.remote.address, x.remote.port]), [
    ["fd00::1", 4420, "::", 0],
    ["fd00::1", 4420, "fd00::2", 50000],
    ["10.78.0.1", 4420, "10.78.0.3", 40000],
  ]);
});

Deno.test("parseProcNetTcp ignores the header and malformed lines", () => {
  assert.deepEqual(parseProcNetTcp("sl local_address\n  0: zz:1 00:00 01\n\n"), []);
});

Deno.test("establishedTcp reads tcp and tcp6 below a stand-in procfs root and keeps ESTABLISHED", async () => {
  await using t = await tempDir();
  Deno.mkdirSync(`${t.path}/net`);
  Deno.writeTextFileSync(`${t.path}/net/tcp`, TCP4);
  Deno.writeTextFileSync(`${t.path}/net/tcp6`, TCP6);
  const c = establishedTcp(t.path);
  assert.deepEqual(c.map((x) => x.remote.address), ["10.78.0.2", "fd00::2", "10.78.0.3"]);
  assert.deepEqual(establishedTcp(`${t.path}/missing`), []);
});
