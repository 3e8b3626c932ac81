/**
 * The user-space NVMe/RDMA initiator against the real nvmet-rdma over rxe in the lab guest:
 * probe's discovery log against `nvme discover`, probe's identity against `nvme id-ctrl` on the
 * kernel initiator's controller, and the decoded refusals (host not allowed 0x184, unknown
 * subsystem 0x182), and nvmet-rdma's CM-level reject of an oversized admin queue decoded from its
 * private data. The target is plain configfs writes on a memory-backed null_blk, torn down in
 * reverse order in `finally`.
 */
import assert from "node:assert/strict";
import { bash as sh, must, nvmeof } from "../helpers.ts";
import { type PlainTarget, plainTarget } from "./plain_target.ts";
import { NvmeQueue } from "../../src/nvme/queue.ts";
import { RdmaCmRejectError } from "../../src/nvme/status.ts";
import { RejectedError } from "../../src/rdma/connection.ts";

const ADDR = "10.77.0.1";
const TAG = `us${Deno.pid}`;
const NQN = `nqn.2026-11.io.nvmeof:${TAG}-open`;
const NQN_CLOSED = `nqn.2026-11.io.nvmeof:${TAG}-closed`;
const HOSTID = "7b3c1f4e-5d6a-4b8c-9e0f-1a2b3c4d5e6f";
const HOST = `nqn.2014-08.org.nvmexpress:uuid:${HOSTID}`;
const OTHER = `nqn.2026-11.io.nvmeof:${TAG}-otherhost`;
const PORT = "77";

let target: PlainTarget | undefined;

async function setup(): Promise<void> {
  target = await plainTarget({
    tag: TAG,
    port: PORT,
    addr: ADDR,
    svc: "4420",
    subsystems: [{ nqn: NQN }, { nqn: NQN_CLOSED, allowedHost: OTHER }],
  });
}

async function teardown(): Promise<void> {
  await sh(`nvme disconnect -n ${NQN}`);
  await target?.down();
  target = undefined;
}

Deno.test({
  name: "probe: discovery log, identity and refusals match the kernel's view",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    try {
      await setup();
      await t.step("discovery log equals nvme discover -o json, entry for entry", async () => {
        const ours = await nvmeof(["probe", "-a", ADDR, "-q", HOST, "-I", HOSTID, "-o", "json"]);
        assert.equal(ours.code, 0, ours.stderr);
        const mine = JSON.parse(ours.stdout);
        const theirs = JSON.parse(
          await must(`nvme discover -t rdma -a ${ADDR} -s 4420 -q ${HOST} -I ${HOSTID} -o json`),
        );
        const key = (r: Record<string, unknown>) => `${r.subnqn}|${r.portid}`;
        const sort = (rs: Record<string, unknown>[]) =>
          [...rs].sort((a, b) => key(a) < key(b) ? -1 : 1);
        assert.deepEqual(sort(mine.records), sort(theirs.records));
        assert.ok(mine.records.some((r: { subnqn: string }) => r.subnqn === NQN));
        assert.ok(mine.steps.some((s: { step: string }) => s.step === "get log page 0x70"));
      });
      await t.step("identity equals nvme id-ctrl on the kernel's controller", async () => {
        const ours = await nvmeof([
          "probe",
          "-a",
          ADDR,
          "-n",
          NQN,
          "-q",
          HOST,
          "-I",
          HOSTID,
          "-o",
          "json",
        ]);
        assert.equal(ours.code, 0, ours.stderr);
        const p = JSON.parse(ours.stdout);
        await must(`nvme connect -t rdma -a ${ADDR} -s 4420 -n ${NQN} -q ${HOST} -I ${HOSTID}`);
        const dev = (await must(
          `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${NQN}" ] && basename $c; done | head -1`,
        )).trim();
        assert.match(dev, /^nvme\d+$/);
        const k = JSON.parse(await must(`nvme id-ctrl /dev/${dev} -o json`));
        assert.equal(p.controller.model, String(k.mn).trim());
        assert.equal(p.controller.serial, String(k.sn).trim());
        assert.equal(p.controller.firmware, String(k.fr).trim());
        assert.equal(p.controller.mdts, k.mdts);
        assert.equal(p.controller.sgls, k.sgls);
        assert.equal(p.namespaces.length, 1);
        assert.equal(p.namespaces[0].size_bytes, 64 * 1024 * 1024);
        const bytes = Number((await must(
          `cat /sys/class/nvme/${dev}/${dev}n1/size 2>/dev/null || ` +
            `cat /sys/block/$(ls /sys/class/nvme/${dev}/ | grep -m1 '^nvme.*n1$')/size`,
        )).trim()) * 512;
        assert.equal(p.namespaces[0].size_bytes, bytes);
        for (
          const s of ["fabrics connect", "wait CSTS.RDY", "identify controller", "wait CSTS.SHST"]
        ) {
          assert.ok(p.steps.some((x: { step: string }) => x.step === s), s);
        }
        await must(`nvme disconnect -n ${NQN}`);
      });
      await t.step("a host not allowed gets 0x184, an unknown NQN 0x182, both exit 1", async () => {
        const denied = await nvmeof([
          "probe",
          "-a",
          ADDR,
          "-n",
          NQN_CLOSED,
          "-q",
          HOST,
          "-I",
          HOSTID,
        ]);
        assert.equal(denied.code, 1);
        assert.match(denied.stderr, /NVMe status 0x184 .*invalid host/);
        assert.match(denied.stderr, /allowed_hosts/);
        const unknown = await nvmeof([
          "probe",
          "-a",
          ADDR,
          "-n",
          `${NQN}-nope`,
          "-q",
          HOST,
          "-I",
          HOSTID,
        ]);
        assert.equal(unknown.code, 1);
        assert.match(unknown.stderr, /NVMe status 0x182 .*CONNECT_INVALID_PARAM/);
      });
    } finally {
      await teardown();
    }
  },
});

Deno.test({
  name: "an admin queue of depth 64 is refused by nvmet-rdma as NVME_RDMA_CM_INVALID_HSQSIZE",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    try {
      await setup();
      const open = (depth: number) =>
        NvmeQueue.open({ host: ADDR, port: 4420, qid: 0, depth, timeoutMs: 10000 });
      // The same queue at the admin limit (NVME_AQ_DEPTH 32) is accepted: only the depth differs.
      (await open(32)).close();
      const err = await open(64).then(
        (q) => {
          q.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      assert.ok(err instanceof RdmaCmRejectError, `not a decoded reject: ${err}`);
      console.log(`decoded: ${err.message}\n  hint: ${err.hint}`);
      assert.equal(err.reject.name, "NVME_RDMA_CM_INVALID_HSQSIZE");
      assert.equal(err.reject.sts, 4);
      assert.equal(err.qid, 0);
      assert.match(err.message, /refused NVMe queue 0 \(depth 64\): NVME_RDMA_CM_INVALID_HSQSIZE/);
      assert.match(err.hint!, /at most 32 entries/);
      const cause = err.cause;
      assert.ok(cause instanceof RejectedError);
      assert.equal(cause.reasonName, "CONSUMER_DEFINED");
      assert.ok(cause.rejectData.length >= 4, `private data of ${cause.rejectData.length} bytes`);
      console.log(
        `  REJECTED reason ${cause.reason}, private data ${cause.rejectData.length} bytes: ` +
          Array.from(cause.rejectData.subarray(0, 8), (b) => b.toString(16).padStart(2, "0"))
            .join(" "),
      );
    } finally {
      await teardown();
    }
  },
});
