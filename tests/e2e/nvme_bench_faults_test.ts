/**
 * `nvmeof bench` when runs are not short and clean, against the real nvmet-rdma over rxe in the
 * lab guest: two I/O queues for a timed run, a run longer than the keep-alive timeout, SIGINT
 * in the middle of a run, and the target removed under a running bench. Each test builds its
 * own memory-backed null_blk target with plain configfs writes (port 79, trsvcid 4431) and
 * tears it down in `finally`; runs that end early must leave no RDMA resources behind
 * (`rdma resource show`).
 */
import assert from "node:assert/strict";
import { bash as sh, must, type Spawned, spawnNvmeof } from "../helpers.ts";
import { type PlainTarget, plainTarget } from "./plain_target.ts";

const ADDR = "10.77.0.1";
const SVC = "4431";
const HOSTID = "5b2c7e1a-0d4f-4a3b-8c9e-2f1e0d3c4b5a";
const HOST = `nqn.2014-08.org.nvmexpress:uuid:${HOSTID}`;
const PORT = "79";

let serial = 0;

/** A target exporting a 64 MiB memory-backed null_blk at ADDR:SVC to any host. */
async function targetUp(): Promise<PlainTarget & { nqn: string }> {
  const tag = `bf${Deno.pid}x${serial++}`;
  const nqn = `nqn.2026-11.io.nvmeof:${tag}-faults`;
  const t = await plainTarget({ tag, port: PORT, addr: ADDR, svc: SVC, subsystems: [{ nqn }] });
  return { nqn, ...t };
}

function flags(nqn: string): string[] {
  return ["-a", ADDR, "-s", SVC, "-n", nqn, "-q", HOST, "-I", HOSTID];
}

/** The object counts of rxe0 (`rdma resource show`: pd, cq, qp, cm_id, mr). */
async function rdmaCounts(): Promise<Record<string, number>> {
  const line = (await must("rdma resource show")).split("\n").find((l) => /\brxe0:/.test(l));
  assert.ok(line, "rdma resource show lists rxe0");
  const counts: Record<string, number> = {};
  for (const m of line.matchAll(/\b(pd|cq|qp|cm_id|mr) (\d+)/g)) counts[m[1]] = Number(m[2]);
  return counts;
}

/** QPs, CQs, MRs, PDs and CM ids that `rdma resource show` attributes to process `pid`. */
async function ownedBy(pid: number): Promise<string[]> {
  const out: string[] = [];
  for (const kind of ["qp", "cq", "mr", "pd", "cm_id"]) {
    const r = await sh(`rdma resource show ${kind}`);
    for (const l of r.stdout.split("\n")) if (new RegExp(`\\bpid ${pid}\\b`).test(l)) out.push(l);
  }
  return out;
}

/**
 * Waits until the counts of `keys` are back to `base` (the kernel target releases its side of
 * the queues from a workqueue); returns the last counts seen.
 */
async function countsBackTo(
  base: Record<string, number>,
  keys: string[],
  limitMs = 20000,
): Promise<Record<string, number>> {
  const end = performance.now() + limitMs;
  for (;;) {
    const now = await rdmaCounts();
    if (keys.every((k) => now[k] === base[k]) || performance.now() > end) return now;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Waits until process `pid` holds `qps` QPs (admin + I/O queues connected), then `settleMs`
 * more so that I/O is flowing. Fails if the process exits first or it takes over `limitMs`.
 */
async function ioStarted(r: Spawned, qps: number, settleMs: number, limitMs = 120000) {
  const end = performance.now() + limitMs;
  for (;;) {
    const q = (await sh(`rdma resource show qp`)).stdout.split("\n")
      .filter((l) => new RegExp(`\\bpid ${r.pid}\\b`).test(l)).length;
    if (q >= qps) break;
    if (r.exited) {
      const o = await r.done;
      assert.fail(`bench exited (${o.code}) before its queues were up: ${o.stderr}`);
    }
    assert.ok(performance.now() < end, `bench had ${q} of ${qps} QPs after ${limitMs} ms`);
    await new Promise((res) => setTimeout(res, 200));
  }
  await new Promise((res) => setTimeout(res, settleMs));
  assert.ok(!r.exited, "bench still runs once I/O has started");
}

Deno.test({
  name: "bench --queues 2 --time 3: lasts about 3 s, both queues do I/O, no errors",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const t = await targetUp();
    try {
      const r = spawnNvmeof([
        "bench",
        ...flags(t.nqn),
        "--queues",
        "2",
        "--time",
        "3",
        "-o",
        "json",
      ]);
      const o = await r.exitWithin(180000, "bench --time 3");
      assert.equal(o.code, 0, o.stderr);
      assert.equal(o.stderr, "");
      const res = JSON.parse(o.stdout);
      assert.equal(res.queues, 2);
      assert.equal(res.interrupted, false);
      assert.equal(res.stopped, null);
      assert.equal(res.passes.length, 1);
      const pass = res.passes[0];
      console.log(
        `bench --queues 2 --time 3: ${pass.seconds} s, ${pass.ios} I/Os, ${pass.iops} IOPS, ` +
          `per queue ${JSON.stringify(pass.per_queue)}; process ${Math.round(o.ms)} ms`,
      );
      // The deadline stops issuing at 3 s; what is in flight then (QD 32 per queue) drains.
      assert.ok(pass.seconds >= 3 && pass.seconds < 8, `ran ${pass.seconds} s for --time 3`);
      assert.deepEqual(pass.per_queue.map((q: { qid: number }) => q.qid), [1, 2]);
      for (const q of pass.per_queue) assert.ok(q.ios > 0, `queue ${q.qid} did ${q.ios} I/Os`);
      assert.equal(
        pass.per_queue.reduce((s: number, q: { ios: number }) => s + q.ios, 0),
        pass.ios,
      );
      assert.equal(pass.bytes, pass.ios * 4096);
      assert.ok(pass.iops > 0);
      assert.ok(res.steps.some((s: { step: string }) => s.step === "wait CSTS.SHST"));
    } finally {
      await t.down();
    }
  },
});

Deno.test({
  name: "bench --time 20 outlasts the 15 s keep-alive timeout: Keep Alive goes out every 5 s",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const t = await targetUp();
    try {
      const r = spawnNvmeof(["bench", ...flags(t.nqn), "--time", "20", "-o", "json"]);
      const o = await r.exitWithin(240000, "bench --time 20");
      let res: { passes: { seconds: number; ios: number }[]; steps: { step: string }[] };
      try {
        res = JSON.parse(o.stdout);
      } catch {
        assert.fail(`exit ${o.code}, no JSON result: ${o.stderr}`);
      }
      const kas = res.steps.filter((s) => s.step === "keep alive").length;
      console.log(
        `bench --time 20: exit ${o.code}, ${res.passes[0]?.ios} I/Os in ` +
          `${res.passes[0]?.seconds} s, ${kas} Keep Alive(s); ${o.stderr.trim()}`,
      );
      assert.equal(o.code, 0, o.stderr);
      assert.ok(res.passes[0].seconds >= 20 && res.passes[0].seconds < 25);
      // KATO is 15 s and Keep Alive is due every third of it: at least 3 in 20 s.
      assert.ok(kas >= 3, `${kas} Keep Alive(s) in a 20 s run`);
    } finally {
      await t.down();
    }
  },
});

