/**
 * The doctor's NVMe/TCP listener probe against fake servers on 127.0.0.1 (a port nobody holds, a
 * server that says nothing, one that answers like another service, one that answers like
 * nvmet-tcp), and the verdict on each outcome, the timeout evidence included.
 */
import assert from "node:assert/strict";
import {
  classifyTcpProbe,
  icrespProblems,
  probeNvmeTcp,
  type TcpProbeOutcome,
} from "../../src/doctor/reach_tcp.ts";
import { encodeIcReq } from "../../src/fabrics/tcp_pdu.ts";
import type { IpView } from "../../src/doctor/ip_checks.ts";

const LO = "127.0.0.1";

/** nvmet-tcp's ICResp (maxdata 4 MiB). */
function icresp(o: { digest?: number; maxdata?: number; cpda?: number } = {}): Uint8Array {
  const b = new Uint8Array(128);
  const dv = new DataView(b.buffer);
  b[0] = 0x01;
  b[2] = 128;
  dv.setUint32(4, 128, true);
  b[10] = o.cpda ?? 0;
  b[11] = o.digest ?? 0;
  dv.setUint32(12, o.maxdata ?? 0x400000, true);
  return b;
}

async function readFull(c: Deno.Conn, n: number): Promise<Uint8Array | undefined> {
  const b = new Uint8Array(n);
  let got = 0;
  while (got < n) {
    const r = await c.read(b.subarray(got));
    if (r === null) return undefined;
    got += r;
  }
  return b;
}

/**
 * A server on 127.0.0.1 that handles one connection with `serve`, records what it read and
 * whether the client closed its side after; closed by `await using`.
 */
function fakeServer(serve: (c: Deno.Conn) => Promise<void>) {
  const l = Deno.listen({ hostname: LO, port: 0 });
  const seen: { icreq?: Uint8Array; clientFin?: boolean } = {};
  const done = (async () => {
    const c = await l.accept();
    try {
      await serve(c);
    } finally {
      try {
        c.close();
      } catch { /* closed by serve */ }
    }
  })().catch(() => {});
  return {
    port: (l.addr as Deno.NetAddr).port,
    seen,
    /** Reads the ICReq, then answers with `reply`, then waits for the client's FIN and closes. */
    async [Symbol.asyncDispose]() {
      l.close();
      await done;
    },
  };
}

/** Reads the ICReq (recording it), answers, waits for the client's FIN, closes. */
function answering(reply: Uint8Array, seen: { icreq?: Uint8Array; clientFin?: boolean }) {
  return async (c: Deno.Conn) => {
    seen.icreq = await readFull(c, 128);
    await c.write(reply);
    seen.clientFin = (await c.read(new Uint8Array(1))) === null;
  };
}

Deno.test("tcp probe: a good ICResp is an NVMe/TCP listener: PFV, digests, MAXH2CDATA named; the client sent only the ICReq and closed its side", async () => {
  const seen: { icreq?: Uint8Array; clientFin?: boolean } = {};
  await using s = fakeServer(answering(icresp(), seen));
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 3000 });
  assert.equal(o.result, "icresp");
  assert.deepEqual(o.icresp, { pfv: 0, cpda: 0, hdgst: false, ddgst: false, maxh2cdata: 4194304 });
  assert.equal(o.targetClose, "fin");
  assert.deepEqual(seen.icreq, encodeIcReq());
  assert.equal(seen.clientFin, true, "the probe sends nothing after the ICReq but its FIN");
  const c = classifyTcpProbe(o);
  assert.equal(c.id, "reach.listener");
  assert.equal(c.status, "ok");
  assert.match(
    c.seen,
    new RegExp(
      `^an NVMe/TCP target answers at 127\\.0\\.0\\.1:${s.port}: ICResp PFV 0 \\(1\\.0\\), no digests, CPDA 0, MAXH2CDATA 4194304 bytes`,
    ),
  );
  assert.match(
    c.seen,
    /closed again: the target ended its side \d+ ms after this one \(FIN\): no queue left behind/,
  );
  assert.equal(c.fix, undefined);
  assert.equal(c.found?.result, "icresp");
  assert.deepEqual(c.found?.icresp, o.icresp);
});

