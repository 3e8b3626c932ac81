/**
 * bench's pure parts: the LBA pattern and its check, the buffer access each mode needs, the
 * latency statistics, the flag validation, the random block source, MDTS and queue sizing.
 */
import assert from "node:assert/strict";
import { IBV_ACCESS } from "../../ffi/enums.ts";
import { benchParams } from "../../src/commands/bench.ts";
import { UsageError } from "../../src/errors.ts";
import {
  bufferAccess,
  checkPattern,
  fillPattern,
  Samples,
  xorshift,
} from "../../src/nvme/bench.ts";
import { DEFAULT_POLL_MS } from "../../src/nvme/bench_options.ts";
import { ioQueueDepth } from "../../src/nvme/bench_run.ts";
import { type Capabilities, mdtsBytes } from "../../src/nvme/identify.ts";
import { summarizeLatency } from "../../src/rdma/latency.ts";

Deno.test("pattern words name their block and byte offset, little-endian", () => {
  const buf = new Uint8Array(1024);
  fillPattern(buf, 70000, 512);
  const dv = new DataView(buf.buffer);
  const word = (lba: number, off: number) => (0x4en << 56n) + BigInt(lba) * 65536n + BigInt(off);
  assert.equal(dv.getBigUint64(0, true), word(70000, 0));
  assert.equal(dv.getBigUint64(8, true), word(70000, 8));
  assert.equal(dv.getBigUint64(512 + 504, true), word(70001, 504));
  assert.equal(checkPattern(buf, 70000, 512), -1);
});

Deno.test("checkPattern names the first block that differs, and zeroed or shifted data fails", () => {
  const buf = new Uint8Array(4096);
  fillPattern(buf, 8, 512);
  assert.equal(checkPattern(buf, 8, 512), -1);
  assert.equal(checkPattern(buf, 16, 512), 16, "the right data for other blocks");
  buf[3 * 512 + 100] ^= 1;
  assert.equal(checkPattern(buf, 8, 512), 11);
  assert.equal(checkPattern(new Uint8Array(4096), 0, 4096), 0, "zeroes never pass, not even LBA 0");
  assert.equal(checkPattern(new Uint8Array(4096).fill(0xff), 5, 512), 5);
});

Deno.test("pattern with 4 KiB blocks and LBAs past 2^32", () => {
  const buf = new Uint8Array(8192);
  const lba = 2 ** 33 + 3;
  fillPattern(buf, lba, 4096);
  assert.equal(checkPattern(buf, lba, 4096), -1);
  assert.equal(checkPattern(buf, lba - 1, 4096), lba - 1);
  const dv = new DataView(buf.buffer);
  assert.equal(
    dv.getBigUint64(4096 + 4088, true),
    (0x4en << 56n) + BigInt(lba + 1) * 65536n + 4088n,
  );
});

Deno.test("buffer access is the least each mode needs", () => {
  const { LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ } = IBV_ACCESS;
  assert.equal(bufferAccess("randread"), LOCAL_WRITE | REMOTE_WRITE);
  assert.equal(bufferAccess("read"), LOCAL_WRITE | REMOTE_WRITE);
  assert.equal(bufferAccess("write"), REMOTE_READ);
  assert.equal(bufferAccess("randwrite"), REMOTE_READ);
  assert.equal(bufferAccess("verify"), LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ);
});

Deno.test("latency stats: min, nearest-rank median and p99, max, mean", () => {
  const s = new Samples();
  for (let i = 100; i >= 1; i--) s.push(i);
  for (let i = 0; i < 5000; i++) s.push(50); // grows past the first chunk
  const all = summarizeLatency(s.values());
  assert.equal(all.min, 1);
  assert.equal(all.max, 100);
  assert.equal(all.median, 50);
  const one = summarizeLatency(Float64Array.from([3, 1, 2, 4]));
  assert.deepEqual(one, { min: 1, median: 2, p99: 4, max: 4, mean: 2.5 });
  const hundred = summarizeLatency(Float64Array.from({ length: 100 }, (_, i) => i + 1));
  assert.equal(hundred.p99, 99);
  assert.equal(hundred.median, 50);
  assert.deepEqual(summarizeLatency(new Float64Array(0)), {
    min: 0,
    median: 0,
    p99: 0,
    max: 0,
    mean: 0,
  });
});

Deno.test("flags: writes need --allow-write; bad values and --time with --ios are usage errors", () => {
  const base = { nqn: "nqn.x", rw: "randread", bs: "4096", qd: "32", queues: "1", nsid: "1" };
  assert.equal(benchParams(base).rw, "randread");
  for (const rw of ["write", "randwrite", "verify"]) {
    assert.throws(() => benchParams({ ...base, rw }), UsageError);
    assert.equal(benchParams({ ...base, rw, "allow-write": true }).rw, rw);
  }
  for (
    const bad of [
      { rw: "trim" },
      { bs: "1000" },
      { bs: "0" },
      { qd: "0" },
      { qd: "x" },
      { queues: "65" },
      { "poll-ms": "-1" },
      { "poll-ms": "1.5" },
      { "queue-size": "16" },
      { "queue-size": "1" },
      { time: "1", ios: "5" },
      { nqn: undefined },
    ]
  ) {
    assert.throws(() => benchParams({ ...base, ...bad }), UsageError, JSON.stringify(bad));
  }
  assert.throws(
    () => benchParams({ ...base, rw: "verify", "allow-write": true, time: "5" }),
    UsageError,
  );
  assert.equal(benchParams({ ...base, ios: "10000" }).ios, 10000);
  assert.equal(benchParams(base).pollMs, DEFAULT_POLL_MS);
  assert.equal(benchParams({ ...base, "poll-ms": "0" }).pollMs, 0);
  assert.equal(benchParams(base).queueSize, 128);
  assert.equal(benchParams({ ...base, "queue-size": "32" }).queueSize, 32);
});

Deno.test("xorshift is deterministic per seed and covers small ranges", () => {
  const a = xorshift(1), b = xorshift(1);
  const seen = new Set<number>();
  for (let i = 0; i < 1000; i++) {
    const x = a();
    assert.equal(x, b());
    seen.add(x % 16);
  }
  assert.equal(seen.size, 16);
});

Deno.test("MDTS in bytes counts in CAP.MPSMIN pages; 0 is no limit", () => {
  assert.equal(mdtsBytes(5, undefined), 4096 * 32);
  assert.equal(mdtsBytes(2, { mpsmin: 1 } as Capabilities), 8192 * 4);
  assert.equal(mdtsBytes(0, undefined), undefined);
});

Deno.test("I/O queues open larger than qd, up to --queue-size and CAP.MQES + 1", () => {
  assert.equal(ioQueueDepth({ qd: 32, queueSize: 128 }, undefined), 128);
  assert.equal(ioQueueDepth({ qd: 32, queueSize: 128 }, { mqes: 63 } as Capabilities), 64);
  assert.equal(ioQueueDepth({ qd: 100, queueSize: 128 }, { mqes: 31 } as Capabilities), 100);
});
