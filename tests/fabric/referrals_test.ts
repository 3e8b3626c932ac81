/**
 * Discovery across two storage servers: storage server A (`target`) and storage server B (`host2`,
 * a compute node that has nvmet too, serving here as a second storage server), each with its own
 * subsystem. A's discovery port carries a referral to B's (the spec's `referrals`, applied to
 * nvmet's ports/N/referrals). host1 is told only of A: `discover` shows the referral entry, and
 * `connect-all` against A connects the subsystems of both, its JSON rows naming the referral
 * that led to B's. nvme-cli's `nvme connect-all` is the peer that follows the same referral.
 * Everything made here (controllers on host1, both targets, the null_blk devices) is removed
 * whether the test passes or not.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { addr, hostnqnOf, jsonOn, must, type Node, nvmeofOn, on, withCleanup } from "./fabric.ts";
import { deleteControllers } from "./plain_target.ts";

type Defer = (c: () => Promise<unknown>) => void;

const A: Node = "target";
const B: Node = "host2";
const A_ADDR = addr(A, 0);
const B_ADDR = addr(B, 0);
const SUB_A = "nqn.2026-12.io.nvmeof.fab:referral-a";
const SUB_B = "nqn.2026-12.io.nvmeof.fab:referral-b";

/** A memory-backed null_blk of 64 MiB on NODE, removed by the cleanup. */
async function nullb(node: Node, name: string, defer: Defer): Promise<string> {
  const d = `/sys/kernel/config/nullb/${name}`;
  await must(
    node,
    `modprobe null_blk nr_devices=0; mkdir ${d} && echo 64 > ${d}/size && echo 1 > ${d}/memory_backed && echo 1 > ${d}/power`,
  );
  defer(() => on(node, `echo 0 > ${d}/power; rmdir ${d}`));
  return `/dev/${name}`;
}

/** One subsystem for HOSTNQN on one RDMA port at TRADDR:4420, with REFERRALS on that port. */
function spec(hostnqn: string, nqn: string, device: string, traddr: string, referrals: object[]) {
  return {
    hosts: [{ nqn: hostnqn }],
    subsystems: [{ nqn, hosts: [hostnqn], namespaces: [{ nsid: 1, device }] }],
    ports: [{
      id: 1,
      trtype: "rdma",
      adrfam: "ipv4",
      traddr,
      trsvcid: 4420,
      subsystems: [nqn],
      ...(referrals.length ? { referrals } : {}),
    }],
  };
}

/** `target up` on NODE with SPEC (written to /etc/nvmeof/referrals.yaml there). */
async function up(node: Node, s: object): Promise<void> {
  await must(
    node,
    `mkdir -p /etc/nvmeof && cat > /etc/nvmeof/referrals.yaml <<'SPEC'\n${stringify(s)}SPEC`,
  );
  const r = await nvmeofOn(node, ["target", "up", "-f", "/etc/nvmeof/referrals.yaml"]);
  assert.equal(r.code, 0, `${node}: target up: ${r.stderr}`);
}

/** host1's fabrics controllers of SUB_A and SUB_B: "subsysnqn traddr state" each, sorted. */
async function controllers(): Promise<string[]> {
  const out = await must(
    "host1",
    `for c in /sys/class/nvme/nvme*; do
       n=$(cat $c/subsysnqn 2>/dev/null) || continue
       case "$n" in ${SUB_A}|${SUB_B}) ;; *) continue ;; esac
       a=$(tr ',' '\\n' < $c/address | sed -n 's/^traddr=//p')
       echo "$n $a $(cat $c/state)"
     done | sort`,
  );
  return out.trim().split("\n").filter((l) => l);
}

