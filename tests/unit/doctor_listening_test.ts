/**
 * The doctor's verdict on whether an enabled nvmet rdma port is really bound, from the answer
 * to the admin-queue connect request sent to the port's own address.
 */
import assert from "node:assert/strict";
import type { LivePort } from "../../src/configfs/nvmet.ts";
import {
  classifyListening,
  classifyTcpListening,
  tcpProbeAddress,
} from "../../src/doctor/listening.ts";
import type { TcpProbeOutcome } from "../../src/doctor/reach_tcp.ts";
import type { ProbeOutcome } from "../../src/nvme/admin_probe.ts";

const PORT: LivePort = {
  name: "3",
  id: 3,
  attr: { addr_trtype: "rdma", addr_traddr: "10.0.0.1", addr_trsvcid: "4420" },
  subsystems: ["nqn.2024-01.io.example:disk1"],
};

function outcome(p: Partial<ProbeOutcome>): ProbeOutcome {
  return {
    traddr: "10.0.0.1",
    trsvcid: 4420,
    stage: "connect",
    event: "ESTABLISHED",
    status: 0,
    privateData: new Uint8Array(0),
    ...p,
  };
}

Deno.test("a port that accepts the request is bound", () => {
  const c = classifyListening(PORT, outcome({}));
  assert.equal(c.id, "target.port.3.listening");
  assert.equal(c.status, "ok");
  assert.match(c.seen, /^port 3 answers at 10\.0\.0\.1:4420: bound/);
});

Deno.test("a port that rejects with NVMe/RDMA data is still bound", () => {
  const rej = new Uint8Array(148);
  new DataView(rej.buffer).setUint16(2, 6, true);
  assert.equal(
    classifyListening(PORT, outcome({ event: "REJECTED", status: 28, privateData: rej })).status,
    "ok",
  );
});

Deno.test("a linked port that does not answer was not bound: the fix reads the bind error and relinks", () => {
  const c = classifyListening(PORT, outcome({ event: "REJECTED", status: 8 }));
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /port 3 has 1 subsystem\(s\) linked but does not answer at 10\.0\.0\.1:4420/,
  );
  assert.match(c.fix!, /binding CM ID.*-99.*-19.*ports\/3\/subsystems\/NQN/);
});

Deno.test("a probe that could not run is a skip", () => {
  const c = classifyListening(PORT, outcome({ event: "NONE", localError: "no rdma_cm" }));
  assert.equal(c.status, "skip");
});

const TCP_PORT: LivePort = {
  name: "4",
  id: 4,
  attr: { addr_trtype: "tcp", addr_traddr: "10.0.0.1", addr_trsvcid: "4420" },
  subsystems: ["nqn.2024-01.io.example:disk1"],
};

function tcpOutcome(p: Partial<TcpProbeOutcome>): TcpProbeOutcome {
  return { traddr: "10.0.0.1", trsvcid: 4420, result: "icresp", timeoutMs: 5000, ...p };
}

Deno.test("a tcp port whose listener answers the ICReq with an ICResp is bound; the ICResp is kept as data", () => {
  const icresp = { pfv: 0, cpda: 0, hdgst: false, ddgst: false, maxh2cdata: 4194304 };
  const c = classifyTcpListening(
    TCP_PORT,
    tcpOutcome({ icresp, connectMs: 1, targetClose: "reset", targetCloseMs: 3 }),
  );
  assert.equal(c.id, "target.port.4.listening");
  assert.equal(c.status, "ok");
  assert.match(c.seen, /^port 4 answers at 10\.0\.0\.1:4420: bound, NVMe\/TCP target answers/);
  assert.deepEqual(c.found?.icresp, icresp);
});

Deno.test("a linked tcp port that refuses the connect was not bound: the fix reads nvmet_tcp's bind error and relinks", () => {
  const c = classifyTcpListening(
    TCP_PORT,
    tcpOutcome({ result: "refused", errno: "ECONNREFUSED" }),
  );
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /port 4 \(tcp\) has 1 subsystem\(s\) linked but its listener does not answer the ICReq at 10\.0\.0\.1:4420: nothing listens/,
  );
  assert.match(c.fix!, /dmesg \| grep nvmet_tcp .*ports\/4\/subsystems\/NQN/);
});

Deno.test("a tcp port is probed at its own address when local, at loopback when it is the wildcard, not at all when remote", () => {
  const local = [{ name: "eth0", address: "10.0.0.1" }];
  assert.equal(tcpProbeAddress("10.0.0.1", local), "10.0.0.1");
  assert.equal(tcpProbeAddress("0.0.0.0", local), "127.0.0.1");
  assert.equal(tcpProbeAddress("::", local), "::1");
  assert.equal(tcpProbeAddress("10.0.0.9", local), undefined);
});

Deno.test("an IPv6 rdma port is named [address]:port, as the tcp one is", () => {
  const v6: LivePort = { ...PORT, attr: { ...PORT.attr, addr_traddr: "fd00::1" } };
  const ok = classifyListening(v6, outcome({ traddr: "fd00::1" }));
  assert.match(ok.seen, /^port 3 answers at \[fd00::1\]:4420: bound/);
  const silent = classifyListening(
    v6,
    outcome({ traddr: "fd00::1", event: "REJECTED", status: 8 }),
  );
  assert.match(silent.seen, /does not answer at \[fd00::1\]:4420/);
});
