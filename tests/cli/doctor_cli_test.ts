/**
 * `nvmeof doctor` as a user runs it, against temporary sysfs/procfs/configfs trees (the roots
 * move with --configfs, NVMEOF_SYSFS, NVMEOF_PROC, NVMEOF_DEV, NVMEOF_ETC_NVME,
 * NVMEOF_LIB_MODULES). The RDMA device checks read this machine's libibverbs, so the tests
 * assert on the parts the trees decide.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";

const SUB = "nqn.2024-01.io.example:cli-disk";
const HQ = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555";
const HI = "11111111-2222-4333-8444-555555555555";

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text);
}

/** A host with a target whose port 1 has no subsystem linked and a subsystem that allows any host. */
async function fixture(root: string): Promise<{ env: Record<string, string>; configfs: string }> {
  const n = `${root}/config/nvmet`;
  await write(`${n}/subsystems/${SUB}/attr_allow_any_host`, "1\n");
  await Deno.mkdir(`${n}/subsystems/${SUB}/allowed_hosts`, { recursive: true });
  await write(`${n}/subsystems/${SUB}/namespaces/1/device_path`, "/dev/nullb0\n");
  await write(`${n}/subsystems/${SUB}/namespaces/1/enable`, "1\n");
  await Deno.mkdir(`${n}/hosts`, { recursive: true });
  for (
    const [f, v] of [["addr_trtype", "rdma"], ["addr_adrfam", "ipv4"], ["addr_traddr", "0.0.0.0"], [
      "addr_trsvcid",
      "4420",
    ]]
  ) {
    await write(`${n}/ports/1/${f}`, v + "\n");
  }
  await Deno.mkdir(`${n}/ports/1/subsystems`, { recursive: true });
  await write(`${root}/proc/mounts`, `configfs ${root}/config configfs rw 0 0\n`);
  await write(`${root}/proc/sys/kernel/osrelease`, "6.1.0-test\n");
  await write(
    `${root}/lib/modules/6.1.0-test/modules.dep`,
    "kernel/drivers/nvme/host/nvme-rdma.ko: \nkernel/drivers/nvme/host/nvme-fabrics.ko: \n" +
      "kernel/drivers/nvme/target/nvmet-rdma.ko: \n",
  );
  await write(`${root}/sys/module/nvme_fabrics/refcnt`, "1\n");
  await write(`${root}/dev/nvme-fabrics`, "");
  await write(`${root}/etc/nvme/hostnqn`, HQ + "\n");
  await write(`${root}/etc/nvme/hostid`, HI + "\n");
  return {
    configfs: `${root}/config`,
    env: {
      NVMEOF_SYSFS: `${root}/sys`,
      NVMEOF_PROC: `${root}/proc`,
      NVMEOF_DEV: `${root}/dev`,
      NVMEOF_ETC_NVME: `${root}/etc/nvme`,
      NVMEOF_LIB_MODULES: `${root}/lib/modules`,
    },
  };
}

Deno.test("doctor --role target: an unlinked port fails with its fix, allow_any_host warns, exit 1", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  const r = await nvmeof(["doctor", "--role", "target", "--configfs", f.configfs], { env: f.env });
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stdout.split("\n");
  const port = lines.findIndex((l) =>
    /^fail\s+target\.port\.1\.enabled\s+port 1 \(0\.0\.0\.0:4420\) has no subsystem linked/.test(l)
  );
  assert.ok(port >= 0, r.stdout);
  assert.match(lines[port + 1], /^\s+fix: ln -s \/sys\/kernel\/config\/nvmet\/subsystems\/NQN/);
  assert.match(
    r.stdout,
    new RegExp(
      `^warn\\s+target\\.subsystem\\.${
        SUB.replaceAll(".", "\\.")
      }\\.hosts\\s+'${SUB}' has allow_any_host 1`,
      "m",
    ),
  );
  assert.match(r.stdout, /^ok\s+target\.configfs\s+configfs is mounted on /m);
  assert.match(
    r.stdout,
    /^warn\s+target\.module\.nvmet_rdma\s+module nvmet-rdma is not loaded \(it is installed/m,
  );
  assert.match(r.stdout, /^skip\s+reach\s+no -a TARGET_ADDR given/m);
  assert.match(r.stdout, /\d+ ok, \d+ warn, \d+ fail, \d+ skip\ncause: /);
});

