/**
 * The doctor's target checks against a temporary nvmet tree laid out like configfs (directories,
 * attribute files, symlinks), with a described RDMA device for the address checks.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers.ts";
import type { Check } from "../../src/doctor/check.ts";
import type { Devices } from "../../src/doctor/fabric.ts";
import type { DoctorPaths } from "../../src/doctor/kernel_paths.ts";
import { expectChecks, readNvmet, targetChecks } from "../../src/doctor/target.ts";
import type { LivePort, LiveTree } from "../../src/configfs/nvmet.ts";
import { isAnyAddress } from "../../src/net/address.ts";

const SUB = "nqn.2024-01.io.example:disk1";
const SUB2 = "nqn.2024-01.io.example:disk2";
const HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555";
const DEVS: Devices = {
  devices: [{
    name: "rxe0",
    ports: [{
      port: 1,
      state: "ACTIVE",
      phys_state: "LINK_UP",
      link_layer: "Ethernet",
      max_mtu: 4096,
      active_mtu: 1024,
      netdev: "eth1",
      netdev_mtu: 1500,
      gids: [{ index: 1, type: "RoCE v2", netdev: "eth1", ip: "10.0.0.1" }],
    }],
  }],
};

interface Layout {
  subsystems: { nqn: string; anyHost?: boolean; hosts?: string[]; ns?: boolean[] }[];
  ports: {
    id: number;
    traddr: string;
    trsvcid: string;
    links: string[];
    adrfam?: string;
    trtype?: string;
  }[];
  /** Modules loaded (default: nvmet_rdma). */
  modules?: string[];
}

async function nvmet(root: string, l: Layout): Promise<DoctorPaths> {
  const n = `${root}/config/nvmet`;
  const w = async (p: string, v: string) => {
    await Deno.mkdir(p.slice(0, p.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(p, v + "\n");
  };
  await Deno.mkdir(`${n}/hosts`, { recursive: true });
  await Deno.mkdir(`${n}/ports`, { recursive: true });
  for (const s of l.subsystems) {
    const d = `${n}/subsystems/${s.nqn}`;
    await w(`${d}/attr_allow_any_host`, s.anyHost ? "1" : "0");
    await Deno.mkdir(`${d}/allowed_hosts`, { recursive: true });
    await Deno.mkdir(`${d}/namespaces`, { recursive: true });
    for (const h of s.hosts ?? []) {
      await Deno.mkdir(`${n}/hosts/${h}`, { recursive: true });
      await Deno.symlink(`${n}/hosts/${h}`, `${d}/allowed_hosts/${h}`);
    }
    for (const [i, on] of (s.ns ?? [true]).entries()) {
      await w(`${d}/namespaces/${i + 1}/device_path`, `/dev/nullb${i}`);
      await w(`${d}/namespaces/${i + 1}/enable`, on ? "1" : "0");
    }
  }
  for (const p of l.ports) {
    const d = `${n}/ports/${p.id}`;
    await w(`${d}/addr_trtype`, p.trtype ?? "rdma");
    await w(`${d}/addr_adrfam`, p.adrfam ?? "ipv4");
    await w(`${d}/addr_traddr`, p.traddr);
    await w(`${d}/addr_trsvcid`, p.trsvcid);
    await Deno.mkdir(`${d}/subsystems`, { recursive: true });
    for (const s of p.links) await Deno.symlink(`${n}/subsystems/${s}`, `${d}/subsystems/${s}`);
  }
  await w(`${root}/proc/mounts`, `configfs ${root}/config configfs rw 0 0`);
  for (const m of l.modules ?? ["nvmet_rdma"]) await w(`${root}/sys/module/${m}/refcnt`, "1");
  return {
    sysfs: `${root}/sys`,
    proc: `${root}/proc`,
    dev: `${root}/dev`,
    etcNvme: `${root}/etc/nvme`,
    libModules: `${root}/lib/modules`,
    configfs: `${root}/config`,
  };
}

function byId(checks: Check[], id: string): Check {
  const c = checks.find((x) => x.id === id);
  assert.ok(c, `no ${id} in ${checks.map((x) => x.id).join(", ")}`);
  return c;
}

Deno.test("target: a healthy port and subsystem with the host allowed gives only ok", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, hosts: [HOST] }],
    ports: [{ id: 1, traddr: "10.0.0.1", trsvcid: "4420", links: [SUB] }],
  });
  const checks = targetChecks(paths, readNvmet(paths), DEVS, {
    traddr: "10.0.0.1",
    trsvcid: "4420",
    nqn: SUB,
    hostnqn: HOST,
  }, true);
  assert.deepEqual(checks.filter((c) => c.status !== "ok"), []);
  assert.match(byId(checks, "target.port.1.address").seen, /on eth1 \(rxe0 port 1\)/);
  assert.match(byId(checks, "target.expect.port").seen, /linked to port 1/);
});