Deno.test("tcp verdict: a target that ends its side with a reset after the probe's FIN (nvmet-tcp's SO_LINGER 0) has released the queue", () => {
  const c = classifyTcpProbe({
    traddr: "10.0.0.2",
    trsvcid: 4420,
    result: "icresp",
    timeoutMs: 5000,
    connectMs: 2,
    icresp: { pfv: 0, cpda: 0, hdgst: false, ddgst: false, maxh2cdata: 4194304 },
    targetClose: "reset",
    targetCloseMs: 12,
  });
  assert.equal(c.status, "ok");
  assert.match(
    c.seen,
    /closed again: the target ended its side 12 ms after this one \(reset, as nvmet-tcp closes a queue\): no queue left behind/,
  );
  assert.equal(c.found?.target_close, "reset");
  assert.equal(c.found?.target_close_ms, 12);
});

Deno.test("tcp probe: a target that keeps its side open after the ICResp and the probe's FIN is named, bounded by the timeout", async () => {
  await using s = fakeServer(async (c) => {
    await readFull(c, 128);
    await c.write(icresp());
    await c.read(new Uint8Array(1)); // the FIN
    await new Promise((r) => setTimeout(r, 800)); // and stays open past the probe's bound
  });
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 300 });
  assert.equal(o.result, "icresp");
  assert.equal(o.targetClose, "open");
  assert.match(classifyTcpProbe(o).seen, /the target had not closed its own 300 ms later/);
});

Deno.test("tcp probe: a port with no listener is 'refused' (ECONNREFUSED), with the tcp port to create", async () => {
  const l = Deno.listen({ hostname: LO, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const o = await probeNvmeTcp(LO, port, { timeoutMs: 3000 });
  assert.equal(o.result, "refused");
  assert.equal(o.errno, "ECONNREFUSED");
  const c = classifyTcpProbe(o);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    new RegExp(
      `^nothing listens at 127\\.0\\.0\\.1:${port}: the TCP connect was refused \\(ECONNREFUSED\\)`,
    ),
  );
  assert.match(c.fix!, /create a tcp port for 127\.0\.0\.1 \d+ and link a subsystem/);
  assert.match(c.fix!, /echo tcp > addr_trtype; echo ipv4 > addr_adrfam/);
  assert.deepEqual(c.found, { trtype: "tcp", result: "refused", errno: "ECONNREFUSED" });
});

Deno.test("tcp probe: a server that accepts and says nothing is 'not an NVMe/TCP target', after the bound", async () => {
  await using s = fakeServer(async (c) => {
    await readFull(c, 128);
    await c.read(new Uint8Array(1)); // until the probe gives up and closes
  });
  const t0 = Date.now();
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 400 });
  const took = Date.now() - t0;
  assert.equal(o.result, "silent");
  assert.ok(took >= 390 && took < 3000, `waited ${took} ms for a 400 ms bound`);
  const c = classifyTcpProbe(o);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /accepted the TCP connection .* but sent nothing back to the NVMe\/TCP ICReq within 400 ms: it is not an NVMe\/TCP target/,
  );
  assert.match(c.fix!, /ss -ltnp 'sport = :\d+'/);
});

Deno.test("tcp probe: a reply that is not an ICResp (an HTTP server) is 'something other than an NVMe/TCP target', bytes shown", async () => {
  const seen = {};
  await using s = fakeServer(
    answering(new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n"), seen),
  );
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 3000 });
  assert.equal(o.result, "not_icresp");
  const c = classifyTcpProbe(o);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /^something other than an NVMe\/TCP target listens at 127\.0\.0\.1:\d+: .*PDU type 72, not ICResp/,
  );
  assert.match(c.seen, /'HTTP\/1\.1 400 Bad Request/);
  assert.equal(c.found?.result, "not_icresp");
});

