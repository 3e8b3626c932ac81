/**
 * The `target` collector: the nvmet configfs tree this machine exports (ports, subsystems,
 * namespaces, ANA groups), whether the kernel listens on each port, and the host queues connected
 * to it: RDMA connection manager ids (the RDMA netlink, as `rdma resource show cm_id`) and TCP
 * sockets (/proc/net/tcp, /proc/net/tcp6).
 */
import { ANA_STATES, type LivePort, type LiveTree } from "../configfs/nvmet.ts";
import { portServes } from "../configfs/port_match.ts";
import type { SocketAddress } from "../net/address.ts";
import { KmsgWatch } from "../fabrics/kmsg.ts";
import { TCP_LISTEN, tcpSockets } from "../net/proc_tcp.ts";
import { type PeerConnection, type PeerSources, rdmaConnections } from "../target/connected.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";

/** The RDMA CM state of a listening id (as the rdma tool names it). */
const CM_LISTEN = "LISTEN";

/** What the target collector reads. */
export interface TargetSources {
  /** The nvmet tree; undefined when nvmet is not loaded (then nothing is collected). */
  tree(): LiveTree | undefined;
  /** The kernel's connections (CM ids, established TCP). */
  peers: PeerSources;
  /** procfs root, for the listening TCP sockets. */
  proc: string;
  /** Controllers created per subsystem and host NQN, from the kernel log; undefined when it
   * cannot be read. */
  created?: () => ReadonlyMap<string, ReadonlyMap<string, number>> | undefined;
}

/**
 * nvmet's line for a new controller (nvmet_alloc_ctrl): `nvmet: creating nvm controller 1 for
 * subsystem SUBNQN for NQN HOSTNQN.` (`created`, and ` with DH-HMAC-CHAP`, on newer kernels).
 */
const CONTROLLER_CREATED =
  /nvmet: (?:creating|created) nvm controller \d+ for subsystem (\S+) for NQN (\S+?)(?: with DH-HMAC-CHAP)?\.?$/i;

/** Adds to `counts` (per subsystem and host NQN) the controllers that `messages` say were created. */
export function countCreated(
  messages: Iterable<string>,
  counts = new Map<string, Map<string, number>>(),
): Map<string, Map<string, number>> {
  for (const m of messages) {
    const hit = CONTROLLER_CREATED.exec(m);
    if (!hit) continue;
    const hosts = counts.get(hit[1]) ?? new Map<string, number>();
    hosts.set(hit[2], (hosts.get(hit[2]) ?? 0) + 1);
    counts.set(hit[1], hosts);
  }
  return counts;
}

/**
 * The controllers the kernel log says were created, counted across collections: the first read
 * takes every record the log still holds, each later one only the records added since, so a
 * collection costs what the log grew by, and the count never falls while this lives (records that
 * leave the ring buffer stay counted). Close it (or `using`).
 */
export class CreatedControllers implements Disposable {
  #kmsg: string;
  #log: KmsgWatch | undefined;
  #counts = new Map<string, Map<string, number>>();

  /** `kmsg`: the kernel log device (/dev/kmsg), opened at the first read. */
  constructor(kmsg: string) {
    this.#kmsg = kmsg;
  }

