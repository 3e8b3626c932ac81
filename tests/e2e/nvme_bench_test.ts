/**
 * `nvmeof bench` against the real nvmet-rdma over rxe in the lab guest, on a memory-backed
 * null_blk exported by plain configfs writes (torn down in reverse order in `finally`): data
 * written by bench reads back identically through the kernel initiator's block device, and
 * verify at QD 32 over 10000 I/Os finds no mismatch.
 */
import assert from "node:assert/strict";
import { bash as sh, must, nvmeof } from "../helpers.ts";
import { type PlainTarget, plainTarget } from "./plain_target.ts";
import { checkPattern, fillPattern } from "../../src/nvme/bench.ts";

const ADDR = "10.77.0.1";
const SVC = "4421";
const TAG = `bn${Deno.pid}`;
const NQN = `nqn.2026-11.io.nvmeof:${TAG}-bench`;
const HOSTID = "3d1f2a4b-6c7d-4e8f-9a0b-1c2d3e4f5a6b";
const HOST = `nqn.2014-08.org.nvmexpress:uuid:${HOSTID}`;
const PORT = "78";
const FLAGS = ["-a", ADDR, "-s", SVC, "-n", NQN, "-q", HOST, "-I", HOSTID];

let target: PlainTarget | undefined;

async function setup(): Promise<void> {
  target = await plainTarget({
    tag: TAG,
    port: PORT,
    addr: ADDR,
    svc: SVC,
    subsystems: [{ nqn: NQN }],
  });
}

async function teardown(): Promise<void> {
  await sh(`nvme disconnect -n ${NQN}`);
  await target?.down();
  target = undefined;
}

/** The kernel initiator's block device of NQN's namespace 1, once it shows up. */
async function blockDevice(): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const dev = (await sh(
      `for b in $(ls /sys/block | grep -E '^nvme[0-9]+n1$'); do ` +
        `[ "$(cat /sys/block/$b/device/subsysnqn 2>/dev/null)" = "${NQN}" ] && echo $b; done | head -1`,
    )).stdout.trim();
    if (dev) return `/dev/${dev}`;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no block device for ${NQN}`);
}

Deno.test({
  name: "bench: written data reads back through the kernel initiator; verify at QD 32 is clean",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    try {
      await setup();
      const WRITE_IOS = 2048; // 8 MiB of 4 KiB writes from LBA 0
      await t.step(
        "bench write lands the LBA pattern the kernel's block device reads",
        async () => {
          const w = await nvmeof([
            "bench",
            ...FLAGS,
            "--rw",
            "write",
            "--ios",
            String(WRITE_IOS),
            "--allow-write",
            "-o",
            "json",
          ]);
          assert.equal(w.code, 0, w.stderr);
          const r = JSON.parse(w.stdout);
          assert.equal(r.passes[0].ios, WRITE_IOS);
          console.log(`bench write QD 32: ${JSON.stringify(r.passes[0])}`);
          await must(`nvme connect -t rdma -a ${ADDR} -s ${SVC} -n ${NQN} -q ${HOST} -I ${HOSTID}`);
          const dev = await blockDevice();
          const bytes = WRITE_IOS * 4096 + 4096;
          const file = await Deno.makeTempFile();
          try {
            await must(
              `dd if=${dev} of=${file} bs=4096 count=${bytes / 4096} iflag=direct status=none`,
            );
            const got = await Deno.readFile(file);
            assert.equal(got.length, bytes);
            const lbaSize = r.lba_size as number;
            const written = got.subarray(0, WRITE_IOS * 4096);
            assert.equal(checkPattern(written, 0, lbaSize), -1);
            const want = new Uint8Array(written.length);
            fillPattern(want, 0, lbaSize);
            assert.ok(written.every((b, i) => b === want[i]), "bytes differ from the pattern");
            assert.ok(got.subarray(WRITE_IOS * 4096).every((b) => b === 0), "wrote past --ios");
          } finally {
            await Deno.remove(file);
            await sh(`nvme disconnect -n ${NQN}`);
          }
        },
      );
      await t.step(
        "bench verify: 10000 writes then 10000 reads at QD 32, no mismatch",
        async () => {
          const v = await nvmeof([
            "bench",
            ...FLAGS,
            "--rw",
            "verify",
            "--ios",
            "10000",
            "--qd",
            "32",
            "--allow-write",
            "-o",
            "json",
          ]);
          assert.equal(v.code, 0, v.stderr);
          const r = JSON.parse(v.stdout);
          assert.equal(r.mismatch_lba, null);
          assert.equal(r.verified_ios, 10000);
          assert.deepEqual(r.passes.map((p: { op: string; ios: number }) => [p.op, p.ios]), [
            ["write", 10000],
            ["read", 10000],
          ]);
          for (const p of r.passes) console.log(`bench verify ${p.op} QD 32: ${JSON.stringify(p)}`);
          assert.ok(r.steps.some((s: { step: string }) => s.step === "wait CSTS.SHST"));
        },
      );
      await t.step("bench randread at QD 1 reports latency", async () => {
        const b = await nvmeof(["bench", ...FLAGS, "--qd", "1", "--ios", "500", "-o", "json"]);
        assert.equal(b.code, 0, b.stderr);
        const r = JSON.parse(b.stdout);
        assert.equal(r.passes[0].ios, 500);
        const l = r.passes[0].latency_us;
        assert.ok(l.min > 0 && l.min <= l.median && l.median <= l.p99 && l.p99 <= l.max);
        // One I/O at a time: each latency (post to completion) fits in the run's time.
        assert.ok(l.mean * 500 <= r.passes[0].seconds * 1e6, JSON.stringify(r.passes[0]));
        console.log(`bench randread QD 1: ${JSON.stringify(r.passes[0])}`);
      });
    } finally {
      await teardown();
    }
  },
});
