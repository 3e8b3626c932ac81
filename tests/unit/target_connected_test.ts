/**
 * Which connected hosts a removal would cut off: connections matched to nvmet ports by transport
 * and local address, the ports and subsystems a plan touches, and the refusal's wording.
 */
import assert from "node:assert/strict";
import type { LivePort, LiveTree } from "../../src/configfs/nvmet.ts";
import { portServes } from "../../src/configfs/port_match.ts";
import { FailureError } from "../../src/errors.ts";
import type { CmIdEntry } from "../../src/rdma/restrack.ts";
import {
  affected,
  busyMessage,
  busyReport,
  type PeerSources,
  portPeers,
  rdmaConnections,
  refuseWhileConnected,
} from "../../src/target/connected.ts";
import { kernelSources } from "../../src/target/peers.ts";
import type { Step } from "../../src/target/plan.ts";

const SUB1 = "nqn.2026-10.pk.nextgen:pool-1";
const SUB2 = "nqn.2026-10.pk.nextgen:pool-2";

function port(
  id: number,
  trtype: string,
  traddr: string,
  trsvcid: string,
  subs: string[],
): LivePort {
  return {
    name: String(id),
    id,
    attr: { addr_trtype: trtype, addr_adrfam: "ipv4", addr_traddr: traddr, addr_trsvcid: trsvcid },
    subsystems: subs,
  };
}

const LIVE: LiveTree = {
  hosts: [],
  subsystems: [SUB1, SUB2].map((nqn) => ({ nqn, attr: {}, allowed_hosts: [], namespaces: [] })),
  ports: [
    port(1, "rdma", "10.78.0.1", "4420", [SUB1]),
    port(2, "tcp", "10.78.0.1", "4420", [SUB2]),
    port(3, "tcp", "0.0.0.0", "4430", []),
  ],
};

function cmId(state: string, src: [string, number], dst: [string, number]): CmIdEntry {
  return {
    device: "rxe0",
    port: 1,
    state,
    ps: 0x106,
    kernName: "nvmet_rdma",
    src: { address: src[0], port: src[1] },
    dst: { address: dst[0], port: dst[1] },
  };
}

function sources(o: Partial<PeerSources> = {}): PeerSources {
  return { cmIds: () => [], tcp: () => [], hostsOf: () => [], ...o };
}

const RDMA_QUEUES = [
  cmId("LISTEN", ["10.78.0.1", 4420], ["0.0.0.0", 0]),
  cmId("CONNECT", ["10.78.0.1", 4420], ["10.78.0.2", 32950]),
  cmId("CONNECT", ["10.78.0.1", 4420], ["10.78.0.2", 52798]),
  cmId("DISCONNECT", ["10.78.0.1", 4420], ["10.78.0.3", 40000]),
];

Deno.test("rdmaConnections keeps only CM ids in state CONNECT", () => {
  assert.deepEqual(rdmaConnections(RDMA_QUEUES).map((c) => c.remote.address), [
    "10.78.0.2",
    "10.78.0.2",
  ]);
});

Deno.test("portServes matches transport, service id and address; a wildcard port takes any address", () => {
  const c = (trtype: "rdma" | "tcp", address: string, p: number) => ({
    trtype,
    local: { address, port: p },
    remote: { address: "10.78.0.2", port: 1 },
  });
  assert.equal(portServes(LIVE.ports[0], c("rdma", "10.78.0.1", 4420)), true);
  assert.equal(portServes(LIVE.ports[0], c("tcp", "10.78.0.1", 4420)), false);
  assert.equal(portServes(LIVE.ports[0], c("rdma", "10.78.0.1", 4421)), false);
  assert.equal(portServes(LIVE.ports[0], c("rdma", "10.78.1.1", 4420)), false);
  assert.equal(portServes(LIVE.ports[2], c("tcp", "192.168.1.1", 4430)), true);
  const v6 = port(4, "tcp", "FD00:0::1", "4420", []);
  assert.equal(portServes(v6, c("tcp", "fd00::1", 4420)), true);
});

Deno.test("portPeers lists each peer address once per port, sorted", () => {
  const conns = [
    ...rdmaConnections(RDMA_QUEUES),
    {
      trtype: "tcp" as const,
      local: { address: "10.78.0.1", port: 4420 },
      remote: { address: "10.78.0.4", port: 1 },
    },
    {
      trtype: "tcp" as const,
      local: { address: "10.78.0.1", port: 4420 },
      remote: { address: "10.78.0.3", port: 2 },
    },
  ];
  assert.deepEqual(portPeers(LIVE.ports, conns).map((p) => [p.port, p.hosts]), [
    [1, ["10.78.0.2"]],
    [2, ["10.78.0.3", "10.78.0.4"]],
  ]);
});

