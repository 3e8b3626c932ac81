/**
 * The running kernel's answer to who is connected to the target (the sources ./connected.ts
 * judges a plan by): RDMA connection manager ids from its netlink, established TCP connections
 * from procfs, host NQNs per subsystem from nvmet's debugfs and this machine's own fabrics
 * controllers. Loaded only when a run asks, since its readers (netlink, procfs) are what a run
 * that removes nothing, or a `show`, does not need.
 */
import { hostPaths } from "../host_paths.ts";
import { listDir, readText } from "../host/kfs.ts";
import { establishedTcp } from "../net/proc_tcp.ts";
import { readCmIds } from "../rdma/restrack.ts";
import type { PeerSources } from "./connected.ts";

/** Roots the kernel sources are read below. */
export interface KernelSourceOptions {
  /** procfs root (`net/tcp`, `net/tcp6`), default `/proc` (NVMEOF_PROC). */
  proc: string;
  /** sysfs root (`kernel/debug/nvmet`, `class/nvme`), default `/sys` (NVMEOF_SYSFS). */
  sysfs: string;
}

/** The roots of the running host, with NVMEOF_PROC/NVMEOF_SYSFS applied. */
export function kernelSourceOptions(
  env: (name: string) => string | undefined = Deno.env.get,
): KernelSourceOptions {
  const { proc, sysfs } = hostPaths(env);
  return { proc, sysfs };
}

function list(dir: string): string[] {
  try {
    return listDir(dir);
  } catch {
    return [];
  }
}

function read(path: string): string | undefined {
  try {
    return readText(path).trim();
  } catch {
    return undefined;
  }
}

/** This machine's own fabrics controllers (`<sysfs>/class/nvme`): host NQNs by subsystem NQN. */
export function localFabricsHosts(sysfs = hostPaths().sysfs): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const c of list(`${sysfs}/class/nvme`)) {
    const base = `${sysfs}/class/nvme/${c}`;
    const subnqn = read(`${base}/subsysnqn`);
    if (subnqn === undefined) continue;
    const transport = read(`${base}/transport`);
    if (transport === "pcie" || transport === undefined) continue;
    out.set(subnqn, [...(out.get(subnqn) ?? []), read(`${base}/hostnqn`) ?? c]);
  }
  return out;
}

/**
 * Host NQNs connected to `subnqn` per nvmet's debugfs and this machine's fabrics controllers
 * (`local`: localFabricsHosts, read once by a caller asking about many subsystems).
 */
export function subsystemHosts(
  subnqn: string,
  sysfs = hostPaths().sysfs,
  local: Map<string, string[]> = localFabricsHosts(sysfs),
): string[] {
  const hosts = new Set<string>();
  const dbg = `${sysfs}/kernel/debug/nvmet/${subnqn}`;
  for (const c of list(dbg)) {
    if (c.startsWith("ctrl")) hosts.add(read(`${dbg}/${c}/hostnqn`) ?? c);
  }
  for (const h of local.get(subnqn) ?? []) hosts.add(h);
  return [...hosts];
}

/**
 * The sources of the running kernel: CM ids from its RDMA netlink, the rest below the roots. This
 * machine's controllers are read once, at the first subsystem asked about, not once per subsystem.
 */
export function kernelSources(o: KernelSourceOptions): PeerSources {
  let local: Map<string, string[]> | undefined;
  return {
    cmIds: () => readCmIds(),
    tcp: () => establishedTcp(o.proc),
    hostsOf: (subnqn) => subsystemHosts(subnqn, o.sysfs, local ??= localFabricsHosts(o.sysfs)),
  };
}