Deno.test("target: a port with no subsystem linked is not enabled, with the link to make", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, hosts: [HOST] }],
    ports: [{ id: 2, traddr: "10.0.0.1", trsvcid: "4420", links: [] }],
  });
  const c = byId(
    targetChecks(paths, readNvmet(paths), DEVS, { trsvcid: "4420" }, true),
    "target.port.2.enabled",
  );
  assert.equal(c.status, "fail");
  assert.match(c.seen, /no subsystem linked: it is not enabled, nothing listens there/);
  assert.match(
    c.fix!,
    /ln -s \/sys\/kernel\/config\/nvmet\/subsystems\/NQN .*ports\/2\/subsystems\/NQN/,
  );
});

Deno.test("target: a port address on no RDMA netdev fails (the bind cannot succeed)", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, anyHost: true }],
    ports: [{ id: 3, traddr: "192.168.5.5", trsvcid: "4420", links: [SUB] }],
  });
  const checks = targetChecks(paths, readNvmet(paths), DEVS, { trsvcid: "4420" }, true);
  const a = byId(checks, "target.port.3.address");
  assert.equal(a.status, "fail");
  assert.match(a.seen, /192\.168\.5\.5 is on no RDMA netdev/);
  assert.equal(byId(checks, `target.subsystem.${SUB}.hosts`).status, "warn");
  // unreadable devices: the address check says it could not determine
  const s = byId(
    targetChecks(paths, readNvmet(paths), { error: "ENOSYS" }, { trsvcid: "4420" }, true),
    "target.port.3.address",
  );
  assert.equal(s.status, "skip");
  assert.match(s.seen, /could not determine/);
});

Deno.test("target: the Soft-RoCE fix names the netdev that holds the port's address, or placeholders", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, anyHost: true }],
    ports: [{ id: 3, traddr: "192.168.5.5", trsvcid: "4420", links: [SUB] }],
  });
  const fix = (local: { name: string; address: string }[]) =>
    byId(
      targetChecks(paths, readNvmet(paths), DEVS, { trsvcid: "4420" }, true, local),
      "target.port.3.address",
    ).fix!;
  const on = fix([{ name: "enp65s0f1", address: "192.168.5.5" }]);
  assert.match(on, /rdma link add rxe_enp65s0f1 type rxe netdev enp65s0f1/);
  const nowhere = fix([]);
  assert.match(nowhere, /rdma link add NAME type rxe netdev IFACE/);
  assert.doesNotMatch(on + nowhere, /rxe0/);
});

