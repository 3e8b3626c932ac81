/**
 * Who is still using what a plan would remove, as far as this kernel tells:
 *
 *  - per subsystem: nvmet's debugfs (`<sysfs>/kernel/debug/nvmet/<subnqn>/ctrl<N>/hostnqn`, newer
 *    kernels) and this machine's own fabrics controllers (a host connected over loopback);
 *  - per port, for hosts on other machines (what a storage server on a kernel without that
 *    debugfs still sees): the RDMA core's connection manager ids in state CONNECT whose source
 *    is an rdma port's address (nvmet-rdma's queues), and established TCP connections whose
 *    local end is a tcp port's address (nvmet-tcp's queues).
 *
 * A queue does not say which subsystem it serves, so removing a port, a subsystem linked to a
 * port, or such a link is refused while the port has connected hosts. The running kernel's
 * sources are read by ./peers.ts, loaded only when a plan removes something.
 */
import type { LivePort, LiveTree } from "../configfs/nvmet.ts";
import { portServes } from "../configfs/port_match.ts";
import { hostPort, type SocketAddress } from "../net/address.ts";
import type { CmIdEntry } from "../rdma/restrack.ts";
import { FailureError } from "../errors.ts";
import { removes, type Step } from "./plan.ts";

/** A connection seen by the kernel: the transport, this machine's end and the peer's. */
export interface PeerConnection {
  trtype: "rdma" | "tcp";
  local: SocketAddress;
  remote: SocketAddress;
}

/** Where the connections come from; each reader is called only when a port of its kind matters. */
export interface PeerSources {
  /** RDMA connection manager ids; throws when the RDMA netlink interface cannot be read. */
  cmIds(): CmIdEntry[];
  /** Established TCP connections. */
  tcp(): { local: SocketAddress; remote: SocketAddress }[];
  /** Host NQNs with a controller on `subnqn` (debugfs, local fabrics controllers). */
  hostsOf(subnqn: string): string[];
}

/** The connections of RDMA CM ids: nvmet-rdma's queues are the connected ones (state CONNECT). */
export function rdmaConnections(ids: CmIdEntry[]): PeerConnection[] {
  return ids.flatMap((id) =>
    id.state === "CONNECT" && id.src && id.dst
      ? [{ trtype: "rdma" as const, local: id.src, remote: id.dst }]
      : []
  );
}

/** Remote hosts connected to one port. */
export interface PortPeers {
  port: number;
  trtype: string;
  traddr: string;
  trsvcid: string;
  /** Subsystems linked to the port. */
  subsystems: string[];
  /** Peer addresses, sorted, each once. */
  hosts: string[];
}

/** Per port with peers: the peer addresses whose connection ends at the port. */
export function portPeers(ports: LivePort[], conns: PeerConnection[]): PortPeers[] {
  const out: PortPeers[] = [];
  for (const p of ports) {
    const hosts = [...new Set(conns.filter((c) => portServes(p, c)).map((c) => c.remote.address))];
    if (!hosts.length) continue;
    out.push({
      port: p.id,
      trtype: p.attr.addr_trtype,
      traddr: p.attr.addr_traddr ?? "",
      trsvcid: p.attr.addr_trsvcid ?? "",
      subsystems: p.subsystems,
      hosts: hosts.sort(),
    });
  }
  return out;
}

/** What a plan takes away from connected hosts. */
export interface BusyReport {
  /** Ports removed or unlinked, or linked to a removed subsystem, that have connected hosts. */
  ports: PortPeers[];
  /** Removed subsystems with host NQNs known to be connected to them. */
  subsystems: { nqn: string; hosts: string[] }[];
  /** Sources that could not be read (the answer may be incomplete). */
  notes: string[];
}

/**
 * The ports and subsystems the plan's steps remove or cut off. A link or a port removed and made
 * again in the same plan (a port whose address changes is unlinked, changed and relinked; one whose
 * transport changes is made anew) is a change, not a removal.
 */
export function affected(
  live: LiveTree,
  steps: Step[],
): { ports: LivePort[]; subsystems: string[] } {
  const subsystems: string[] = [];
  const portIds = new Set<number>();
  const relinked = new Set(steps.filter((s) => s.op === "link").map((s) => s.path));
  const remade = new Set(steps.filter((s) => s.op === "mkdir").map((s) => s.path));
  // The ports each subsystem is linked to, gathered once.
  const portsOf = new Map<string, number[]>();
  for (const p of live.ports) {
    for (const nqn of p.subsystems) portsOf.set(nqn, [...(portsOf.get(nqn) ?? []), p.id]);
  }
  for (const s of steps) {
    // Only removals cut anything; a plan that creates (up from empty) has none.
    if (!removes(s)) continue;
    if (s.op === "unlink" && relinked.has(s.path)) continue;
    if (s.op === "rmdir" && remade.has(s.path)) continue;
    let m = /^subsystems\/([^/]+)$/.exec(s.path);
    if (s.op === "rmdir" && m) {
      subsystems.push(m[1]);
      for (const id of portsOf.get(m[1]) ?? []) portIds.add(id);
      continue;
    }
    m = /^ports\/(\d+)(\/subsystems\/[^/]+)?$/.exec(s.path);
    if (m && ((s.op === "rmdir" && !m[2]) || (s.op === "unlink" && m[2]))) {
      portIds.add(Number(m[1]));
    }
  }
  return { ports: live.ports.filter((p) => portIds.has(p.id)), subsystems };
}

