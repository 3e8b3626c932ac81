/**
 * `nvmeof doctor` on the real kernel (lab guest: nvmet-rdma target and nvme-rdma host on rxe0,
 * 10.77.0.1). Each scenario builds its target with plain configfs writes, runs the doctor once
 * with -o json, checks the report's shape and the verdict the scenario must give, and removes
 * everything it made even when it fails.
 */
import assert from "node:assert/strict";
import { nvmeof, sh } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:d0c70000-0000-4000-8000-00000000d0c1";
const HI = "d0c70000-0000-4000-8000-00000000d0c1";
const ADDR = "10.77.0.1";
const ID = ["-q", HQ, "-I", HI];
const N = "/sys/kernel/config/nvmet";
const STATUSES = ["ok", "warn", "fail", "skip"];

interface Check {
  id: string;
  status: string;
  seen: string;
  fix?: string;
}
interface Report {
  role: string;
  traddr?: string;
  trsvcid: string;
  nqn?: string;
  checks: Check[];
  summary: Record<string, number>;
  verdict: string;
}

/** Runs the doctor with -o json and validates the report's shape and its exit code. */
async function doctor(args: string[]): Promise<{ code: number; report: Report; stderr: string }> {
  const r = await nvmeof(["doctor", ...args, "-o", "json"]);
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.stderr}`);
  const report = JSON.parse(r.stdout) as Report;
  assert.ok(["initiator", "target", "both"].includes(report.role));
  assert.equal(typeof report.trsvcid, "string");
  assert.ok(Array.isArray(report.checks) && report.checks.length > 0);
  const counts: Record<string, number> = { ok: 0, warn: 0, fail: 0, skip: 0 };
  const ids = new Set<string>();
  for (const c of report.checks) {
    assert.deepEqual(
      Object.keys(c).filter((k) => !["id", "status", "seen", "fix", "found"].includes(k)),
      [],
      JSON.stringify(c),
    );
    assert.equal(typeof c.id, "string");
    assert.ok(!ids.has(c.id), `duplicate check id ${c.id}`);
    ids.add(c.id);
    assert.ok(STATUSES.includes(c.status), c.status);
    assert.ok(typeof c.seen === "string" && c.seen.length > 0, JSON.stringify(c));
    if (c.status === "ok") assert.equal(c.fix, undefined, JSON.stringify(c));
    if (c.status === "fail") assert.ok(c.fix, `a failing check needs a fix: ${JSON.stringify(c)}`);
    counts[c.status]++;
  }
  assert.deepEqual(report.summary, counts);
  assert.equal(r.code, counts.fail > 0 ? 1 : 0);
  assert.equal(typeof report.verdict, "string");
  return { code: r.code, report, stderr: r.stderr };
}

function get(r: Report, id: string): Check {
  const c = r.checks.find((x) => x.id === id);
  assert.ok(c, `no check ${id} in ${r.checks.map((x) => x.id).join(", ")}`);
  return c;
}

interface Spec {
  tag: string;
  subsystems: string[];
  /** Hosts allowed on every subsystem; absent = allow any host. */
  allowedHost?: string;
  /** The port: address, trsvcid, which subsystems to link. Absent = no port. */
  port?: { id: number; traddr: string; trsvcid: number; link: string[] };
  /** Extra address to put on rxenet0 for the scenario. */
  extraAddr?: string;
}

/** Builds the target; the returned disposer tears it down in reverse order. */
async function target(spec: Spec): Promise<AsyncDisposable> {
  const nb = (i: number) => `nullb_doc_${spec.tag}_${i}`;
  const lines = ["set -e"];
  if (spec.extraAddr) lines.push(`ip addr add ${spec.extraAddr}/24 dev rxenet0`, "sleep 1");
  spec.subsystems.forEach((nqn, i) => {
    lines.push(
      `mkdir /sys/kernel/config/nullb/${nb(i)}`,
      `cd /sys/kernel/config/nullb/${
        nb(i)
      }; echo 64 > size; echo 1 > memory_backed; echo 1 > power`,
      `mkdir ${N}/subsystems/${nqn}`,
      `mkdir ${N}/subsystems/${nqn}/namespaces/1`,
      `echo /dev/${nb(i)} > ${N}/subsystems/${nqn}/namespaces/1/device_path`,
      `echo 1 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
    );
    if (spec.allowedHost) {
      lines.push(
        `mkdir -p ${N}/hosts/${spec.allowedHost}`,
        `ln -s ${N}/hosts/${spec.allowedHost} ${N}/subsystems/${nqn}/allowed_hosts/${spec.allowedHost}`,
      );
    } else {
      lines.push(`echo 1 > ${N}/subsystems/${nqn}/attr_allow_any_host`);
    }
  });
  if (spec.port) {
    const p = `${N}/ports/${spec.port.id}`;
    lines.push(
      `mkdir ${p}`,
      `echo rdma > ${p}/addr_trtype; echo ipv4 > ${p}/addr_adrfam`,
      `echo ${spec.port.traddr} > ${p}/addr_traddr; echo ${spec.port.trsvcid} > ${p}/addr_trsvcid`,
      ...spec.port.link.map((nqn) => `ln -s ${N}/subsystems/${nqn} ${p}/subsystems/${nqn}`),
    );
  }
  const teardown = async () => {
    const t = [
      ...spec.subsystems.map((nqn) =>
        `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${nqn}" ] && echo 1 > $c/delete_controller; done`
      ),
      ...(spec.port
        ? [
          ...spec.port.link.map((nqn) => `rm -f ${N}/ports/${spec.port!.id}/subsystems/${nqn}`),
          `rmdir ${N}/ports/${spec.port.id}`,
        ]
        : []),
      ...spec.subsystems.flatMap((nqn, i) => [
        `echo 0 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
        `rmdir ${N}/subsystems/${nqn}/namespaces/1`,
        ...(spec.allowedHost
          ? [`rm -f ${N}/subsystems/${nqn}/allowed_hosts/${spec.allowedHost}`]
          : []),
        `rmdir ${N}/subsystems/${nqn}`,
        `echo 0 > /sys/kernel/config/nullb/${nb(i)}/power`,
        `rmdir /sys/kernel/config/nullb/${nb(i)}`,
      ]),
      ...(spec.allowedHost ? [`rmdir ${N}/hosts/${spec.allowedHost}`] : []),
      ...(spec.extraAddr ? [`ip addr del ${spec.extraAddr}/24 dev rxenet0`] : []),
    ];
    await sh(t.map((l) => `${l} 2>/dev/null`).join("\n"));
  };
  const r = await sh(lines.join("\n"));
  if (r.code !== 0) {
    await teardown();
    throw new Error(`target setup failed: ${r.stderr}`);
  }
  return { [Symbol.asyncDispose]: teardown };
}

Deno.test("doctor: a healthy target and host give no failure and no warning, exit 0; MTU 1500 shows RoCE 1024", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:doc-healthy";
  await using _t = await target({
    tag: "h",
    subsystems: [nqn],
    allowedHost: HQ,
    port: { id: 71, traddr: ADDR, trsvcid: 4471, link: [nqn] },
  });
  const { code, report } = await doctor(["-a", ADDR, "-s", "4471", "-n", nqn, ...ID]);
  const bad = report.checks.filter((c) => c.status === "fail" || c.status === "warn");
  assert.deepEqual(bad, [], JSON.stringify(bad, null, 2));
  assert.equal(code, 0);
  assert.equal(get(report, "reach.listener").status, "ok");
  assert.match(get(report, "reach.listener").seen, /accepted an admin-queue connect/);
  assert.equal(get(report, "reach.kernel_connect").status, "ok");
  assert.match(get(report, "reach.kernel_connect").seen, /disconnected again/);
  assert.equal(get(report, "target.expect.port").status, "ok");
  assert.equal(get(report, "target.expect.host").status, "ok");
  assert.match(
    get(report, "target.port.71.listening").seen,
    /^port 71 answers at 10\.77\.0\.1:4471: bound/,
  );
  assert.equal(get(report, "fabric.gid").status, "ok");
  assert.equal(get(report, "fabric.route").status, "ok");
  const mtu = get(report, "fabric.port.rxe0.1.mtu");
  assert.equal(mtu.status, "ok");
  assert.match(mtu.seen, /netdev rxenet0 MTU 1500, RoCE active MTU 1024/);
  // every skip says why
  for (const c of report.checks.filter((c) => c.status === "skip")) {
    assert.match(c.seen, /could not|no |not /, JSON.stringify(c));
  }
  // the kernel connect left no controller behind
  const left = await sh(`grep -lx '${nqn}' /sys/class/nvme/nvme*/subsysnqn 2>/dev/null | wc -l`);
  assert.equal(left.stdout.trim(), "0");
});

Deno.test("doctor: no port configured: nothing is listening, and no rdma port on the target", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:doc-noport";
  await using _t = await target({ tag: "np", subsystems: [nqn], allowedHost: HQ });
  const { code, report } = await doctor(["-a", ADDR, "-s", "4472"]);
  assert.equal(code, 1);
  const l = get(report, "reach.listener");
  assert.equal(l.status, "fail");
  assert.match(l.seen, /nothing listens at 10\.77\.0\.1:4472/);
  assert.match(l.fix!, /addr_trsvcid/);
  assert.equal(get(report, "target.ports").status, "fail");
  assert.match(report.verdict, /^cause: /);
});

Deno.test("doctor: a port for another address: nothing listens at the one asked, and the port names its own", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:doc-otheraddr";
  await using _t = await target({
    tag: "oa",
    subsystems: [nqn],
    allowedHost: HQ,
    extraAddr: "10.77.0.2",
    port: { id: 73, traddr: "10.77.0.2", trsvcid: 4473, link: [nqn] },
  });
  const { code, report } = await doctor(["-a", ADDR, "-s", "4473", "-n", nqn, ...ID]);
  assert.equal(code, 1);
  const l = get(report, "reach.listener");
  assert.equal(l.status, "fail");
  assert.match(l.seen, /nothing listens at 10\.77\.0\.1:4473 itself.*bound to another address/);
  const p = get(report, "target.expect.port");
  assert.equal(p.status, "fail");
  assert.match(
    p.seen,
    /no rdma port on this target is for 10\.77\.0\.1:4473.*73 for 10\.77\.0\.2:4473/,
  );
  assert.equal(get(report, "target.port.73.address").status, "ok");
  assert.equal(get(report, "target.port.73.listening").status, "ok"); // bound on its own address
  assert.equal(get(report, "reach.kernel_connect").status, "fail");
});

Deno.test("doctor -n: a host not in allowed_hosts is named, with the link to add", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:doc-guarded";
  const other = "nqn.2024-01.io.nvmeof.e2e:someone-else";
  await using _t = await target({
    tag: "na",
    subsystems: [nqn],
    allowedHost: other,
    port: { id: 74, traddr: ADDR, trsvcid: 4474, link: [nqn] },
  });
  const { code, report } = await doctor(["-a", ADDR, "-s", "4474", "-n", nqn, ...ID]);
  assert.equal(code, 1);
  assert.equal(get(report, "reach.listener").status, "ok");
  const h = get(report, "target.expect.host");
  assert.equal(h.status, "fail");
  assert.ok(h.seen.includes(`host '${HQ}' is not in allowed_hosts`), h.seen);
  assert.ok(h.fix!.includes(`allowed_hosts/${HQ}`), h.fix);
  const k = get(report, "reach.kernel_connect");
  assert.equal(k.status, "fail");
  assert.ok(k.seen.includes(`refused host '${HQ}'`), k.seen);
  assert.ok(
    k.fix!.includes(`ln -s ${N}/hosts/${HQ} ${N}/subsystems/${nqn}/allowed_hosts/${HQ}`),
    k.fix,
  );
});

Deno.test("doctor -n: a subsystem not linked to the port is named, with the link to add", async () => {
  const linked = "nqn.2024-01.io.nvmeof.e2e:doc-linked";
  const nqn = "nqn.2024-01.io.nvmeof.e2e:doc-unlinked";
  await using _t = await target({
    tag: "ul",
    subsystems: [linked, nqn],
    allowedHost: HQ,
    port: { id: 75, traddr: ADDR, trsvcid: 4475, link: [linked] },
  });
  const { code, report } = await doctor(["-a", ADDR, "-s", "4475", "-n", nqn, ...ID]);
  assert.equal(code, 1);
  assert.equal(get(report, "reach.listener").status, "ok");
  const p = get(report, "target.expect.port");
  assert.equal(p.status, "fail");
  assert.ok(p.seen.includes(`'${nqn}' is not linked to port 75`), p.seen);
  assert.ok(p.fix!.includes(`ports/75/subsystems/${nqn}`), p.fix);
  const k = get(report, "reach.kernel_connect");
  assert.equal(k.status, "fail");
  assert.ok(k.seen.includes(`does not export '${nqn}'`), k.seen);
});

Deno.test("doctor: nvme-rdma not loaded is reported with how to load it", async () => {
  const unload = await sh("modprobe -r nvme-rdma");
  if (unload.code !== 0) {
    console.log(`skipped: this guest cannot unload nvme-rdma (${unload.stderr.trim()})`);
    return;
  }
  try {
    const { report } = await doctor(["--role", "initiator"]);
    const m = get(report, "host.module.nvme_rdma");
    assert.equal(m.status, "warn");
    assert.match(m.seen, /module nvme-rdma is not loaded \(it is installed/);
    assert.match(m.fix!, /^modprobe nvme-rdma/);
  } finally {
    await sh("modprobe nvme-rdma");
  }
});

Deno.test("doctor: a netdev MTU of 9000 gives RoCE MTU 4096, reported as the largest", async () => {
  const set = await sh("ip link set rxenet0 mtu 9000 && sleep 1");
  try {
    assert.equal(set.code, 0, set.stderr);
    const { report } = await doctor(["--role", "initiator"]);
    const mtu = get(report, "fabric.port.rxe0.1.mtu");
    assert.equal(mtu.status, "ok");
    assert.match(mtu.seen, /netdev rxenet0 MTU 9000, RoCE active MTU 4096 \(the largest/);
  } finally {
    await sh("ip link set rxenet0 mtu 1500; sleep 1");
  }
});

Deno.test("doctor: an address nobody answers for on the RDMA subnet: target unreachable", async () => {
  // rxenet0 is a dummy netdev (NOARP): address and route resolve, but nothing answers ICMP echo
  // or the connect request. The silence is the address's, so reach.address names it and the
  // listener and RoCE v2 checks defer to it.
  const { code, report } = await doctor([
    "--role",
    "initiator",
    "-a",
    "10.77.0.9",
    "-s",
    "4479",
    "--timeout",
    "2000",
  ]);
  assert.equal(code, 1);
  const a = get(report, "reach.address");
  assert.equal(a.status, "fail");
  assert.match(a.seen, /^target unreachable: no ICMP echo reply from 10\.77\.0\.9/);
  assert.equal(get(report, "reach.listener").status, "skip");
  assert.equal(get(report, "reach.roce_v2").status, "skip");
  assert.match(report.verdict, /^cause: target unreachable/);
  assert.equal(get(report, "fabric.route").status, "ok"); // the route itself is fine: rxenet0
});