Deno.test("target: a tcp-only target is checked as tcp: nvmet-tcp, the address on any interface, no rdma asked for", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, hosts: [HOST] }],
    ports: [
      { id: 7, traddr: "10.1.0.1", trsvcid: "4420", links: [SUB], trtype: "tcp" },
      { id: 8, traddr: "10.9.9.9", trsvcid: "4420", links: [SUB], trtype: "tcp" },
    ],
    modules: ["nvmet_tcp"],
  });
  const local = [{ name: "eth2", address: "10.1.0.1" }];
  const e = { traddr: "10.1.0.1", trsvcid: "4420", nqn: SUB, hostnqn: HOST };
  // No -t: the ports' own transport. No RDMA device is needed for a tcp port's address.
  const checks = targetChecks(paths, readNvmet(paths), { error: "ENOSYS" }, e, true, local);
  assert.deepEqual(checks.filter((c) => c.id.includes("rdma")), []);
  assert.equal(byId(checks, "target.module.nvmet_tcp").status, "ok");
  assert.equal(checks.find((c) => c.id === "target.ports"), undefined);
  assert.match(byId(checks, "target.port.7.address").seen, /10\.1\.0\.1:4420, on eth2$/);
  const away = byId(checks, "target.port.8.address");
  assert.equal(away.status, "fail");
  assert.match(away.seen, /10\.9\.9\.9 is on no interface of this host: nvmet-tcp cannot bind it/);
  assert.match(away.fix!, /ip addr add 10\.9\.9\.9\/24 dev IFACE/);
  // With -t tcp the port the host uses is found among the tcp ports.
  const tcp = targetChecks(
    paths,
    readNvmet(paths),
    { error: "ENOSYS" },
    { ...e, trtype: "tcp" },
    true,
    local,
  );
  assert.equal(byId(tcp, "target.expect.port").status, "ok");
  assert.deepEqual(
    tcp.filter((c) => c.status === "fail").map((c) => c.id),
    ["target.port.8.address"],
  );
  // -t rdma asks for what this target does not have: nvmet-rdma and an rdma port.
  const rdma = targetChecks(paths, readNvmet(paths), DEVS, { ...e, trtype: "rdma" }, true, local);
  assert.equal(byId(rdma, "target.ports").status, "fail");
  assert.match(
    byId(rdma, "target.ports").seen,
    /no rdma port .*\(2 port\(s\) of other transports\)/,
  );
  assert.notEqual(byId(rdma, "target.module.nvmet_rdma").status, "ok");
  assert.match(
    byId(rdma, "target.expect.port").seen,
    /no rdma port on this target is for 10\.1\.0\.1:4420$/,
  );
});

Deno.test("target -n: subsystem not linked to the port for the address, host not allowed, port for another address", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, hosts: ["nqn.2024-01.io.example:other-host"] }, {
      nqn: SUB2,
      anyHost: true,
    }],
    ports: [
      { id: 1, traddr: "10.0.0.1", trsvcid: "4420", links: [SUB2] },
      { id: 5, traddr: "10.0.0.1", trsvcid: "4421", links: [SUB] },
    ],
  });
  const e = { traddr: "10.0.0.1", trsvcid: "4420", nqn: SUB, hostnqn: HOST };
  const checks = targetChecks(paths, readNvmet(paths), DEVS, e, true);
  const p = byId(checks, "target.expect.port");
  assert.equal(p.status, "fail");
  assert.ok(p.seen.includes(`'${SUB}' is not linked to port 1 (10.0.0.1:4420)`), p.seen);
  assert.ok(p.fix!.endsWith(`ports/1/subsystems/${SUB}`), p.fix);
  const h = byId(checks, "target.expect.host");
  assert.equal(h.status, "fail");
  assert.ok(h.fix!.includes(`allowed_hosts/${HOST}`));
  const other = byId(
    targetChecks(paths, readNvmet(paths), DEVS, { ...e, trsvcid: "4430" }, true),
    "target.expect.port",
  );
  assert.match(
    other.seen,
    /no rdma port on this target is for 10\.0\.0\.1:4430 \(rdma ports: 1 for 10\.0\.0\.1:4420, 5 for 10\.0\.0\.1:4421\)/,
  );
  const missing = byId(
    targetChecks(paths, readNvmet(paths), DEVS, { ...e, nqn: "nqn.2024-01.x:nope" }, true),
    "target.expect.subsystem",
  );
  assert.equal(missing.status, "fail");
});

Deno.test("target: no enabled namespace warns; no nvmet is a skip unless the target role is required", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, {
    subsystems: [{ nqn: SUB, anyHost: true, ns: [false] }],
    ports: [{ id: 1, traddr: "10.0.0.1", trsvcid: "4420", links: [SUB] }],
  });
  const ns = byId(
    targetChecks(paths, readNvmet(paths), DEVS, { trsvcid: "4420" }, false),
    `target.subsystem.${SUB}.namespaces`,
  );
  assert.equal(ns.status, "warn");
  assert.match(ns.fix!, /namespaces\/1\/enable/);
  const empty = { ...paths, configfs: `${d.path}/nowhere` };
  assert.equal(
    byId(targetChecks(empty, readNvmet(empty), DEVS, { trsvcid: "4420" }, false), "target.nvmet")
      .status,
    "skip",
  );
  assert.equal(
    byId(targetChecks(empty, readNvmet(empty), DEVS, { trsvcid: "4420" }, true), "target.nvmet")
      .status,
    "fail",
  );
});