Deno.test("doctor -o json: the same checks as data, summary counts matching, exit 1 on a failure", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  const r = await nvmeof([
    "doctor",
    "--role",
    "target",
    "--configfs",
    f.configfs,
    "-n",
    SUB,
    "-o",
    "json",
  ], {
    env: f.env,
  });
  assert.equal(r.code, 1, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(j.role, "target");
  assert.equal(j.nqn, SUB);
  const counts: Record<string, number> = { ok: 0, warn: 0, fail: 0, skip: 0 };
  for (const c of j.checks) {
    assert.deepEqual(
      Object.keys(c).filter((k) => !["id", "status", "seen", "fix", "found"].includes(k)),
      [],
    );
    counts[c.status]++;
  }
  assert.deepEqual(j.summary, counts);
  const port = j.checks.find((c: { id: string }) => c.id === "target.port.1.enabled");
  assert.equal(port.status, "fail");
  assert.ok(port.fix.includes("ports/1/subsystems/NQN"));
  assert.ok(
    !j.checks.some((c: { id: string }) => c.id.startsWith("host.")),
    "target role has no host checks",
  );
});

Deno.test("doctor --role initiator reads modules and identity from the given roots", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  const r = await nvmeof(["doctor", "--role", "initiator", "-o", "json"], { env: f.env });
  const j = JSON.parse(r.stdout);
  const get = (id: string) => j.checks.find((c: { id: string }) => c.id === id);
  assert.equal(get("host.module.nvme_fabrics").status, "ok");
  assert.equal(get("host.module.nvme_rdma").status, "warn");
  assert.match(get("host.module.nvme_rdma").fix, /^modprobe nvme-rdma/);
  assert.equal(get("host.dev.nvme_fabrics").status, "ok");
  assert.equal(get("host.identity").status, "ok");
  assert.equal(get("host.module.rdma_ucm").status, "fail");
  assert.ok(!j.checks.some((c: { id: string }) => c.id.startsWith("target.")));
  assert.equal(r.code, 1);
});

