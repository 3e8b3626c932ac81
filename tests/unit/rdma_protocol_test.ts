/**
 * The ping and rping wire formats and the latency statistics, with no device.
 */
import assert from "node:assert/strict";
import { latencyStats } from "../../src/rdma/ping.ts";
import {
  decodeHello,
  encodeHello,
  pattern,
  payloads,
  SEND_QUEUE,
  shift,
  SIGNAL_EVERY,
  signalled,
} from "../../src/rdma/ping_protocol.ts";
import { firstDifference } from "../../src/rdma/completion.ts";
import { decodeInfo, encodeInfo, rpingPayload } from "../../src/rdma/rping.ts";
import { privateText } from "../../src/rdma/connection.ts";

Deno.test("ping hello round-trips and refuses foreign private data", () => {
  const h = {
    op: "read" as const,
    addr: 0x7f00_1234_5000n,
    rkey: 0xabcd,
    len: 8192,
    count: 10,
    size: 4096,
  };
  const b = encodeHello(h);
  assert.equal(b.length, 32);
  assert.deepEqual([...b.subarray(0, 4)], [0x4e, 0x56, 0x4d, 0x52]); // "NVMR"
  assert.deepEqual(decodeHello(b), h);
  assert.equal(decodeHello(new Uint8Array(32)), undefined);
  assert.equal(decodeHello(b.subarray(0, 16)), undefined);
  const nvme = new Uint8Array(32); // an NVMe/RDMA connect request (recfmt 0, qid 0 …)
  assert.equal(decodeHello(nvme), undefined);
});

Deno.test("rping buffer info is 16 bytes in network byte order", () => {
  const b = new Uint8Array(16);
  encodeInfo(b, 0x0102030405060708n, 0x0a0b0c0d, 64);
  assert.deepEqual([...b], [1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 64]);
  assert.deepEqual(decodeInfo(b), { addr: 0x0102030405060708n, rkey: 0x0a0b0c0d, size: 64 });
});

Deno.test("rping payloads match what rping -v prints", () => {
  const text = (p: number) => new TextDecoder().decode(rpingPayload(p, 64).subarray(0, 63));
  // From `rping -s -v` in the lab: "server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqr"
  assert.equal(text(0), "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr");
  assert.equal(text(4), "rdma-ping-4: EFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuv");
  assert.equal(rpingPayload(0, 64)[63], 0);
  assert.ok(text(57).startsWith("rdma-ping-57: z"));
  assert.ok(text(58).startsWith("rdma-ping-58: A"));
});

Deno.test("every iteration's payload differs, and its last byte changes between reuses of a slot", () => {
  for (const size of [2, 64, 4096]) {
    const p = pattern(size);
    for (let i = 2; i < 600; i++) {
      const a = p.subarray(shift(i), shift(i) + size);
      const b = p.subarray(shift(i - 2), shift(i - 2) + size);
      assert.notEqual(firstDifference(a, b), -1, `size ${size} iteration ${i}`);
    }
  }
});

Deno.test("send signalling: inline bounded by the queue and ends signalled, non-inline every post", () => {
  for (const total of [1, 2, SIGNAL_EVERY - 1, SIGNAL_EVERY, 5000]) {
    let since = 0, max = 0;
    for (let i = 0; i < total; i++) {
      since++;
      if (signalled(true, i, total)) {
        // Posted after a wait for the previous signalled one: at most `max` earlier posts plus
        // this batch can be outstanding.
        max = Math.max(max, since);
        since = 0;
      }
      assert.ok(signalled(false, i, total), `non-inline post ${i} of ${total} is signalled`);
    }
    assert.equal(since, 0, `the last of ${total} posts is signalled`);
    assert.ok(2 * max - 1 <= SEND_QUEUE, `${max} posts per signal overflow ${SEND_QUEUE}`);
  }
  assert.ok(!signalled(true, 0, 5000), "inline posts are not all signalled");
});

Deno.test("payloads are the pattern at each shift, sized", () => {
  const p = payloads(64);
  for (const i of [0, 1, 250, 251, 4999]) {
    assert.deepEqual(p[shift(i)], pattern(64).subarray(shift(i), shift(i) + 64));
    assert.equal(p[shift(i)].length, 64);
  }
});

Deno.test("latencyStats: min, median, p99, max in µs", () => {
  const ms = Array.from({ length: 100 }, (_, i) => (i + 1) / 1000); // 1 … 100 µs
  const s = latencyStats(ms);
  assert.deepEqual(
    [s.samples, s.min_us, s.median_us, s.p99_us, s.max_us, s.avg_us],
    [100, 1, 50, 99, 100, 50.5],
  );
});

Deno.test("reject private data is shown when printable", () => {
  assert.equal(
    privateText(new TextEncoder().encode("size 0 out of range\0")),
    "size 0 out of range",
  );
  assert.equal(privateText(new Uint8Array([1, 2, 3])), undefined);
  assert.equal(privateText(new Uint8Array(0)), undefined);
});
