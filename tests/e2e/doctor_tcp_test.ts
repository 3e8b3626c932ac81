/**
 * `nvmeof doctor -t tcp` on the real kernel (lab guest, Linux 6.1: nvmet-tcp target and nvme-tcp
 * host on 10.77.0.1): the listener probe gets nvmet-tcp's own ICResp and leaves no queue behind
 * (no connection left on the port, nothing in the kernel log), a port with no listener is
 * "refused", an enabled port with no subsystem linked is too (nvmet binds it at the first link),
 * and a port dropped by nft is "blocked", told apart by the ICMP echo that still answers; with -n
 * the kernel connects over tcp; on the target's side the linked port's listener is probed. One
 * target is built with plain configfs writes and removed even when an assertion fails.
 */
import assert from "node:assert/strict";
import { nvmeof, sh } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:d0c70000-0000-4000-8000-00000000d7c1";
const HI = "d0c70000-0000-4000-8000-00000000d7c1";
const NQN = "nqn.2024-01.io.nvmeof.e2e:doc-tcp";
const ADDR = "10.77.0.1";
const N = "/sys/kernel/config/nvmet";
const NB = "nullb_doctcp";
/** The tcp port with the subsystem linked, and one that has none (not enabled). */
const LIVE = { id: 81, svc: 4480 };
const BARE = { id: 82, svc: 4482 };
/** A port number nothing is configured on. */
const NONE = 4483;
const NFT_TABLE = "nvmeof_doctor_tcp";

interface Check {
  id: string;
  status: string;
  seen: string;
  fix?: string;
  found?: Record<string, unknown>;
}
interface Report {
  checks: Check[];
  summary: Record<string, number>;
}

const UP = [
  "set -e",
  // one module per modprobe: further names would be taken as the first one's parameters
  "modprobe null_blk nr_devices=0; modprobe nvmet-tcp; modprobe nvme-tcp",
  `mkdir /sys/kernel/config/nullb/${NB}`,
  `cd /sys/kernel/config/nullb/${NB}; echo 64 > size; echo 1 > memory_backed; echo 1 > power`,
  `mkdir ${N}/subsystems/${NQN}`,
  `mkdir -p ${N}/hosts/${HQ}`,
  `ln -s ${N}/hosts/${HQ} ${N}/subsystems/${NQN}/allowed_hosts/${HQ}`,
  `mkdir ${N}/subsystems/${NQN}/namespaces/1`,
  `echo /dev/${NB} > ${N}/subsystems/${NQN}/namespaces/1/device_path`,
  `echo 1 > ${N}/subsystems/${NQN}/namespaces/1/enable`,
  ...[LIVE, BARE].flatMap((p) => [
    `mkdir ${N}/ports/${p.id}`,
    `echo tcp > ${N}/ports/${p.id}/addr_trtype; echo ipv4 > ${N}/ports/${p.id}/addr_adrfam`,
    `echo ${ADDR} > ${N}/ports/${p.id}/addr_traddr; echo ${p.svc} > ${N}/ports/${p.id}/addr_trsvcid`,
  ]),
  `ln -s ${N}/subsystems/${NQN} ${N}/ports/${LIVE.id}/subsystems/${NQN}`,
].join("\n");

const DOWN = [
  `nft delete table inet ${NFT_TABLE}`,
  `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${NQN}" ] && echo 1 > $c/delete_controller; done`,
  `rm -f ${N}/ports/${LIVE.id}/subsystems/${NQN}`,
  `rmdir ${N}/ports/${LIVE.id} ${N}/ports/${BARE.id}`,
  `echo 0 > ${N}/subsystems/${NQN}/namespaces/1/enable`,
  `rmdir ${N}/subsystems/${NQN}/namespaces/1`,
  `rm -f ${N}/subsystems/${NQN}/allowed_hosts/${HQ}`,
  `rmdir ${N}/subsystems/${NQN}`,
  `rmdir ${N}/hosts/${HQ}`,
  `echo 0 > /sys/kernel/config/nullb/${NB}/power`,
  `rmdir /sys/kernel/config/nullb/${NB}`,
].map((l) => `${l} 2>/dev/null`).join("\n");