Deno.test("affected: removing a subsystem concerns the ports linked to it; removing or unlinking a port concerns that port; a relink does not", () => {
  const steps: Step[] = [
    { op: "rmdir", path: `subsystems/${SUB1}` },
    { op: "unlink", path: `ports/2/subsystems/${SUB2}`, target: `subsystems/${SUB2}` },
  ];
  const a = affected(LIVE, steps);
  assert.deepEqual(a.subsystems, [SUB1]);
  assert.deepEqual(a.ports.map((p) => p.id), [1, 2]);
  assert.deepEqual(affected(LIVE, [{ op: "rmdir", path: "ports/3" }]).ports.map((p) => p.id), [3]);
  const relink: Step[] = [
    { op: "unlink", path: `ports/1/subsystems/${SUB1}`, target: `subsystems/${SUB1}` },
    { op: "write", path: "ports/1/addr_traddr", value: "10.78.1.1", old: "10.78.0.1" },
    { op: "link", path: `ports/1/subsystems/${SUB1}`, target: `subsystems/${SUB1}` },
  ];
  assert.deepEqual(affected(LIVE, relink), { ports: [], subsystems: [] });
  const ns: Step[] = [{ op: "rmdir", path: `subsystems/${SUB1}/namespaces/1` }];
  assert.deepEqual(affected(LIVE, ns), { ports: [], subsystems: [] });
});

Deno.test("affected: a port removed and made again in one plan (a new trtype) is a change", () => {
  const remade: Step[] = [
    { op: "rmdir", path: "ports/3" },
    { op: "mkdir", path: "ports/3" },
    { op: "write", path: "ports/3/addr_trtype", value: "loop", old: "" },
  ];
  assert.deepEqual(affected(LIVE, remade), { ports: [], subsystems: [] });
});

Deno.test("busyReport reads RDMA only for rdma ports and TCP only for tcp ports", () => {
  let rdmaReads = 0;
  let tcpReads = 0;
  const s = sources({
    cmIds: () => (rdmaReads++, RDMA_QUEUES),
    tcp: () => (tcpReads++, []),
  });
  const r = busyReport(LIVE, [{ op: "rmdir", path: `subsystems/${SUB1}` }], s);
  assert.equal(rdmaReads, 1);
  assert.equal(tcpReads, 0);
  assert.deepEqual(r.ports.map((p) => p.port), [1]);
});

Deno.test("busyReport keeps going when RDMA cannot be read, and says so", () => {
  const s = sources({
    cmIds: () => {
      throw new Error("socket() failed: EPROTONOSUPPORT");
    },
    hostsOf: (nqn) => nqn === SUB1 ? ["nqn.host-a"] : [],
  });
  const r = busyReport(LIVE, [{ op: "rmdir", path: `subsystems/${SUB1}` }], s);
  assert.deepEqual(r.ports, []);
  assert.deepEqual(r.subsystems, [{ nqn: SUB1, hosts: ["nqn.host-a"] }]);
  assert.match(r.notes[0], /Cannot list RDMA connections .*EPROTONOSUPPORT/);
});

