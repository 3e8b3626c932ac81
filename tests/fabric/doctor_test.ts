/**
 * `nvmeof doctor` across machines (the lab fabric: `target`, `host1`, `host2`, each its own
 * kernel with Soft-RoCE, fab0 = 10.78.0.0/24, fab1 = 10.78.1.0/24). Each scenario breaks one
 * thing the way it breaks in a data centre (a firewall on UDP 4791, a jumbo MTU on one side, a
 * lossy link, a wrong address, no port), runs the doctor on a compute node, checks that the
 * named check gives the verdict and the fix, and restores what it changed in `finally`.
 */
import assert from "node:assert/strict";
import { addr, hostnqnOf, must, type Node, nvmeofOn, on } from "./fabric.ts";

const N = "/sys/kernel/config/nvmet";
const HQ = "nqn.2014-08.org.nvmexpress:uuid:d0c7fab0-0000-4000-8000-0000000000a1";
const TARGET = addr("target", 0);
const NFT_TABLE = "nvmeof_doctor_test";

interface Check {
  id: string;
  status: "ok" | "warn" | "fail" | "skip";
  seen: string;
  fix?: string;
}
interface Report {
  role: string;
  role_reason: string;
  checks: Check[];
  summary: Record<string, number>;
  verdict: string;
}

/** Runs the doctor on `node` with -o json; checks the exit code matches the failures. */
async function doctorOn(node: Node, args: string[]): Promise<{ code: number; report: Report }> {
  const r = await nvmeofOn(node, ["doctor", ...args, "-o", "json"], { timeout: 300 });
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as Report;
  assert.equal(r.code, report.summary.fail > 0 ? 1 : 0);
  return { code: r.code, report };
}

function get(r: Report, id: string): Check {
  const c = r.checks.find((x) => x.id === id);
  assert.ok(c, `no check ${id} in ${r.checks.map((x) => `${x.id}:${x.status}`).join(", ")}`);
  return c;
}

function failures(r: Report): string {
  return JSON.stringify(r.checks.filter((c) => c.status === "fail"), null, 2);
}

/**
 * A subsystem (any host, a null_blk namespace when the module is there) exported on an rdma
 * port of the target at TARGET:trsvcid, by plain configfs writes; removed on dispose.
 */
async function exportOnTarget(
  tag: string,
  trsvcid: number,
): Promise<AsyncDisposable & { nqn: string }> {
  const nqn = `nqn.2024-01.io.nvmeof.fabric:doctor-${tag}`;
  const port = `${N}/ports/${trsvcid}`;
  const sub = `${N}/subsystems/${nqn}`;
  const teardown = async () => {
    await on(
      "target",
      `rm -f ${port}/subsystems/${nqn}; rmdir ${port} 2>/dev/null; ` +
        `echo 0 > ${sub}/namespaces/1/enable 2>/dev/null; rmdir ${sub}/namespaces/1 2>/dev/null; ` +
        `rmdir ${sub} 2>/dev/null; true`,
    );
  };
  try {
    await must(
      "target",
      [
        "set -e",
        "modprobe nvmet; modprobe nvmet-rdma",
        "modprobe null_blk nr_devices=1 2>/dev/null || true",
        `mkdir -p ${sub}`,
        `echo 1 > ${sub}/attr_allow_any_host`,
        `if [ -b /dev/nullb0 ]; then mkdir -p ${sub}/namespaces/1; ` +
        `echo /dev/nullb0 > ${sub}/namespaces/1/device_path; echo 1 > ${sub}/namespaces/1/enable; fi`,
        `mkdir -p ${port}`,
        `echo rdma > ${port}/addr_trtype; echo ipv4 > ${port}/addr_adrfam`,
        `echo ${TARGET} > ${port}/addr_traddr; echo ${trsvcid} > ${port}/addr_trsvcid`,
        `ln -s ${sub} ${port}/subsystems/${nqn}`,
      ].join("\n"),
    );
  } catch (err) {
    await teardown();
    throw err;
  }
  return { nqn, [Symbol.asyncDispose]: teardown };
}

