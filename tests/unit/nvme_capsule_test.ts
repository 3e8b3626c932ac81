import assert from "node:assert/strict";
import {
  connectSqe,
  decodeCqe,
  encodeConnectData,
  encodeRdmaCmRequest,
  getLogPageSqe,
  identifySqe,
  PROP,
  propertyGetSqe,
  propertySetSqe,
  rwSqe,
  Sqe,
} from "../../src/nvme/capsule.ts";
import { decodeStatus, NvmeStatusError, statusHex } from "../../src/fabrics/nvme_status.ts";
import {
  CC_ENABLE,
  decodeCap,
  decodeIdentifyController,
  decodeIdentifyNamespace,
  decodeNamespaceList,
  sglSupport,
} from "../../src/nvme/identify.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("Connect SQE: opcode 7f, SGL flags, fctype 1, qid/sqsize/kato, keyed SGL at 24", () => {
  const s = connectSqe(new Sqe(), 5, { qid: 3, sqsize: 31, kato: 15000 }, {
    addr: 0x1122334455667788n,
    length: 1024,
    key: 0xaabbccdd,
  });
  const b = s.bytes;
  assert.equal(b[0], 0x7f);
  assert.equal(b[1], 0x40);
  assert.equal(hex(b.subarray(2, 4)), "0500");
  assert.equal(b[4], 0x01);
  assert.equal(hex(b.subarray(24, 40)), "8877665544332211" + "000400" + "ddccbbaa" + "40");
  assert.equal(hex(b.subarray(40, 52)), "0000" + "0300" + "1f00" + "00" + "00" + "983a0000");
});

Deno.test("Connect data: hostid bytes, cntlid, NQNs at 256 and 512", () => {
  const d = encodeConnectData({
    hostid: "11111111-2222-3333-4444-555555555555",
    cntlid: 0xffff,
    subnqn: "nqn.a",
    hostnqn: "nqn.h",
  });
  assert.equal(d.length, 1024);
  assert.equal(hex(d.subarray(0, 18)), "11111111222233334444555555555555ffff");
  assert.equal(new TextDecoder().decode(d.subarray(256, 261)), "nqn.a");
  assert.equal(d[261], 0);
  assert.equal(new TextDecoder().decode(d.subarray(512, 517)), "nqn.h");
});

Deno.test("Property Get/Set: fctype, attrib (size), offset, value; null SGL", () => {
  const g = propertyGetSqe(new Sqe(), 1, PROP.CAP).bytes;
  assert.deepEqual([g[0], g[4], g[40], g[44]], [0x7f, 0x04, 1, 0x00]);
  assert.equal(hex(g.subarray(24, 40)), "00".repeat(15) + "40");
  const s = propertySetSqe(new Sqe(), 1, PROP.CC, BigInt(CC_ENABLE)).bytes;
  assert.deepEqual([s[4], s[40], s[44]], [0x00, 0, 0x14]);
  assert.equal(hex(s.subarray(48, 56)), "0100460000000000");
});

Deno.test("Identify, Get Log Page and Read SQEs put the dwords where the spec says", () => {
  const sgl = { addr: 0x1000n, length: 4096, key: 7 };
  const i = identifySqe(new Sqe(), 2, 1, 0, sgl).bytes;
  assert.deepEqual([i[0], i[40], i[32], i[33], i[34]], [0x06, 1, 0x00, 0x10, 0x00]);
  const l = getLogPageSqe(new Sqe(), 4, 0x70, 1024, { ...sgl, length: 2048 }).bytes;
  const dv = new DataView(l.buffer);
  assert.equal(l[0], 0x02);
  assert.equal(dv.getUint32(40, true), 0x70 | (511 << 16));
  assert.equal(dv.getUint32(48, true), 1024);
  const r = rwSqe(new Sqe(), 0x02, 9, 1, 0x123456789, 8, sgl).bytes;
  const rv = new DataView(r.buffer);
  assert.equal(rv.getUint32(4, true), 1);
  assert.equal(rv.getBigUint64(40, true), 0x123456789n);
  assert.equal(rv.getUint16(48, true), 7);
  assert.throws(() => getLogPageSqe(new Sqe(), 4, 0x70, 2, sgl), RangeError);
});

Deno.test("CQE: result, sq head/id, cid, status without the phase bit", () => {
  const b = new Uint8Array(16);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, 0x1234n, true);
  dv.setUint16(8, 3, true);
  dv.setUint16(12, 17, true);
  dv.setUint16(14, (0x4184 << 1) | 1, true);
  const c = decodeCqe(b);
  assert.deepEqual(c, { result: 0x1234n, sqHead: 3, sqId: 0, cid: 17, status: 0x4184 });
  const info = decodeStatus(c.status, true);
  assert.equal(info.dnr, true);
  assert.match(info.name, /invalid host/);
  assert.equal(statusHex(c.status), "0x184");
  assert.match(decodeStatus(0x182, true).name, /CONNECT_INVALID_PARAM/);
  assert.match(decodeStatus(0x002).name, /invalid field/);
  assert.match(
    new NvmeStatusError("Connect", 0x4184, { fabrics: true, hostnqn: "nqn.h" }).hint!,
    /nqn\.h/,
  );
});

Deno.test("NVMe/RDMA CM request private data: recfmt 0, qid, hrqsize, hsqsize", () => {
  assert.equal(
    hex(encodeRdmaCmRequest({ qid: 0, hrqsize: 32, hsqsize: 31 })),
    "0000" + "0000" + "2000" + "1f00" + "00".repeat(24),
  );
});

Deno.test("Identify controller/namespace/list and CAP decode from hand-built bytes", () => {
  const c = new Uint8Array(4096);
  const cv = new DataView(c.buffer);
  c.set(new TextEncoder().encode("SN123               "), 4);
  c.set(new TextEncoder().encode("Linux model"), 24);
  c.set(new TextEncoder().encode("6.1.0   "), 64);
  c[77] = 5;
  cv.setUint16(78, 2, true);
  cv.setUint32(80, 0x010300, true);
  cv.setUint32(536, 0x100005, true);
  cv.setUint32(1792, 260, true);
  c.set(new TextEncoder().encode("nqn.x"), 768);
  const ic = decodeIdentifyController(c);
  assert.deepEqual([ic.sn, ic.mn, ic.fr, ic.mdts, ic.cntlid, ic.ver, ic.subnqn, ic.ioccsz], [
    "SN123",
    "Linux model",
    "6.1.0",
    5,
    2,
    "1.3",
    "nqn.x",
    260,
  ]);
  assert.deepEqual(sglSupport(ic.sgls), [
    "SGLs (no alignment)",
    "keyed SGL data block",
    "offset (in-capsule data)",
  ]);
  const n = new Uint8Array(4096);
  const nv = new DataView(n.buffer);
  nv.setBigUint64(0, 131072n, true);
  n[26] = 1;
  n[128 + 4 + 2] = 12;
  const ns = decodeIdentifyNamespace(n);
  assert.deepEqual([ns.nsze, ns.lbaSize], [131072n, 4096]);
  const l = new Uint8Array(4096);
  new DataView(l.buffer).setUint32(0, 1, true);
  new DataView(l.buffer).setUint32(4, 5, true);
  assert.deepEqual(decodeNamespaceList(l), [1, 5]);
  const cap = decodeCap((0x0n << 48n) | (0x1n << 37n) | (0x0fn << 24n) | 0x3ffn);
  assert.deepEqual([cap.mqes, cap.timeoutMs, cap.css, cap.mpsmin], [1024, 7500, 1, 0]);
});