/** Who is still connected to what the plan removes. */
export function busyReport(live: LiveTree, steps: Step[], sources: PeerSources): BusyReport {
  const { ports, subsystems } = affected(live, steps);
  const notes: string[] = [];
  const conns: PeerConnection[] = [];
  if (ports.some((p) => p.attr.addr_trtype === "rdma")) {
    try {
      for (const c of rdmaConnections(sources.cmIds())) conns.push(c);
    } catch (err) {
      notes.push(
        `Cannot list RDMA connections (${
          (err as Error).message
        }); hosts connected over rdma are not known.`,
      );
    }
  }
  if (ports.some((p) => p.attr.addr_trtype === "tcp")) {
    for (const c of sources.tcp()) conns.push({ trtype: "tcp" as const, ...c });
  }
  return {
    ports: portPeers(ports, conns),
    subsystems: subsystems.map((nqn) => ({ nqn, hosts: sources.hostsOf(nqn) }))
      .filter((s) => s.hosts.length),
    notes,
  };
}

/** True when the report names any connected host. */
export function isBusy(r: BusyReport): boolean {
  return r.ports.length > 0 || r.subsystems.length > 0;
}

/** Most names a refusal lists of one kind; beyond it, the first few and how many more. */
export const NAMES_LISTED = 8;

/** "a, b, c" or, for a long list, "a, b, c and 253 more": readable with hundreds of hosts. */
function someOf(names: string[], max = NAMES_LISTED): string {
  if (names.length <= max) return names.join(", ");
  const shown = Math.max(1, max - 2);
  return `${names.slice(0, shown).join(", ")} and ${names.length - shown} more`;
}

/**
 * The refusal's sentence, e.g. "Hosts are still connected to what this would remove: to port 1
 * (rdma 10.78.0.1:4420, serving 'nqn…'): 10.78.0.2; nothing was changed." Long lists of hosts,
 * subsystems or ports are cut to their first names and a count.
 */
export function busyMessage(r: BusyReport, doer = "this"): string {
  const ports = r.ports.map((p) => {
    const serving = p.subsystems.length
      ? `, serving ${someOf(p.subsystems.map((s) => `'${s}'`), 3)}`
      : "";
    return `to port ${p.port} (${p.trtype} ${hostPort(p.traddr, p.trsvcid)}${serving}): ${
      someOf(p.hosts)
    }`;
  });
  const subsystems = r.subsystems.slice(0, NAMES_LISTED).map((s) =>
    `to subsystem '${s.nqn}': ${someOf(s.hosts.map((h) => `host '${h}'`))}`
  );
  if (r.subsystems.length > NAMES_LISTED) {
    const rest = r.subsystems.slice(NAMES_LISTED);
    const hosts = new Set(rest.flatMap((s) => s.hosts)).size;
    subsystems.push(`to ${rest.length} more subsystem(s): ${hosts} host(s)`);
  }
  const parts = [...ports, ...subsystems];
  return `Hosts are still connected to what ${doer} would remove: ${
    parts.join("; ")
  }; nothing was changed.`;
}

/** What to do about a refusal. */
export const BUSY_HINT =
  "Disconnect them first ('nvmeof disconnect -n NQN', or nvme-cli's 'nvme disconnect -n NQN', on " +
  "each host), or pass --force to remove it anyway.";

/** Options of refuseWhileConnected. */
export interface RefuseOptions {
  /** Where the connections are read; called only when the plan removes or cuts off something. */
  sources: () => PeerSources | Promise<PeerSources>;
  /** Who would remove it, for the message ("this", "--prune"). */
  doer?: string;
  /** Where the notes about unreadable sources go. */
  note?: (line: string) => void;
}

/**
 * Throws FailureError (exit 1) naming the hosts when any is still connected to what the plan's
 * steps remove; returns quietly otherwise, without reading any source when nothing is removed.
 */
export async function refuseWhileConnected(
  live: LiveTree,
  steps: Step[],
  o: RefuseOptions,
): Promise<void> {
  const cut = affected(live, steps);
  if (!cut.ports.length && !cut.subsystems.length) return;
  const r = busyReport(live, steps, await o.sources());
  for (const n of r.notes) o.note?.(`warning: ${n}`);
  if (isBusy(r)) throw new FailureError(busyMessage(r, o.doer), { hint: BUSY_HINT });
}