Deno.test({
  name: "bench --time 60 stops within 15 s of SIGINT, prints the partial result, exit 1",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const t = await targetUp();
    try {
      const base = await rdmaCounts();
      const r = spawnNvmeof(["bench", ...flags(t.nqn), "--time", "60", "-o", "json"]);
      await ioStarted(r, 2, 3000);
      const sent = performance.now();
      r.child.kill("SIGINT");
      const o = await r.exitWithin(15000, "bench after SIGINT");
      const stopMs = performance.now() - sent;
      assert.equal(o.code, 1, `exit ${o.code}: ${o.stderr}`);
      assert.match(o.stderr, /Interrupted \(SIGINT received\): partial result over the [\d.]+ s/);
      assert.doesNotMatch(o.stderr, /error:|\n\s+at /);
      const res = JSON.parse(o.stdout);
      assert.equal(res.interrupted, true);
      assert.equal(res.stopped, "SIGINT received");
      const pass = res.passes[0];
      assert.ok(pass.ios > 0, "I/O was done before the signal");
      assert.ok(pass.seconds > 0 && pass.seconds < 60, `partial run of ${pass.seconds} s`);
      assert.ok(pass.iops > 0 && pass.latency_us.max > 0);
      assert.equal(pass.per_queue[0].ios, pass.ios);
      // No shutdown handshake after Ctrl-C, only the disconnect.
      assert.ok(!res.steps.some((s: { step: string }) => s.step === "wait CSTS.SHST"));
      assert.deepEqual(await ownedBy(r.pid), []);
      const after = await countsBackTo(base, ["pd", "cq", "qp", "mr", "cm_id"]);
      assert.deepEqual(after, base, "rdma resource counts back to the baseline");
      console.log(
        `SIGINT: exit ${o.code} ${Math.round(stopMs)} ms after the signal; partial ` +
          `${pass.ios} I/Os in ${pass.seconds} s (${pass.iops} IOPS); counts ${
            JSON.stringify(after)
          }`,
      );
    } finally {
      await t.down();
    }
  },
});

Deno.test({
  name: "bench --time 60 ends within 30 s with exit 1 naming the dropped queue when the " +
    "target port goes away, leaving no RDMA objects",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const t = await targetUp();
    try {
      const base = await rdmaCounts();
      const r = spawnNvmeof(["bench", ...flags(t.nqn), "--queues", "2", "--time", "60"]);
      await ioStarted(r, 3, 3000);
      // Unlinking the subsystem makes nvmet delete its controllers (their queues disconnect);
      // removing the port ends the listener.
      await must(`rm ${t.port}/subsystems/${t.nqn} && rmdir ${t.port}`);
      const gone = performance.now();
      const o = await r.exitWithin(30000, "bench after the target went away");
      const endMs = performance.now() - gone;
      assert.equal(o.code, 1, `exit ${o.code}: ${o.stderr}`);
      assert.match(o.stderr, /^error: The target dropped (I\/O )?queue \d+ during/m);
      assert.doesNotMatch(o.stderr, /this is a bug|\n\s+at /);
      assert.equal(o.stdout, "");
      assert.deepEqual(await ownedBy(r.pid), []);
      // The listener's CM id left with the port; every QP, CQ, MR and PD is released.
      const after = await countsBackTo(base, ["pd", "cq", "qp", "mr"]);
      for (const k of ["pd", "cq", "qp", "mr"]) {
        assert.equal(after[k], base[k], `${k}: ${after[k]} after, ${base[k]} before`);
      }
      assert.ok(after.cm_id < base.cm_id, "the port's listener is gone");
      console.log(
        `target removed: exit ${o.code} ${Math.round(endMs)} ms later: ${o.stderr.trim()}; ` +
          `counts ${JSON.stringify(base)} -> ${JSON.stringify(after)}`,
      );
    } finally {
      await t.down();
    }
  },
});