async function targetUp(): Promise<AsyncDisposable> {
  const r = await sh(UP);
  if (r.code !== 0) {
    await sh(DOWN);
    throw new Error(`target setup failed: ${r.stderr}`);
  }
  return { [Symbol.asyncDispose]: async () => void await sh(DOWN) };
}

/** `doctor -t tcp --role initiator -a ADDR -s svc … -o json`; the report and its exit code. */
function doctor(svc: number, extra: string[] = []): Promise<{ code: number; r: Report }> {
  return doctorWith(["-t", "tcp", "--role", "initiator", "-a", ADDR, "-s", String(svc), ...extra]);
}

/** `doctor ARGS -o json`, checked for its shape; the report and its exit code. */
async function doctorWith(args: string[]): Promise<{ code: number; r: Report }> {
  const out = await nvmeof(["doctor", ...args, "-o", "json"]);
  assert.ok(out.code === 0 || out.code === 1, `exit ${out.code}: ${out.stderr}`);
  const r = JSON.parse(out.stdout) as Report;
  for (const c of r.checks) {
    if (c.status === "fail") assert.ok(c.fix, `a failing check needs a fix: ${JSON.stringify(c)}`);
  }
  assert.equal(out.code, r.summary.fail > 0 ? 1 : 0);
  return { code: out.code, r };
}

function get(r: Report, id: string): Check {
  const c = r.checks.find((x) => x.id === id);
  assert.ok(c, `no check ${id} in ${r.checks.map((x) => x.id).join(", ")}`);
  return c;
}

/** The kernel log's length in lines, to read only what a step added. */
async function kmsgLines(): Promise<number> {
  return Number((await sh("dmesg | wc -l")).stdout.trim());
}

