import assert from "node:assert/strict";
import {
  decodeEntry,
  decodeHeader,
  decodeLog,
  DiscoveryLogError,
  encodeLog,
  getLogPageDwords,
  logToNvmeCli,
  logToText,
} from "../../src/fabrics/discovery_log.ts";
import { encodePassthru, PASSTHRU } from "../../src/fabrics/admin.ts";
import { ROOT } from "../helpers.ts";

// Captured in the lab guest (kernel 6.1, nvmet-rdma over rxe) with `nvme discover --raw`, next to
// what `nvme discover -o json` printed for the same log.
const FIXTURE = `${ROOT}/tests/fixtures/discovery_log_rdma_6.1.bin`;
const FIXTURE_JSON = `${ROOT}/tests/fixtures/discovery_log_rdma_6.1.nvme-cli.json`;

Deno.test("a discovery log captured from the kernel decodes to nvme-cli's JSON, key for key", async () => {
  const raw = await Deno.readFile(FIXTURE);
  const expected = JSON.parse(await Deno.readTextFile(FIXTURE_JSON));
  const ours = JSON.parse(
    JSON.stringify(logToNvmeCli(decodeLog(raw)), (_k, v) => typeof v === "bigint" ? Number(v) : v),
  );
  assert.deepEqual(ours, expected);
});

Deno.test("the captured log's header and entries have the kernel's values", async () => {
  const log = decodeLog(await Deno.readFile(FIXTURE));
  assert.equal(log.genctr, 5n);
  assert.equal(log.numrec, 4n);
  assert.equal(log.entries.length, 4);
  const [current, alpha, , referral] = log.entries;
  assert.equal(current.subtype, 3);
  assert.equal(alpha.subtype, 2);
  assert.equal(alpha.subnqn, "nqn.2024-01.io.nvmeof.fixture:alpha");
  assert.equal(alpha.traddr, "10.77.0.1");
  assert.equal(alpha.trsvcid, "4420");
  assert.equal(alpha.cntlid, 0xffff);
  assert.equal(alpha.asqsz, 32);
  assert.deepEqual(alpha.rdma, { qptype: 1, prtype: 1, cms: 1, pkey: 0 });
  assert.equal(referral.subtype, 1);
  assert.equal(referral.portid, 7);
  assert.equal(referral.traddr, "10.77.0.9");
});

Deno.test("text output follows nvme discover's layout", async () => {
  const text = logToText(decodeLog(await Deno.readFile(FIXTURE)));
  assert.match(text, /^\nDiscovery Log Number of Records 4, Generation counter 5\n/);
  assert.match(
    text,
    /=====Discovery Log Entry 1======\ntrtype: rdma\nadrfam: ipv4\nsubtype: nvme subsystem\n/,
  );
  assert.match(text, /rdma_cms: rdma-cm\nrdma_pkey: 0x0000/);
});

Deno.test("encode and decode are inverse", () => {
  const entry = {
    trtype: 1,
    adrfam: 2,
    subtype: 2,
    treq: 5,
    portid: 3,
    cntlid: 0xffff,
    asqsz: 32,
    eflags: 3,
    trsvcid: "4421",
    subnqn: "nqn.2024-01.io.example:x",
    traddr: "fe80::1",
    rdma: { qptype: 1, prtype: 4, cms: 1, pkey: 0xffff },
  };
  const log = decodeLog(encodeLog({ genctr: 9n, entries: [entry] }));
  assert.deepEqual(log.entries[0], entry);
  const r = logToNvmeCli(log).records[0];
  assert.equal(r.treq, "required, sq flow control disable supported");
  assert.equal(r.eflags, "explicit discovery connections, duplicate discovery information");
  assert.equal(r.rdma_prtype, "roce-v2");
});

Deno.test("a truncated header is a clear error, not a crash", () => {
  assert.throws(() => decodeHeader(new Uint8Array(19)), (e: Error) => {
    assert.ok(e instanceof DiscoveryLogError);
    assert.match(e.message, /header is truncated: 19 bytes, need 20/);
    return true;
  });
  assert.throws(() => decodeLog(new Uint8Array(0)), DiscoveryLogError);
});

Deno.test("a log shorter than its numrec announces is refused", async () => {
  const raw = await Deno.readFile(FIXTURE);
  assert.throws(
    () => decodeLog(raw.subarray(0, raw.length - 1)),
    /announces 4 records \(5120 bytes\), the buffer holds 5119/,
  );
  assert.throws(() => decodeEntry(new Uint8Array(1000)), /entry is truncated: 1000 of 1024/);
});

Deno.test("a corrupt header (huge numrec, unknown recfmt) is refused", () => {
  const buf = new Uint8Array(1024);
  const v = new DataView(buf.buffer);
  v.setBigUint64(8, 0xffffffffffffffffn, true);
  assert.throws(() => decodeHeader(buf), /claims 18446744073709551615 records.*corrupt/);
  v.setBigUint64(8, 0n, true);
  v.setUint16(16, 1, true);
  assert.throws(() => decodeHeader(buf), /record format 1/);
});

Deno.test("extra bytes after the announced entries are ignored", async () => {
  const raw = await Deno.readFile(FIXTURE);
  const bigger = new Uint8Array(raw.length + 4096);
  bigger.set(raw);
  bigger.fill(0xff, raw.length);
  assert.equal(decodeLog(bigger).entries.length, 4);
});

Deno.test("garbage strings decode without throwing", () => {
  const e = new Uint8Array(1024).fill(0xff);
  const d = decodeEntry(e);
  assert.equal(typeof d.subnqn, "string");
  assert.equal(
    logToNvmeCli({ genctr: 0n, numrec: 1n, recfmt: 0, entries: [d] }).records[0].trtype,
    "unrecognized",
  );
});

Deno.test("Get Log Page dwords: LID 70h, 0-based dword count, byte offset", () => {
  assert.deepEqual(getLogPageDwords(20, 0), {
    cdw10: 0x70 | (4 << 16),
    cdw11: 0,
    cdw12: 0,
    cdw13: 0,
  });
  assert.deepEqual(getLogPageDwords(4096, 1024), {
    cdw10: (0x70 | (1023 << 16)) >>> 0,
    cdw11: 0,
    cdw12: 1024,
    cdw13: 0,
  });
  const big = getLogPageDwords(4 * 0x20000, 2 ** 33);
  assert.equal(big.cdw10 >>> 16, 0xffff);
  assert.equal(big.cdw11, 1);
  assert.equal(big.cdw13, 2);
  assert.throws(() => getLogPageDwords(18, 0), RangeError);
  assert.throws(() => getLogPageDwords(20, 2), RangeError);
});

Deno.test("the passthru struct puts each field at its C offset", () => {
  const data = new Uint8Array(20);
  const s = encodePassthru({ opcode: 0x02, ...getLogPageDwords(20, 0), data, timeoutMs: 5000 });
  const v = new DataView(s.buffer);
  assert.equal(s.length, 72);
  assert.equal(v.getUint8(PASSTHRU.opcode), 0x02);
  assert.equal(v.getUint32(PASSTHRU.data_len, true), 20);
  assert.equal(v.getUint32(PASSTHRU.cdw10, true), 0x70 | (4 << 16));
  assert.equal(v.getUint32(PASSTHRU.timeout_ms, true), 5000);
  assert.notEqual(v.getBigUint64(PASSTHRU.addr, true), 0n);
});
