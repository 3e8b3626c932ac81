/**
 * The doctor's verdicts below NVMe: target unreachable (no route, no ARP answer) vs up but
 * nothing listening (reject reason 8), RoCE v2 blocked (IP answers, the CM is silent), and an MTU
 * mismatch seen by DF echoes; plus the /proc parsers they read.
 */
import assert from "node:assert/strict";
import {
  addressCheck,
  type IpView,
  listenerCheck,
  mtuProbeSizes,
  type MtuView,
  pathMtuCheck,
  roceV2Check,
} from "../../src/doctor/ip_checks.ts";
import { snmpCounter } from "../../src/doctor/ip_probe.ts";
import { parseArp } from "../../src/net/neighbour.ts";
import type { ProbeOutcome } from "../../src/nvme/admin_probe.ts";

const UP: IpView = {
  traddr: "10.78.0.1",
  dev: "fab0",
  echo: { ipSize: 84, answered: true, rttMs: 0.8 },
  neighbour: { state: "resolved", address: "10.78.0.1", mac: "52:54:00:78:00:01", device: "fab0" },
};
const SILENT: IpView = {
  traddr: "10.78.0.99",
  dev: "fab0",
  echo: { ipSize: 84, answered: false, error: "EHOSTUNREACH" },
  neighbour: { state: "failed", address: "10.78.0.99", device: "fab0" },
};

function probe(p: Partial<ProbeOutcome>): ProbeOutcome {
  return {
    traddr: "10.78.0.1",
    trsvcid: 4420,
    stage: "connect",
    event: "REJECTED",
    status: 8,
    privateData: new Uint8Array(0),
    ...p,
  };
}

Deno.test("/proc/net/arp: a complete entry is resolved, flags 0x0 is a failed one, others absent", () => {
  const text = "IP address       HW type     Flags       HW address            Mask     Device\n" +
    "10.78.0.1        0x1         0x2         52:54:00:78:00:01     *        fab0\n" +
    "10.78.0.99       0x1         0x0         00:00:00:00:00:00     *        fab0\n";
  assert.deepEqual(parseArp(text, "10.78.0.1"), {
    state: "resolved",
    address: "10.78.0.1",
    mac: "52:54:00:78:00:01",
    device: "fab0",
  });
  assert.equal(parseArp(text, "10.78.0.99")?.state, "failed");
  assert.equal(parseArp(text, "10.78.0.3"), undefined);
});

Deno.test("/proc/net/snmp and snmp6 counters are read by name", () => {
  const snmp = "Ip: Forwarding DefaultTTL InReceives ReasmReqds ReasmOKs\nIp: 1 64 100 14 2\n" +
    "Icmp: InMsgs\nIcmp: 3\n";
  assert.equal(snmpCounter(snmp, "Ip", "ReasmReqds"), 14);
  assert.equal(snmpCounter("Ip6InReceives 5\nIp6ReasmReqds 7\n", "Ip6", "ReasmReqds"), 7);
  assert.equal(snmpCounter(snmp, "Ip", "Nope"), undefined);
});

Deno.test("target unreachable: no ARP answer and no echo is a failure naming the address and link", () => {
  const c = addressCheck(SILENT);
  assert.equal(c.id, "reach.address");
  assert.equal(c.status, "fail");
  assert.match(c.seen, /^target unreachable: 10\.78\.0\.99 did not answer ARP on fab0/);
  assert.match(c.fix!, /ip -br addr \| grep -w 10\.78\.0\.99/);
});

Deno.test("target unreachable over tcp: the fixes name the fabric netdev, not an RDMA one", () => {
  assert.match(addressCheck(SILENT).fix!, /on its RDMA netdev, state UP/);
  const c = addressCheck(SILENT, "tcp");
  assert.equal(c.status, "fail");
  assert.match(c.fix!, /on its fabric netdev, state UP/);
  assert.doesNotMatch(c.fix!, /RDMA/);
  const r = addressCheck({ traddr: "10.99.0.1", routeError: "Network is unreachable" }, "tcp");
  assert.match(r.fix!, /through the fabric netdev: ip route add SUBNET dev IFACE/);
});

Deno.test("target unreachable: no route is its own failure", () => {
  const c = addressCheck({
    traddr: "10.99.0.1",
    routeError: "RTNETLINK answers: Network is unreachable",
  });
  assert.equal(c.status, "fail");
  assert.match(c.seen, /no route to 10\.99\.0\.1 \(RTNETLINK answers: Network is unreachable\)/);
});

Deno.test("an address that answers echo is ok; ARP without echo warns that ICMP is filtered", () => {
  assert.equal(addressCheck(UP).status, "ok");
  const c = addressCheck({ ...UP, echo: { ipSize: 84, answered: false } });
  assert.equal(c.status, "warn");
  assert.match(c.seen, /answers ARP \(52:54:00:78:00:01 on fab0\) but not ICMP echo/);
});

Deno.test("target up but nothing listening: reject reason 8 from an address that answers IP", () => {
  const c = listenerCheck(probe({}), UP);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /^target up but nothing listening: 10\.78\.0\.1 answers ICMP echo in 0\.8 ms, but nothing listens at 10\.78\.0\.1:4420/,
  );
  assert.match(c.fix!, /addr_trsvcid/);
});

