/**
 * The NVMe/TCP connection-setup PDUs, byte for byte against include/linux/nvme-tcp.h: the ICReq a
 * Linux host sends, the ICResp nvmet-tcp answers with, and the C2HTermReq it ends a connection with.
 */
import assert from "node:assert/strict";
import {
  decodeIcResp,
  decodePduHeader,
  decodeTermReq,
  encodeIcReq,
  IC_PDU_SIZE,
  NVME_TCP_DIGEST,
  NVME_TCP_PDU,
} from "../../src/fabrics/tcp_pdu.ts";

/** The ICResp nvmet-tcp sends (drivers/nvme/target/tcp.c nvmet_tcp_handle_icreq). */
function nvmetIcResp(o: { digest?: number; maxdata?: number; cpda?: number; pfv?: number } = {}) {
  const b = new Uint8Array(128);
  const dv = new DataView(b.buffer);
  b[0] = 0x01;
  b[2] = 128;
  dv.setUint32(4, 128, true);
  dv.setUint16(8, o.pfv ?? 0, true);
  b[10] = o.cpda ?? 0;
  b[11] = o.digest ?? 0;
  dv.setUint32(12, o.maxdata ?? 0x400000, true);
  return b;
}

Deno.test("encodeIcReq lays out the 128-byte ICReq a Linux host sends: type 0, hlen 128, pdo 0, plen 128, PFV 0, HPDA 0, no digests, MAXR2T 0", () => {
  const b = encodeIcReq();
  assert.equal(b.length, 128);
  const dv = new DataView(b.buffer);
  assert.deepEqual([b[0], b[1], b[2], b[3]], [0x00, 0, 128, 0]);
  assert.equal(dv.getUint32(4, true), 128);
  assert.equal(dv.getUint16(8, true), 0); // pfv
  assert.equal(b[10], 0); // hpda
  assert.equal(b[11], 0); // digest
  assert.equal(dv.getUint32(12, true), 0); // maxr2t
  assert.ok(b.subarray(16).every((x) => x === 0), "reserved bytes are zero");
});

Deno.test("encodeIcReq sets the digest bits and the alignment it is asked for", () => {
  const b = encodeIcReq({ hdgst: true, ddgst: true, hpda: 3, maxr2t: 7 });
  assert.equal(b[11], NVME_TCP_DIGEST.HDR | NVME_TCP_DIGEST.DATA);
  assert.equal(b[11], 0x03);
  assert.equal(b[10], 3);
  assert.equal(new DataView(b.buffer).getUint32(12, true), 7);
  assert.equal(encodeIcReq({ ddgst: true })[11], 0x02);
});

Deno.test("decodePduHeader reads type, flags, hlen, pdo and the little-endian plen; fewer than 8 bytes is no header", () => {
  const h = decodePduHeader(new Uint8Array([5, 1, 24, 0, 0x10, 0x02, 0, 0]));
  assert.deepEqual(h, { type: 5, flags: 1, hlen: 24, pdo: 0, plen: 0x210 });
  assert.equal(decodePduHeader(new Uint8Array(7)), undefined);
});

Deno.test("decodeIcResp reads nvmet-tcp's ICResp: PFV 0, CPDA 0, digests, MAXH2CDATA 4 MiB", () => {
  assert.deepEqual(decodeIcResp(nvmetIcResp()), {
    pfv: 0,
    cpda: 0,
    hdgst: false,
    ddgst: false,
    maxh2cdata: 0x400000,
  });
  const d = decodeIcResp(nvmetIcResp({ digest: 0x01, maxdata: 131072, cpda: 1 }));
  assert.ok(!("error" in d));
  assert.equal(d.hdgst, true);
  assert.equal(d.ddgst, false);
  assert.equal(d.cpda, 1);
  assert.equal(d.maxh2cdata, 131072);
});

Deno.test("decodeIcResp says why bytes are not an ICResp: short, another type, wrong lengths, cut short", () => {
  assert.match((decodeIcResp(new Uint8Array(3)) as { error: string }).error, /3 byte\(s\)/);
  assert.match(
    (decodeIcResp(encodeIcReq()) as { error: string }).error,
    /PDU type 0, not ICResp/,
  );
  const http = new TextEncoder().encode("HTTP/1.1 400 Bad Request\r\n\r\n");
  assert.match((decodeIcResp(http) as { error: string }).error, /PDU type 72/);
  const badLen = nvmetIcResp();
  badLen[2] = 24;
  assert.match((decodeIcResp(badLen) as { error: string }).error, /hlen 24, pdo 0, plen 128/);
  assert.match(
    (decodeIcResp(nvmetIcResp().subarray(0, 64)) as { error: string }).error,
    /cut short at 64 of 128/,
  );
  assert.equal(IC_PDU_SIZE, 128);
});

Deno.test("decodeTermReq reads a C2HTermReq's FES and FEI; other PDUs are not one", () => {
  const b = new Uint8Array(24);
  const dv = new DataView(b.buffer);
  b[0] = NVME_TCP_PDU.C2H_TERM;
  b[2] = 24;
  dv.setUint32(4, 24, true);
  dv.setUint16(8, 0x06, true);
  dv.setUint32(10, 10, true);
  assert.deepEqual(decodeTermReq(b), { type: 0x03, fes: 6, fei: 10 });
  assert.equal(decodeTermReq(nvmetIcResp()), undefined);
  assert.equal(decodeTermReq(b.subarray(0, 16)), undefined);
});