Deno.test("fabric doctor: on host1 with nvmet loaded, the target is the other machine (no local-target failures)", async () => {
  await using t = await exportOnTarget("role", 4420);
  const had = (await on("host1", "test -d /sys/module/nvmet")).code === 0;
  await must("host1", "modprobe nvmet");
  try {
    await hostnqnOf("host1"); // the identity files the kernel connect uses
    const { code, report } = await doctorOn("host1", ["-a", TARGET, "-n", t.nqn]);
    assert.equal(report.role, "initiator");
    assert.match(report.role_reason, /^10\.78\.0\.1 is not an address of this machine/);
    assert.deepEqual(report.checks.filter((c) => c.id.startsWith("target.")), []);
    for (const id of ["reach.address", "reach.roce_v2", "reach.listener", "reach.path_mtu"]) {
      assert.equal(get(report, id).status, "ok", JSON.stringify(get(report, id)));
    }
    assert.equal(get(report, "reach.kernel_connect").status, "ok", failures(report));
    assert.equal(code, 0, failures(report));
  } finally {
    if (!had) await on("host1", "modprobe -r nvmet");
  }
});

Deno.test("fabric doctor: --role target on the target checks its ports and the host, sends no probe", async () => {
  await using t = await exportOnTarget("role-target", 4420);
  const { code, report } = await doctorOn("target", [
    "--role",
    "target",
    "-a",
    TARGET,
    "-n",
    t.nqn,
    "-q",
    HQ,
  ]);
  assert.equal(report.role, "target");
  assert.equal(report.role_reason, "--role target given");
  assert.equal(get(report, "target.expect.port").status, "ok");
  assert.equal(get(report, "target.expect.host").status, "ok");
  assert.match(
    get(report, "target.port.4420.listening").seen,
    /^port 4420 answers at 10\.78\.0\.1:4420: bound/,
  );
  assert.deepEqual(report.checks.filter((c) => c.id.startsWith("reach.")), []);
  assert.equal(code, 0, failures(report));
});

Deno.test("fabric doctor: an unused address is 'target unreachable' (no ARP answer)", async () => {
  const { code, report } = await doctorOn("host1", ["-a", "10.78.0.99", "--timeout", "3000"]);
  assert.equal(code, 1);
  assert.equal(report.role, "initiator");
  const a = get(report, "reach.address");
  assert.equal(a.status, "fail");
  assert.match(a.seen, /^target unreachable: 10\.78\.0\.99 did not answer ARP on fab0/);
  assert.equal(get(report, "reach.listener").status, "skip");
  assert.equal(get(report, "reach.roce_v2").status, "skip");
});

Deno.test("fabric doctor: the target up with no port on 4420 is 'target up but nothing listening'", async () => {
  await must("target", "modprobe nvmet-rdma"); // a target's RDMA-CM is there to reject
  const { code, report } = await doctorOn("host1", ["-a", TARGET, "--timeout", "3000"]);
  assert.equal(code, 1);
  assert.equal(get(report, "reach.address").status, "ok");
  assert.equal(get(report, "reach.roce_v2").status, "ok"); // the reject came back over RoCE v2
  const l = get(report, "reach.listener");
  assert.equal(l.status, "fail");
  assert.match(
    l.seen,
    /^target up but nothing listening: 10\.78\.0\.1 answers ICMP echo in [\d.]+ ms, but nothing listens at 10\.78\.0\.1:4420.*reason 8/,
  );
  assert.match(l.fix!, /addr_trsvcid/);
});