  /** The counts so far, per subsystem and host NQN; undefined when the log cannot be read. */
  read(): ReadonlyMap<string, ReadonlyMap<string, number>> | undefined {
    this.#log ??= new KmsgWatch(this.#kmsg, "oldest");
    if (!this.#log.active) return undefined;
    const records = this.#log.records((r) => CONTROLLER_CREATED.test(r.message));
    return countCreated(records.map((r) => r.message), this.#counts);
  }

  close(): void {
    this.#log?.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Where the kernel listens: rdma from LISTEN CM ids, tcp from LISTEN sockets; undefined: unknown. */
interface Listeners {
  rdma?: SocketAddress[];
  tcp: SocketAddress[];
}

function listeners(o: TargetSources, ports: LivePort[]): Listeners {
  const out: Listeners = { tcp: [] };
  if (ports.some((p) => p.attr.addr_trtype === "tcp")) {
    out.tcp = tcpSockets(o.proc, TCP_LISTEN).map((c) => c.local);
  }
  return out;
}

/** The kernel's connections; rdma undefined when the RDMA netlink cannot be read. */
function connections(o: TargetSources, ports: LivePort[], l: Listeners): {
  conns: PeerConnection[];
  rdmaKnown: boolean;
} {
  const conns: PeerConnection[] = [];
  let rdmaKnown = true;
  if (ports.some((p) => p.attr.addr_trtype === "rdma")) {
    try {
      const ids = o.peers.cmIds();
      l.rdma = ids.flatMap((id) => id.state === CM_LISTEN && id.src ? [id.src] : []);
      conns.push(...rdmaConnections(ids));
    } catch {
      rdmaKnown = false; // no RDMA netlink (no RDMA core): neither listening nor connections known
    }
  }
  if (ports.some((p) => p.attr.addr_trtype === "tcp")) {
    conns.push(...o.peers.tcp().map((c) => ({ trtype: "tcp" as const, ...c })));
  }
  return { conns, rdmaKnown };
}

/** Collects the target families; none when nvmet is not loaded. */
export function collectTarget(o: TargetSources): Promise<MetricFamily[]> {
  const tree = o.tree();
  const set = new FamilySet();
  if (!tree) return Promise.resolve([]);
  const portInfo = set.family(
    "nvmeof_target_port_info",
    "gauge",
    "An nvmet port: 1 (/sys/kernel/config/nvmet/ports/<port>).",
  );
  const listening = set.family(
    "nvmeof_target_port_listening",
    "gauge",
    "1 when the kernel listens on the port's address (an RDMA CM id in LISTEN, a TCP socket in " +
      "LISTEN).",
  );
  const portSubsystems = set.family(
    "nvmeof_target_port_subsystems",
    "gauge",
    "Subsystems linked to the port.",
  );
  const portConns = set.family(
    "nvmeof_target_port_connections",
    "gauge",
    "Host queues connected to the port (RDMA CM ids in CONNECT, established TCP connections).",
  );
  const peerConns = set.family(
    "nvmeof_target_port_peer_connections",
    "gauge",
    "Host queues connected to the port, per remote address.",
  );
  const namespaces = set.family(
    "nvmeof_target_subsystem_namespaces",
    "gauge",
    "Namespaces of the subsystem.",
  );
  const allowed = set.family(
    "nvmeof_target_subsystem_allowed_hosts",
    "gauge",
    "Hosts allowed on the subsystem (allowed_hosts).",
  );
  const anyHost = set.family(
    "nvmeof_target_subsystem_allow_any_host",
    "gauge",
    "1 when the subsystem is open to any host (attr_allow_any_host).",
  );
  const enabled = set.family(
    "nvmeof_target_namespace_enabled",
    "gauge",
    "1 when the namespace is enabled.",
  );
  const anaGroup = set.family(
    "nvmeof_target_ana_group_state",
    "gauge",
    "The ANA state of a port's ANA group, one-hot (ports/<port>/ana_groups/<group>/ana_state).",
  );

  const l = listeners(o, tree.ports);
  const { conns, rdmaKnown } = connections(o, tree.ports, l);
  for (const p of tree.ports) {
    const port = String(p.id);
    const trtype = p.attr.addr_trtype ?? "";
    portInfo({
      port,
      trtype,
      adrfam: p.attr.addr_adrfam ?? "",
      traddr: p.attr.addr_traddr ?? "",
      trsvcid: p.attr.addr_trsvcid ?? "",
    }, 1);
    portSubsystems({ port }, p.subsystems.length);
    for (const g of p.ana_groups ?? []) {
      set.oneHot(anaGroup, { port, group: String(g.id) }, ANA_STATES, g.state);
    }
    const known = trtype === "tcp" || (trtype === "rdma" && rdmaKnown);
    if (!known) continue;
    const at = trtype === "tcp" ? l.tcp : l.rdma ?? [];
    listening({ port }, at.some((local) => portServes(p, { trtype, local })) ? 1 : 0);
    const mine = conns.filter((c) => portServes(p, c));
    portConns({ port }, mine.length);
    const byPeer = new Map<string, number>();
    for (const c of mine) byPeer.set(c.remote.address, (byPeer.get(c.remote.address) ?? 0) + 1);
    for (const [remote_address, n] of [...byPeer].sort()) peerConns({ port, remote_address }, n);
  }
  for (const s of tree.subsystems) {
    const subsystem_nqn = s.nqn;
    namespaces({ subsystem_nqn }, s.namespaces.length);
    allowed({ subsystem_nqn }, s.allowed_hosts.length);
    anyHost({ subsystem_nqn }, s.attr.allow_any_host === "1" ? 1 : 0);
    for (const ns of s.namespaces) {
      enabled({ subsystem_nqn, nsid: String(ns.nsid), device: ns.device_path }, ns.enable ? 1 : 0);
    }
  }
  const created = set.family(
    "nvmeof_target_host_controllers_created_total",
    "counter",
    "Controllers created for a host: the kernel log's 'creating nvm controller … for NQN …' lines " +
      "(/dev/kmsg, readable by root), counted since the exporter started, from the oldest record " +
      "the log then held.",
  );
  // A node with no subsystem (a compute node with nvmet loaded) has no controller to count: the
  // log is left unread, and what it holds is counted when a subsystem appears.
  const bySubsystem = tree.subsystems.length ? o.created?.() : undefined;
  if (bySubsystem) {
    for (const [subsystem_nqn, hosts] of [...bySubsystem].sort()) {
      for (const [host_nqn, n] of [...hosts].sort()) created({ subsystem_nqn, host_nqn }, n);
    }
  }
  return Promise.resolve(set.families());
}