Deno.test("doctor -t tcp on nvmet-tcp: every listener outcome named from the real kernel", async (t) => {
  await using _target = await targetUp();

  await t.step(
    "a live port answers with nvmet-tcp's ICResp; the queue is released, the kernel log quiet",
    async () => {
      const before = await kmsgLines();
      // A generous bound: under emulation nvmet-tcp takes a while to release the queue and close.
      const { code, r } = await doctor(LIVE.svc, ["--timeout", "15000"]);
      const l = get(r, "reach.listener");
      assert.equal(l.status, "ok", JSON.stringify(l));
      assert.match(
        l.seen,
        /^an NVMe\/TCP target answers at 10\.77\.0\.1:4480: ICResp PFV 0 \(1\.0\), no digests, CPDA 0, MAXH2CDATA 4194304 bytes/,
      );
      assert.match(
        l.seen,
        /closed again: the target ended its side \d+ ms after this one \((FIN|reset, as nvmet-tcp closes a queue)\): no queue left behind/,
      );
      assert.deepEqual(l.found?.icresp, {
        pfv: 0,
        cpda: 0,
        hdgst: false,
        ddgst: false,
        maxh2cdata: 4194304,
      });
      assert.ok(["fin", "reset"].includes(String(l.found?.target_close)), JSON.stringify(l.found));
      assert.equal(get(r, "reach.address").status, "ok");
      assert.equal(get(r, "fabric.route").status, "ok");
      assert.equal(get(r, "host.module.nvme_tcp").status, "ok");
      const bad = r.checks.filter((c) => c.status === "fail");
      assert.deepEqual(bad, [], JSON.stringify(bad, null, 2));
      assert.equal(code, 0);
      // No connection is left on the target's side of the port (a half-open queue would sit in
      // CLOSE-WAIT or ESTABLISHED), and nvmet-tcp logged nothing about the probe.
      const ss = await sh(`ss -Htan '( sport = :${LIVE.svc} )'`);
      const states = ss.stdout.trim().split("\n").filter(Boolean).map((l) => l.split(/\s+/)[0]);
      assert.deepEqual(states, ["LISTEN"], ss.stdout);
      assert.match(
        (await sh(`ss -Htan '( dport = :${LIVE.svc} )'`)).stdout,
        /^(TIME-WAIT\s.*\n?)*$/,
        "the probe's own side ends in TIME-WAIT, nothing half-open",
      );
      const added = (await sh(`dmesg | tail -n +${before + 1}`)).stdout;
      const tcpLines = added.split("\n").filter((l) => /nvmet_tcp|nvmet-tcp/.test(l));
      assert.deepEqual(tcpLines, [], added);
    },
  );

  await t.step(
    "with -n, the kernel initiator connects over tcp for real and is disconnected again",
    async () => {
      const { r } = await doctor(LIVE.svc, ["-n", NQN, "-q", HQ, "-I", HI, "--timeout", "15000"]);
      const k = get(r, "reach.kernel_connect");
      assert.equal(k.status, "ok", JSON.stringify(k));
      const left = await sh(
        `grep -lx '${NQN}' /sys/class/nvme/nvme*/subsysnqn 2>/dev/null | wc -l`,
      );
      assert.equal(left.stdout.trim(), "0");
    },
  );

  await t.step(
    "on the target, the linked tcp port's listener answers the ICReq; the unlinked one is not probed",
    async () => {
      const { r } = await doctorWith(["--role", "target"]);
      const l = get(r, `target.port.${LIVE.id}.listening`);
      assert.equal(l.status, "ok", JSON.stringify(l));
      assert.match(
        l.seen,
        /^port 81 answers at 10\.77\.0\.1:4480: bound, NVMe\/TCP target answers/,
      );
      assert.equal(l.found?.result, "icresp");
      assert.equal(r.checks.find((c) => c.id === `target.port.${BARE.id}.listening`), undefined);
      // Checked as the tcp target it is: nvmet-tcp and the address on this host's interface, and
      // nothing about rdma ports or nvmet-rdma it does not use.
      assert.equal(get(r, "target.module.nvmet_tcp").status, "ok");
      assert.match(get(r, `target.port.${LIVE.id}.address`).seen, /10\.77\.0\.1:4480, on \S+$/);
      assert.equal(get(r, `target.port.${LIVE.id}.address`).status, "ok");
      const rdma = r.checks.filter((c) => c.id.startsWith("target.") && /rdma/.test(c.id + c.seen));
      assert.deepEqual(rdma, [], JSON.stringify(rdma, null, 2));
      assert.equal(r.checks.find((c) => c.id === "target.ports"), undefined);
    },
  );

  await t.step("a port number nothing is configured on is 'refused'", async () => {
    const { code, r } = await doctor(NONE);
    const l = get(r, "reach.listener");
    assert.equal(l.status, "fail");
    assert.match(
      l.seen,
      /^nothing listens at 10\.77\.0\.1:4483: the TCP connect was refused \(ECONNREFUSED\)/,
    );
    assert.match(l.fix!, /create a tcp port for 10\.77\.0\.1 4483 and link a subsystem/);
    assert.deepEqual(l.found, { trtype: "tcp", result: "refused", errno: "ECONNREFUSED" });
    assert.equal(code, 1);
  });

  await t.step("a tcp port with no subsystem linked is not enabled: 'refused' too", async () => {
    const { r } = await doctor(BARE.svc);
    const l = get(r, "reach.listener");
    assert.equal(l.status, "fail");
    assert.equal(l.found?.result, "refused");
    assert.match(l.fix!, /nvmet binds the port when the first subsystem is linked/);
  });

  await t.step(
    "the live port dropped by nft: 'blocked', because the address still answers ICMP echo",
    async () => {
      const fw = await sh(
        `nft add table inet ${NFT_TABLE} && ` +
          `nft add chain inet ${NFT_TABLE} in '{ type filter hook input priority 0; }' && ` +
          `nft add rule inet ${NFT_TABLE} in tcp dport ${LIVE.svc} drop`,
      );
      assert.equal(fw.code, 0, fw.stderr);
      try {
        const { r } = await doctor(LIVE.svc, ["--timeout", "1500"]);
        const l = get(r, "reach.listener");
        assert.equal(l.status, "fail");
        assert.match(
          l.seen,
          /^TCP port 4480 blocked: 10\.77\.0\.1 answers ICMP echo in [\d.]+ ms, but the TCP connect to 10\.77\.0\.1:4480 got no answer within 1500 ms/,
        );
        assert.match(l.fix!, /nft list ruleset \| grep 4480/);
        assert.equal(l.found?.result, "timeout");
      } finally {
        await sh(`nft delete table inet ${NFT_TABLE}`);
      }
    },
  );
});