Deno.test("fabric doctor: UDP 4791 dropped by nft on the target is 'RoCE v2 blocked'", async () => {
  await using _t = await exportOnTarget("nft", 4420);
  await must(
    "target",
    `nft add table inet ${NFT_TABLE}; ` +
      `nft add chain inet ${NFT_TABLE} in '{ type filter hook input priority 0; }'; ` +
      `nft add rule inet ${NFT_TABLE} in udp dport 4791 drop`,
  );
  try {
    const { code, report } = await doctorOn("host1", ["-a", TARGET, "--timeout", "3000"]);
    assert.equal(code, 1);
    assert.equal(get(report, "reach.address").status, "ok");
    const r = get(report, "reach.roce_v2");
    assert.equal(r.status, "fail");
    assert.match(r.seen, /^RoCE v2 blocked: 10\.78\.0\.1 answers ICMP echo/);
    assert.match(r.seen, /UDP port 4791/);
    assert.match(r.fix!, /^on the target: nft list ruleset \| grep 4791; allow udp dport 4791/);
    assert.match(r.fix!, /TCP 4420 is not what RoCE v2 needs/);
    assert.equal(
      report.checks.find((c) => c.id.startsWith("reach.") && c.status === "fail")?.id,
      "reach.roce_v2",
    );
  } finally {
    await on("target", `nft delete table inet ${NFT_TABLE}`);
  }
});

/** Sets the MTU of the target's fab0 bridge and every port of it. */
function targetBridgeMtu(mtu: number): string {
  return `for p in $(ls /sys/class/net/fab0/brif); do ip link set "$p" mtu ${mtu}; done; ` +
    `ip link set fab0 mtu ${mtu}`;
}

Deno.test("fabric doctor: host1's fab0 at 9000 and the target at 1500 is an MTU mismatch, fixed by raising the target", async () => {
  await using _t = await exportOnTarget("mtu", 4420);
  try {
    await must("host1", "ip link set fab0 mtu 9000 && sleep 1");
    const { report } = await doctorOn("host1", ["-a", TARGET, "--timeout", "3000"]);
    const m = get(report, "reach.path_mtu");
    assert.equal(m.status, "fail", JSON.stringify(m));
    assert.match(m.seen, /^MTU mismatch: .*fab0 MTU 9000, RoCE active MTU 4096/);
    assert.match(m.seen, /RoCE path MTU: this host's side 4096, the target's side at most 1024/);
    assert.match(
      m.fix!,
      /^set fab0's MTU to 1500 on this host \(ip link set fab0 mtu 1500\), or the target's .* to 9000$/,
    );

    // The fix on the target's side: the bridge and each of its ports.
    await must("target", `${targetBridgeMtu(9000)} && sleep 1`);
    const after = await doctorOn("host1", ["-a", TARGET, "--timeout", "3000"]);
    const ok = get(after.report, "reach.path_mtu");
    assert.equal(ok.status, "ok", JSON.stringify(ok));
    assert.match(ok.seen, /carries 9000-byte packets both ways/);
  } finally {
    await on("host1", "ip link set fab0 mtu 1500");
    await on("target", targetBridgeMtu(1500));
  }
});

Deno.test("fabric doctor: 5 % loss on the target's fab0 shows as 'the fabric is not lossless'", async () => {
  await using _t = await exportOnTarget("loss", 4420);
  await must("target", "tc qdisc add dev fab0 root netem loss 5%");
  try {
    const { report } = await doctorOn("host1", ["-a", TARGET, "--timeout", "10000"]);
    const l = get(report, "reach.loss");
    assert.equal(l.status, "warn", JSON.stringify(l));
    assert.match(l.seen, /^the fabric is not lossless: during \d+ Identify Controller transfers/);
    assert.match(l.seen, /rxe0 port 1 counted \w+ \+\d+/);
    assert.match(l.fix!, /tc -s qdisc show dev fab0/);
  } finally {
    await on("target", "tc qdisc del dev fab0 root");
  }
});

Deno.test("fabric doctor: a clean link gives reach.loss ok", async () => {
  await using _t = await exportOnTarget("clean", 4420);
  const { report } = await doctorOn("host1", ["-a", TARGET]);
  const l = get(report, "reach.loss");
  assert.equal(l.status, "ok", JSON.stringify(l));
  assert.match(l.seen, /no retransmission or sequence-error counter moved/);
});