/** Waits until both controllers are live on host1 (nvme-cli returns before the scan ends). */
async function bothLive(): Promise<string[]> {
  const want = [`${SUB_A} ${A_ADDR} live`, `${SUB_B} ${B_ADDR} live`];
  let got: string[] = [];
  for (let i = 0; i < 50; i++) {
    got = await controllers();
    if (JSON.stringify(got) === JSON.stringify(want)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.deepEqual(got, want);
  return got;
}

interface Row {
  subnqn: string;
  traddr: string;
  trsvcid: string;
  status: string;
  device?: string;
  reason?: string;
  referral?: { trtype: string; traddr: string; trsvcid: string };
}

Deno.test("a referral on storage server A's discovery port leads host1 to storage server B: discover shows it, connect-all (nvmeof and nvme-cli) connects both servers' subsystems", async () => {
  await withCleanup(async (defer) => {
    // Registered first, so it runs last: host1 lets go before the targets go away.
    defer(async () => {
      for (const node of [A, B]) {
        const r = await nvmeofOn(node, ["target", "down", "--all", "--force"]);
        if (r.code !== 0) console.error(`cleanup: ${node}: target down failed: ${r.stderr}`);
      }
    });
    const devA = await nullb(A, "ref_a", defer);
    const devB = await nullb(B, "ref_b", defer);
    defer(() => on("host1", deleteControllers([SUB_A, SUB_B])));
    const hostnqn = await hostnqnOf("host1");

    await up(B, spec(hostnqn, SUB_B, devB, B_ADDR, []));
    await up(A, spec(hostnqn, SUB_A, devA, A_ADDR, [{ traddr: B_ADDR, trsvcid: 4420 }]));
    // The spec's referral is nvmet's: one entry under A's port, enabled, with B's address.
    assert.equal(
      (await must(
        A,
        `cd /sys/kernel/config/nvmet/ports/1/referrals && for r in *; do echo "$r $(cat $r/addr_trtype) $(cat $r/addr_traddr) $(cat $r/addr_trsvcid) $(cat $r/enable)"; done`,
      )).trim().replace(/^\S+ /, ""),
      `rdma ${B_ADDR} 4420 1`,
    );

    // discover against A: its own subsystem, and the referral entry pointing at B.
    const log = await jsonOn<{ records: Record<string, string | number>[] }>("host1", [
      "discover",
      "-t",
      "rdma",
      "-a",
      A_ADDR,
      "-s",
      "4420",
    ]);
    const entries = log.records.map((r) => `${r.subtype} ${r.subnqn} ${r.traddr}:${r.trsvcid}`);
    assert.ok(entries.includes(`nvme subsystem ${SUB_A} ${A_ADDR}:4420`), entries.join("\n"));
    assert.ok(
      entries.includes(
        `discovery subsystem referral nqn.2014-08.org.nvmexpress.discovery ${B_ADDR}:4420`,
      ),
      entries.join("\n"),
    );
    assert.ok(!entries.some((e) => e.includes(SUB_B)), "A's own log does not list B's subsystem");

    // connect-all against A alone: A's subsystem directly, B's through the referral.
    const all = await nvmeofOn("host1", [
      "connect-all",
      "-t",
      "rdma",
      "-a",
      A_ADDR,
      "-s",
      "4420",
      "-o",
      "json",
    ]);
    assert.equal(all.code, 0, all.stdout + all.stderr);
    const rows = (JSON.parse(all.stdout) as { records: Row[] }).records;
    const a = rows.find((r) => r.subnqn === SUB_A);
    const b = rows.find((r) => r.subnqn === SUB_B);
    assert.ok(a && b, all.stdout);
    assert.equal(a.status, "connected", all.stdout);
    assert.equal(a.traddr, A_ADDR);
    assert.equal(a.referral, undefined, "A's subsystem came from A's own log");
    assert.equal(b.status, "connected", all.stdout);
    assert.equal(b.traddr, B_ADDR);
    assert.deepEqual(b.referral, { trtype: "rdma", traddr: B_ADDR, trsvcid: "4420" });
    assert.deepEqual(rows.filter((r) => r.status === "failed"), []);
    await bothLive();
    const paths = await jsonOn<{ subsystems: { subsysnqn: string }[] }>("host1", [
      "list",
      "--paths",
    ]);
    for (const nqn of [SUB_A, SUB_B]) {
      assert.ok(paths.subsystems.some((s) => s.subsysnqn === nqn), `list --paths shows ${nqn}`);
    }

    // Again: nothing new, both already connected, the text names the referral.
    const again = await nvmeofOn("host1", ["connect-all", "-t", "rdma", "-a", A_ADDR]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`already connected: nvme\\d+ to '${SUB_A}'`));
    assert.match(
      again.stdout,
      new RegExp(
        `already connected: nvme\\d+ to '${SUB_B}' at rdma ${B_ADDR}:4420 \\(through the referral to rdma ${B_ADDR}:4420\\)`,
      ),
    );
    await bothLive();

    // nvme-cli, the peer: its connect-all follows our referral the same way.
    await must("host1", deleteControllers([SUB_A, SUB_B]));
    assert.deepEqual(await controllers(), []);
    await must("host1", `nvme connect-all -t rdma -a ${A_ADDR} -s 4420`);
    await bothLive();
    // and left no discovery controller behind
    assert.equal(
      (await must(
        "host1",
        "grep -lx nqn.2014-08.org.nvmexpress.discovery /sys/class/nvme/nvme*/subsysnqn 2>/dev/null; true",
      )).trim(),
      "",
    );
  });
});
