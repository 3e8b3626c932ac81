/**
 * Which hosts are connected to a subsystem, as far as this kernel tells: nvmet's debugfs
 * (`/sys/kernel/debug/nvmet/<subnqn>/ctrl<N>/hostnqn`, newer kernels) and this host's own
 * fabrics controllers (a host connected over loopback to its own target).
 */
import { listDir, readText } from "../fabrics/kfs.ts";

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

/** Host NQNs connected to `subnqn` (empty when none are known). */
export function connectedHosts(subnqn: string): string[] {
  const hosts = new Set<string>();
  const dbg = `/sys/kernel/debug/nvmet/${subnqn}`;
  for (const c of list(dbg)) {
    if (c.startsWith("ctrl")) hosts.add(read(`${dbg}/${c}/hostnqn`) ?? c);
  }
  for (const c of list("/sys/class/nvme")) {
    const base = `/sys/class/nvme/${c}`;
    if (read(`${base}/subsysnqn`) !== subnqn) continue;
    const transport = read(`${base}/transport`);
    if (transport === "pcie" || transport === undefined) continue;
    hosts.add(read(`${base}/hostnqn`) ?? c);
  }
  return [...hosts];
}