Deno.test("doctor usage errors: a bad --role, -q without -I, a host name for -a (exit 2)", async () => {
  for (
    const [args, re] of [
      [["--role", "server"], /--role must be initiator, target or both/],
      [["-a", "10.0.0.2", "-n", SUB, "-q", HQ], /-q\/--hostnqn and -I\/--hostid go together/],
      [["-a", "target.example"], /is not an IPv4 or IPv6 address/],
    ] as [string[], RegExp][]
  ) {
    const r = await nvmeof(["doctor", ...args]);
    assert.equal(r.code, 2, `${args}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
});

Deno.test("doctor --help explains the verdicts and ends with worked examples", async () => {
  const r = await nvmeof(["doctor", "--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /reject reason 8 or UNREACHABLE means\s+nothing listens there/);
  assert.match(r.stdout, /nvmeof doctor -a 10\.0\.0\.2 -n nqn\.2024-01\.io\.example:disk1/);
});

Deno.test("doctor --role target -a -n -q: the subsystem is not on the wildcard port, the host is allowed", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  const r = await nvmeof([
    "doctor",
    "--role",
    "target",
    "--configfs",
    f.configfs,
    "-a",
    "10.0.0.1",
    "-n",
    SUB,
    "-q",
    HQ,
    "-o",
    "json",
  ], { env: f.env });
  assert.equal(r.code, 1, r.stderr);
  const j = JSON.parse(r.stdout);
  const get = (id: string) => j.checks.find((c: { id: string }) => c.id === id);
  assert.equal(get("target.expect.port").status, "fail");
  assert.ok(
    get("target.expect.port").seen.includes(`'${SUB}' is not linked to port 1 (0.0.0.0:4420)`),
  );
  assert.equal(get("target.expect.host").status, "ok");
  assert.ok(
    !j.checks.some((c: { id: string }) => c.id.startsWith("reach.")),
    "no probe in the target role",
  );
});

Deno.test("doctor -a REMOTE without --role: the local nvmet tree is not taken for the target's", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  // 192.0.2.1 (TEST-NET-1) is no address of this machine.
  const r = await nvmeof(
    ["doctor", "--configfs", f.configfs, "-a", "192.0.2.1", "--timeout", "200"],
    { env: f.env },
  );
  assert.match(
    r.stdout,
    /^role: initiator \(192\.0\.2\.1 is not an address of this machine: the target is checked from this host's side only/,
  );
  assert.doesNotMatch(r.stdout, /^\w+\s+target\./m);
  assert.doesNotMatch(r.stdout, /no rdma port in|does not exist on this target/);
});

Deno.test("doctor -a LOCAL without --role checks the local target too, and says why", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  const r = await nvmeof(
    ["doctor", "--configfs", f.configfs, "-a", "127.0.0.1", "--timeout", "200", "-o", "json"],
    { env: f.env },
  );
  const j = JSON.parse(r.stdout);
  assert.equal(j.role, "both");
  assert.equal(j.role_reason, "127.0.0.1 is an address of this machine (lo): the target is here");
  const port = j.checks.find((c: { id: string }) => c.id === "target.port.1.enabled");
  assert.equal(port.status, "fail");
});

/** A listener on 127.0.0.1 that answers every ICReq with nvmet-tcp's ICResp; closed by `await using`. */
function fakeNvmeTcpTarget() {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served = (async () => {
    for await (const c of l) {
      try {
        const req = new Uint8Array(128);
        let got = 0;
        while (got < 128) {
          const n = await c.read(req.subarray(got));
          if (n === null) break;
          got += n;
        }
        const b = new Uint8Array(128);
        b[0] = 0x01;
        b[2] = 128;
        new DataView(b.buffer).setUint32(4, 128, true);
        new DataView(b.buffer).setUint32(12, 0x400000, true);
        if (got === 128 && req[0] === 0x00) await c.write(b);
        await c.read(new Uint8Array(1)); // the doctor's FIN
      } catch { /* the doctor went away */ }
      c.close();
    }
  })().catch(() => {});
  return {
    port: (l.addr as Deno.NetAddr).port,
    async [Symbol.asyncDispose]() {
      l.close();
      await served;
    },
  };
}

Deno.test("doctor -t tcp: an NVMe/TCP listener's ICResp is reach.listener ok, found as data; nvme-tcp replaces the RDMA host checks", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  await using t = fakeNvmeTcpTarget();
  const r = await nvmeof(
    [
      "doctor",
      "-t",
      "tcp",
      "--role",
      "initiator",
      "-a",
      "127.0.0.1",
      "-s",
      String(t.port),
      "-o",
      "json",
    ],
    { env: f.env },
  );
  const j = JSON.parse(r.stdout);
  const get = (id: string) => j.checks.find((c: { id: string }) => c.id === id);
  const l = get("reach.listener");
  assert.equal(l.status, "ok", JSON.stringify(l));
  assert.match(
    l.seen,
    new RegExp(`^an NVMe/TCP target answers at 127\\.0\\.0\\.1:${t.port}: ICResp PFV 0`),
  );
  assert.deepEqual(l.found.icresp, {
    pfv: 0,
    cpda: 0,
    hdgst: false,
    ddgst: false,
    maxh2cdata: 4194304,
  });
  assert.equal(l.found.target_close, "fin");
  // nvme-tcp is not in the fixture's modules.dep: not installed.
  assert.equal(get("host.module.nvme_tcp").status, "fail");
  assert.match(get("host.module.nvme_tcp").seen, /nvme-tcp/);
  assert.equal(get("host.module.nvme_rdma"), undefined);
  assert.equal(get("host.module.rdma_ucm"), undefined);
  for (const rdmaOnly of ["reach.roce_v2", "reach.path_mtu", "reach.loss", "fabric.gid"]) {
    assert.equal(get(rdmaOnly), undefined, rdmaOnly);
  }
  assert.equal(get("fabric.route").status, "ok");
  assert.notEqual(get("fabric.rdma_device").status, "fail");
});

Deno.test("doctor -t tcp: a port nobody listens on is 'refused', exit 1, the tcp port to create named", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const r = await nvmeof(
    ["doctor", "-t", "tcp", "--role", "initiator", "-a", "127.0.0.1", "-s", String(port)],
    { env: f.env },
  );
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stdout,
    new RegExp(
      `^fail\\s+reach\\.listener\\s+nothing listens at 127\\.0\\.0\\.1:${port}: the TCP connect was refused \\(ECONNREFUSED\\)`,
      "m",
    ),
  );
  assert.match(r.stdout, /fix: on the target, create a tcp port for 127\.0\.0\.1/);
});

Deno.test("doctor -t with an unknown transport is a usage error, exit 2", async () => {
  const r = await nvmeof(["doctor", "-t", "fc", "-a", "127.0.0.1"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Transport 'fc' is not supported/);
});

Deno.test("doctor on a tcp-only target: without -t its ports' transport is checked; -t rdma asks for an rdma port", async () => {
  await using d = await tempDir();
  const f = await fixture(d.path);
  await write(`${f.configfs}/nvmet/ports/1/addr_trtype`, "tcp\n");
  const run = async (extra: string[]) => {
    const r = await nvmeof([
      "doctor",
      "--role",
      "target",
      "--configfs",
      f.configfs,
      ...extra,
      "-o",
      "json",
    ], {
      env: f.env,
    });
    return JSON.parse(r.stdout).checks as { id: string; status: string; seen: string }[];
  };
  const plain = await run([]);
  const target = plain.filter((c) => c.id.startsWith("target."));
  assert.deepEqual(target.filter((c) => /rdma/.test(c.id + c.seen)), []);
  // No RDMA device is needed either (this machine has none: a skip, not a failure).
  assert.notEqual(plain.find((c) => c.id === "fabric.rdma_device")?.status, "fail");
  assert.ok(plain.some((c) => c.id === "target.module.nvmet_tcp"), JSON.stringify(plain));
  assert.equal(plain.find((c) => c.id === "target.ports"), undefined);
  const rdma = await run(["-t", "rdma"]);
  const ports = rdma.find((c) => c.id === "target.ports");
  assert.equal(ports?.status, "fail");
  assert.match(ports!.seen, /no rdma port .*\(1 port\(s\) of other transports\)/);
});
