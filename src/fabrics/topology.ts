/**
 * The host's NVMe topology walked the way libnvme walks it for nvme-cli's `list` and
 * `list-subsys`: namespaces as block devices with the identity of what serves them, and
 * subsystems grouped by the host NQN their controllers connected with. Built on the one sysfs
 * reader (sysfs.ts); the renderers (src/output/nvme_cli_table.ts) only shape the result.
 */
import { EnvironmentError } from "../errors.ts";
import { exists } from "../host/kfs.ts";
import { neighbourLookup } from "../net/neighbour.ts";
import { type NamespaceUsage, namespaceUsage } from "./namespace_usage.ts";
import type { FabricsPaths } from "./initiator_paths.ts";
import { type ControllerInfo, namespaceDir, type PathInfo, type SubsystemInfo } from "./sysfs.ts";

/** One namespace block device, as a row of nvme-cli's `list`. */
export interface DeviceRow {
  /** The block device's name (`nvme1n1`). */
  name: string;
  /** `/dev/nvme1n1`, or the bare name when the node is missing (as nvme-cli). */
  devicePath: string;
  /** `/dev/ng1n1`, the generic char device, or its bare name when missing. */
  genericPath: string;
  nsid: number;
  firmware: string;
  model: string;
  serial: string;
  usage: NamespaceUsage;
}

/** A namespace `list` could not show, and why. */
export interface LeftOut {
  name: string;
  reason: string;
}

/**
 * Every namespace block device: a subsystem's heads, then its controllers' own namespaces. A
 * namespace whose use cannot be read (a head with no usable path refuses Identify) is left out
 * with its reason, as nvme-cli leaves it out; a refusal for want of root is thrown.
 */
export async function listDevices(
  paths: FabricsPaths,
  subsystems: SubsystemInfo[],
): Promise<{ rows: DeviceRow[]; leftOut: LeftOut[] }> {
  const rows: DeviceRow[] = [];
  const leftOut: LeftOut[] = [];
  const usage = async (name: string, nsid: number, dir: string) => {
    try {
      return await namespaceUsage(`${paths.dev}/${name}`, nsid, dir);
    } catch (err) {
      if (err instanceof EnvironmentError) throw err;
      leftOut.push({ name, reason: (err as Error).message });
      return undefined;
    }
  };
  const node = (name: string) => exists(`${paths.dev}/${name}`) ? `${paths.dev}/${name}` : name;
  // One row per block device; `owner` is the sysfs directory above it (the subsystem for a
  // multipath head, the controller otherwise) and names where its identity comes from.
  const add = async (
    ns: { name: string; nsid: number },
    owner: string,
    id: { firmware: string; model: string; serial: string },
  ) => {
    const u = await usage(ns.name, ns.nsid, namespaceDir(paths, owner, ns.name));
    if (!u) return;
    rows.push({
      name: ns.name,
      devicePath: node(ns.name),
      genericPath: node(ns.name.replace(/^nvme/, "ng")),
      nsid: ns.nsid,
      ...id,
      usage: u,
    });
  };
  for (const s of subsystems) {
    if (s.multipath) {
      for (const ns of s.namespaces) {
        await add(ns, s.name, {
          firmware: s.firmware_rev ?? "",
          model: s.model ?? "undefined",
          serial: s.serial ?? "",
        });
      }
      continue;
    }
    for (const c of s.controllers) {
      for (const ns of c.namespaces) {
        if (ns.path) continue; // a path of a head this subsystem does not show: no block device
        await add(ns, c.name, {
          firmware: c.firmware_rev ?? "",
          model: c.model ?? "",
          serial: c.serial ?? "",
        });
      }
    }
  }
  return { rows, leftOut };
}

/** A host NQN (and host ID) with the subsystems its controllers reach. */
export interface HostSubsystems {
  hostnqn: string;
  hostid?: string;
  /** Each subsystem with only this host's controllers and paths. */
  subsystems: SubsystemInfo[];
}

/**
 * Groups subsystems by the host identity of their controllers (nvme-cli's list-subsys top
 * level). A subsystem reached with two host NQNs is listed under each with that host's
 * controllers; one without controllers (being torn down) is left out. Controllers without a host
 * NQN (PCIe) count as `local`'s, the host files' identity, as libnvme's default host.
 */
export function groupByHost(
  subsystems: SubsystemInfo[],
  local: { hostnqn?: string; hostid?: string } = {},
): HostSubsystems[] {
  const hosts = new Map<string, HostSubsystems>();
  const keyOf = (c: ControllerInfo) =>
    c.hostnqn ? `${c.hostnqn}\n${c.hostid}` : `${local.hostnqn ?? ""}\n${local.hostid ?? ""}`;
  for (const s of subsystems) {
    const keys = [...new Set(s.controllers.map(keyOf))];
    for (const key of keys) {
      const [hostnqn, hostid] = key.split("\n");
      let h = hosts.get(key);
      if (!h) {
        h = { hostnqn, ...(hostid ? { hostid } : {}), subsystems: [] };
        hosts.set(key, h);
      }
      const mine = new Set(
        s.controllers.filter((c) => keyOf(c) === key).map((c) => c.name),
      );
      const own = (p: PathInfo) => mine.has(p.controller);
      h.subsystems.push({
        ...s,
        controllers: s.controllers.filter((c) => mine.has(c.name)),
        namespaces: s.namespaces.map((n) => ({ ...n, paths: n.paths.filter(own) })),
      });
    }
  }
  return [...hosts.values()];
}

/**
 * The subsystems with each controller that is not live given its target address's ARP entry
 * (`<proc>/net/arp`): in the lab fabric a path that stayed `connecting` after a cut was always
 * an address that did not answer ARP, so `list --paths` and doctor can name the link without a
 * probe. The table is read once for the whole pass.
 */
export function withNeighbours(subsystems: SubsystemInfo[], proc: string): SubsystemInfo[] {
  const neighbourOf = neighbourLookup(proc);
  return subsystems.map((s) => ({
    ...s,
    controllers: s.controllers.map((c) => {
      if (c.state === "live" || !c.address.traddr) return c;
      const neighbour = neighbourOf(c.address.traddr);
      return neighbour ? { ...c, neighbour } : c;
    }),
  }));
}