Deno.test("busyMessage names the port, its address, what it serves and the peer addresses", () => {
  const r = busyReport(
    LIVE,
    [{ op: "rmdir", path: `subsystems/${SUB1}` }],
    sources({ cmIds: () => RDMA_QUEUES, hostsOf: () => ["nqn.host-a"] }),
  );
  assert.equal(
    busyMessage(r),
    `Hosts are still connected to what this would remove: to port 1 (rdma 10.78.0.1:4420, serving '${SUB1}'): 10.78.0.2; to subsystem '${SUB1}': host 'nqn.host-a'; nothing was changed.`,
  );
  const v6 = { ports: [{ ...r.ports[0], traddr: "fd00::1" }], subsystems: [], notes: [] };
  assert.match(
    busyMessage(v6, "--prune"),
    /what --prune would remove: to port 1 \(rdma \[fd00::1\]:4420/,
  );
});

Deno.test("refuseWhileConnected throws a FailureError with nvmeof's disconnect and the --force hint, and passes when idle", async () => {
  const steps: Step[] = [{ op: "rmdir", path: "ports/2" }];
  const tcp = () => [{
    local: { address: "10.78.0.1", port: 4420 },
    remote: { address: "10.78.0.2", port: 40000 },
  }];
  await assert.rejects(
    () => refuseWhileConnected(LIVE, steps, { sources: () => sources({ tcp }) }),
    (err: unknown) =>
      err instanceof FailureError && /port 2 \(tcp 10\.78\.0\.1:4420/.test(err.message) &&
      /'nvmeof disconnect -n NQN'/.test(err.hint ?? "") && /--force/.test(err.hint ?? ""),
  );
  await refuseWhileConnected(LIVE, steps, { sources: () => sources() });
});

Deno.test("refuseWhileConnected reads no source when the plan removes nothing", async () => {
  let asked = 0;
  const grow: Step[] = [
    { op: "mkdir", path: "ports/3" },
    { op: "link", path: `ports/2/subsystems/${SUB1}`, target: `subsystems/${SUB1}` },
  ];
  await refuseWhileConnected(LIVE, grow, { sources: () => (asked++, sources()) });
  assert.equal(asked, 0);
  await refuseWhileConnected(LIVE, [{ op: "rmdir", path: "ports/2" }], {
    sources: () => (asked++, sources()),
  });
  assert.equal(asked, 1);
});

Deno.test("the kernel's sources read this machine's controllers once, not per subsystem", () => {
  const sysfs = Deno.makeTempDirSync({ prefix: "nvmeof-sysfs-" });
  try {
    const ctrl = (name: string, subnqn: string, transport: string, hostnqn: string) => {
      const d = `${sysfs}/class/nvme/${name}`;
      Deno.mkdirSync(d, { recursive: true });
      Deno.writeTextFileSync(`${d}/subsysnqn`, `${subnqn}\n`);
      Deno.writeTextFileSync(`${d}/transport`, `${transport}\n`);
      Deno.writeTextFileSync(`${d}/hostnqn`, `${hostnqn}\n`);
    };
    ctrl("nvme0", SUB1, "rdma", "nqn.host-a");
    ctrl("nvme1", SUB2, "tcp", "nqn.host-b");
    ctrl("nvme2", SUB2, "pcie", "nqn.host-pcie");
    const dbg = `${sysfs}/kernel/debug/nvmet/${SUB2}/ctrl1`;
    Deno.mkdirSync(dbg, { recursive: true });
    Deno.writeTextFileSync(`${dbg}/hostnqn`, "nqn.host-c\n");
    const src = kernelSources({ proc: `${sysfs}/proc`, sysfs });
    assert.deepEqual(src.hostsOf(SUB1), ["nqn.host-a"]);
    // Read once: controllers that come or go later in the run are not read again.
    Deno.removeSync(`${sysfs}/class/nvme`, { recursive: true });
    assert.deepEqual(src.hostsOf(SUB2).sort(), ["nqn.host-b", "nqn.host-c"]);
    assert.deepEqual(src.hostsOf("nqn.2026-10.pk.nextgen:other"), []);
  } finally {
    Deno.removeSync(sysfs, { recursive: true });
  }
});

Deno.test("a refusal with hundreds of hosts names the first few and counts the rest", () => {
  const subs = Array.from({ length: 64 }, (_, i) => `nqn.2026-10.pk.nextgen:scale-${i}`);
  const addrs = Array.from({ length: 256 }, (_, i) => `10.78.${i >> 8}.${i & 255}`);
  const msg = busyMessage({
    ports: [{
      port: 1,
      trtype: "rdma",
      traddr: "10.78.0.1",
      trsvcid: "4420",
      subsystems: subs,
      hosts: addrs,
    }],
    subsystems: subs.map((nqn, i) => ({
      nqn,
      hosts: [`nqn.host-${2 * i}`, `nqn.host-${2 * i + 1}`],
    })),
    notes: [],
  });
  assert.match(
    msg,
    /^Hosts are still connected to what this would remove: to port 1 \(rdma 10\.78\.0\.1:4420, serving 'nqn\.2026-10\.pk\.nextgen:scale-0' and 63 more\): 10\.78\.0\.0, 10\.78\.0\.1, 10\.78\.0\.2, 10\.78\.0\.3, 10\.78\.0\.4, 10\.78\.0\.5 and 250 more; /,
  );
  assert.match(
    msg,
    /; to subsystem 'nqn\.2026-10\.pk\.nextgen:scale-7': host 'nqn\.host-14', host 'nqn\.host-15'; to 56 more subsystem\(s\): 112 host\(s\); nothing was changed\.$/,
  );
  assert.ok(msg.length < 1500, `${msg.length} characters`);
});