Deno.test("target: an empty nvmet tree (loaded, nothing configured) is no target unless required", async () => {
  await using d = await tempDir();
  const paths = await nvmet(d.path, { subsystems: [], ports: [] });
  const optional = targetChecks(
    paths,
    readNvmet(paths),
    DEVS,
    { trsvcid: "4420", nqn: SUB },
    false,
  );
  assert.deepEqual(optional.filter((c) => c.id !== "target.configfs").map((c) => c.status), [
    "skip",
  ]);
  assert.match(byId(optional, "target.nvmet").seen, /configures no port and no subsystem/);
  const required = targetChecks(paths, readNvmet(paths), DEVS, { trsvcid: "4420", nqn: SUB }, true);
  assert.equal(byId(required, "target.ports").status, "fail");
  assert.equal(byId(required, "target.expect.subsystem").status, "fail");
});

/** The doctor's port selection before it compared addresses in canonical form: as text. */
function servedAsText(p: LivePort, traddr: string, trsvcid: string): boolean {
  const a = p.attr.addr_traddr;
  return p.attr.addr_trtype === "rdma" && p.attr.addr_trsvcid === trsvcid &&
    (a === traddr || isAnyAddress(a));
}

function onePortTree(traddr: string, trsvcid = "4420", trtype = "rdma"): LiveTree {
  return {
    hosts: [],
    subsystems: [{ nqn: SUB, attr: { allow_any_host: "1" }, allowed_hosts: [], namespaces: [] }],
    ports: [{
      name: "1",
      id: 1,
      attr: { addr_trtype: trtype, addr_traddr: traddr, addr_trsvcid: trsvcid },
      subsystems: [SUB],
    }],
  };
}

/** Whether `doctor -a traddr -s trsvcid -n SUB` finds the port (target.expect.port is ok). */
function doctorFindsPort(tree: LiveTree, traddr: string, trsvcid = "4420"): boolean {
  const c = byId(expectChecks(tree, { traddr, trsvcid, nqn: SUB }), "target.expect.port");
  return c.status === "ok";
}

Deno.test("target -a: the port the doctor picks is the one as text for ordinary addresses", () => {
  const cases: [string, string, string][] = [
    ["10.0.0.1", "10.0.0.1", "4420"],
    ["10.0.0.1", "10.0.0.2", "4420"],
    ["10.0.0.1", "10.0.0.1", "4421"],
    ["0.0.0.0", "10.0.0.1", "4420"],
    ["::", "fd00::1", "4420"],
    ["fd00::1", "fd00::1", "4420"],
    ["fd00::1", "fd00::2", "4420"],
  ];
  for (const [port, asked, svc] of cases) {
    const tree = onePortTree(port);
    assert.equal(
      doctorFindsPort(tree, asked, svc),
      servedAsText(tree.ports[0], asked, svc),
      `port ${port}:4420, doctor -a ${asked} -s ${svc}`,
    );
  }
  assert.equal(doctorFindsPort(onePortTree("10.0.0.1", "4420", "tcp"), "10.0.0.1"), false);
});

Deno.test("target -a: an address spelled another way finds its port (as text it did not)", () => {
  const cases: [string, string][] = [
    ["::ffff:10.0.0.1", "10.0.0.1"],
    ["10.0.0.1", "::ffff:10.0.0.1"],
    ["FD00:0::1", "fd00::1"],
    ["fd00::1", "fd00:0:0:0:0:0:0:1"],
    ["0:0:0:0:0:0:0:0", "fd00::1"],
  ];
  for (const [port, asked] of cases) {
    const tree = onePortTree(port);
    assert.equal(servedAsText(tree.ports[0], asked, "4420"), false, `as text: ${port} ~ ${asked}`);
    assert.equal(doctorFindsPort(tree, asked), true, `port ${port}, doctor -a ${asked}`);
  }
  assert.equal(doctorFindsPort(onePortTree("::ffff:10.0.0.1"), "10.0.0.2"), false);
});