Deno.test("tcp probe: a server that closes at once without a byte is 'closed', naming the ICReq refusal and TLS", async () => {
  await using s = fakeServer(async (c) => {
    await readFull(c, 128);
    c.close();
  });
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 3000 });
  assert.equal(o.result, "closed");
  const c = classifyTcpProbe(o);
  assert.equal(c.status, "fail");
  assert.match(c.seen, /accepted, then closed without an answer to the ICReq/);
  assert.match(c.seen, /requires TLS/);
  assert.match(c.fix!, /dmesg \| grep nvmet_tcp/);
});

Deno.test("tcp probe: a C2HTermReq is an NVMe/TCP target that refused the ICReq, with FES named", async () => {
  const term = new Uint8Array(24);
  term[0] = 0x03;
  term[2] = 24;
  new DataView(term.buffer).setUint32(4, 24, true);
  new DataView(term.buffer).setUint16(8, 0x06, true);
  await using s = fakeServer(answering(term, {}));
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 3000 });
  assert.equal(o.result, "term");
  const c = classifyTcpProbe(o);
  assert.equal(c.status, "fail");
  assert.match(c.seen, /terminate request: FES 6 \(unsupported parameter\), FEI 0/);
});

Deno.test("tcp probe: an ICResp a Linux host would refuse (CPDA, unasked digests, small MAXH2CDATA) fails, naming each field", async () => {
  await using s = fakeServer(answering(icresp({ cpda: 2, digest: 0x02, maxdata: 1000 }), {}));
  const o = await probeNvmeTcp(LO, s.port, { timeoutMs: 3000 });
  assert.equal(o.result, "icresp");
  const c = classifyTcpProbe(o);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /a Linux host refuses: digests turned on that were not asked for; CPDA 2 .*; MAXH2CDATA 1000/,
  );
  assert.deepEqual(
    icrespProblems({ pfv: 0, cpda: 0, hdgst: false, ddgst: false, maxh2cdata: 4096 }),
    [],
  );
  assert.equal(
    icrespProblems({ pfv: 0, cpda: 0, hdgst: false, ddgst: false, maxh2cdata: 4098 }).length,
    1,
  );
});

function timedOut(): TcpProbeOutcome {
  return { traddr: "10.0.0.2", trsvcid: 4420, result: "timeout", timeoutMs: 5000 };
}

Deno.test("tcp timeout: the address answers ICMP echo, so a firewall drops the port", () => {
  const ip: IpView = { traddr: "10.0.0.2", echo: { answered: true, rttMs: 0.4 } as IpView["echo"] };
  const c = classifyTcpProbe(timedOut(), ip);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /^TCP port 4420 blocked: 10\.0\.0\.2 answers ICMP echo in 0\.4 ms, but the TCP connect .* a firewall drops it/,
  );
  assert.match(c.fix!, /nft list ruleset \| grep 4420/);
});

Deno.test("tcp timeout: the address answers neither echo nor ARP, so the address is wrong or the target down", () => {
  const ip: IpView = {
    traddr: "10.0.0.2",
    neighbour: { state: "failed", address: "10.0.0.2" },
  };
  const c = classifyTcpProbe(timedOut(), ip);
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /timed out after 5000 ms and 10\.0\.0\.2 answers neither ICMP echo nor ARP: the address is wrong or the target is down/,
  );
});

Deno.test("tcp probe: an address this host cannot connect to at all is a skip, not a verdict", async () => {
  const o = await probeNvmeTcp("not an address", 4420, { timeoutMs: 1000 });
  assert.equal(o.result, "local_error");
  assert.equal(classifyTcpProbe(o).status, "skip");
});