Deno.test("silence from an unreachable address is left to reach.address, not called a listener problem", () => {
  const c = listenerCheck(probe({ event: "ADDR_ERROR", stage: "address", status: -110 }), SILENT);
  assert.equal(c.status, "skip");
  assert.match(c.seen, /see reach\.address/);
  assert.equal(
    roceV2Check(probe({ event: "ADDR_ERROR", stage: "address" }), SILENT).status,
    "skip",
  );
  // The CM's own wait may end first: a TIMEOUT at the address step is the same silence.
  const early = listenerCheck(probe({ event: "TIMEOUT", stage: "address", status: 0 }), SILENT);
  assert.equal(early.status, "skip");
  assert.match(early.seen, /see reach\.address/);
});

Deno.test("RoCE v2 blocked: IP answers but the CM never replies; the fix names UDP 4791 and not TCP 4420", () => {
  const silent = probe({ event: "TIMEOUT", status: 0, timeoutMs: 5000, attempts: 2 });
  const c = roceV2Check(silent, UP);
  assert.equal(c.id, "reach.roce_v2");
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /^RoCE v2 blocked: 10\.78\.0\.1 answers ICMP echo in 0\.8 ms, but RDMA-CM got no reply at all/,
  );
  assert.match(c.seen, /to 2 connect request\(s\), 5000 ms each: UDP port 4791/);
  assert.match(c.fix!, /^on the target: nft list ruleset \| grep 4791; allow udp dport 4791/);
  assert.match(c.fix!, /Opening TCP 4420 is not what RoCE v2 needs/);
  assert.equal(listenerCheck(silent, UP).status, "skip");
  // ARP alone proves the address is up too
  const arpOnly = roceV2Check(probe({ event: "UNREACHABLE", status: -110 }), {
    ...UP,
    echo: { ipSize: 84, answered: false },
  });
  assert.equal(arpOnly.status, "fail");
  assert.match(arpOnly.seen, /answers ARP/);
});

Deno.test("any CM answer, a reject included, proves RoCE v2 gets through", () => {
  assert.equal(roceV2Check(probe({}), UP).status, "ok");
  assert.equal(roceV2Check(probe({ event: "ESTABLISHED", status: 0 }), UP).status, "ok");
  assert.equal(roceV2Check(undefined, UP).status, "skip");
});

const JUMBO: Omit<MtuView, "probes"> = { netdev: "fab0", netdevMtu: 9000, roceMtu: 4096 };

Deno.test("MTU probe sizes: the netdev MTU, 1500 and 1120 (RoCE 1024), none above the netdev's", () => {
  assert.deepEqual(mtuProbeSizes(9000), [9000, 1500, 1120]);
  assert.deepEqual(mtuProbeSizes(1500), [1500, 1120]);
});

Deno.test("MTU: a 9000-byte DF echo that comes back whole is ok", () => {
  const c = pathMtuCheck({
    ...JUMBO,
    probes: [{ ipSize: 9000, answered: true, rttMs: 1 }, { ipSize: 1500, answered: true }],
  }, UP);
  assert.equal(c.id, "reach.path_mtu");
  assert.equal(c.status, "ok");
  assert.match(c.seen, /carries 9000-byte packets both ways/);
});

Deno.test("MTU mismatch: a reply in fragments says the target sends smaller packets; fix names both sides", () => {
  const c = pathMtuCheck({
    ...JUMBO,
    probes: [{ ipSize: 9000, answered: true, fragments: 7 }, { ipSize: 1500, answered: true }],
  }, UP);
  assert.equal(c.status, "fail");
  assert.match(c.seen, /^MTU mismatch: the target answered a 9000-byte DF echo in 7 fragments/);
  assert.match(c.seen, /RoCE path MTU: this host's side 4096, the target's side at most 1024/);
  assert.equal(
    c.fix,
    "set fab0's MTU to 1500 on this host (ip link set fab0 mtu 1500), or the target's RDMA netdev " +
      "(and every switch port between; on a Linux bridge, the bridge and all its ports) to 9000",
  );
});

Deno.test("MTU mismatch: a large DF echo unanswered while 1500 is answered", () => {
  const c = pathMtuCheck({
    ...JUMBO,
    probes: [{ ipSize: 9000, answered: false }, { ipSize: 1500, answered: true }],
  }, UP);
  assert.equal(c.status, "fail");
  assert.match(c.seen, /a 9000-byte DF echo got no answer while smaller ones did/);
  const e = pathMtuCheck({
    ...JUMBO,
    probes: [{ ipSize: 9000, answered: false, error: "EMSGSIZE" }],
  }, UP);
  assert.match(e.seen, /cannot send 9000 bytes with DF.*EMSGSIZE/);
});

Deno.test("MTU: no echo reply at all, or no netdev, is a skip", () => {
  assert.equal(pathMtuCheck({ ...JUMBO, probes: [] }, SILENT).status, "skip");
  assert.equal(pathMtuCheck(undefined, UP).status, "skip");
});
