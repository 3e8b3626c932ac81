/**
 * The `block` collector: I/O counters from `/sys/class/block/<dev>/stat` for the block devices
 * nvmeof's fabrics use: multipath heads (`nvmeXnY`), their per-path devices (`nvmeXcYnZ`),
 * namespaces without multipath, and the backing devices of the nvmet namespaces this machine
 * exports.
 */
import type { LiveTree } from "../configfs/nvmet.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import type { SubsystemInfo } from "../fabrics/sysfs.ts";
import { type BlockStat, readBlockStat, STAT_SECTOR_BYTES } from "../host/block_stat.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";
import { fabricsSubsystems } from "./host.ts";

/** Milliseconds in a second (the stat ticks are in ms). */
const MS_PER_SECOND = 1000;

/** What the block collector reads. */
export interface BlockSources {
  paths: FabricsPaths;
  /** The fabrics subsystems (default: read from `paths`); a collection shares one read. */
  subsystems?: () => Promise<SubsystemInfo[]>;
  /** The nvmet tree, when this machine is a target (its namespaces' backing devices). */
  target?: () => LiveTree | undefined;
}

/** A device's labels: `role` is head, path, namespace or target. */
type DeviceLabels = Record<string, string>;

/** The block device a namespace's `device_path` names: the link resolved, its last component. */
export function backingDevice(devicePath: string): string | undefined {
  if (!devicePath) return undefined;
  let real = devicePath;
  try {
    real = Deno.realPathSync(devicePath);
  } catch { /* a path that does not resolve: its own name */ }
  return real.slice(real.lastIndexOf("/") + 1) || undefined;
}

/** The devices to read, with their labels. */
async function devices(o: BlockSources): Promise<[string, DeviceLabels][]> {
  const out: [string, DeviceLabels][] = [];
  for (const s of await (o.subsystems?.() ?? fabricsSubsystems(o.paths))) {
    const subsystem_nqn = s.subsysnqn;
    for (const head of s.namespaces) {
      const nsid = String(head.nsid);
      const role = s.multipath ? "head" : "namespace";
      out.push([head.name, { device: head.name, role, subsystem_nqn, nsid }]);
      for (const p of head.paths) {
        out.push([p.name, {
          device: p.name,
          role: "path",
          subsystem_nqn,
          nsid,
          controller: p.controller,
        }]);
      }
    }
  }
  const tree = o.target?.();
  for (const sub of tree?.subsystems ?? []) {
    for (const ns of sub.namespaces) {
      const dev = backingDevice(ns.device_path);
      if (dev) {
        out.push([dev, {
          device: dev,
          role: "target",
          subsystem_nqn: sub.nqn,
          nsid: String(ns.nsid),
        }]);
      }
    }
  }
  return out;
}

/** Collects the block families. */
export async function collectBlock(o: BlockSources): Promise<MetricFamily[]> {
  const set = new FamilySet();
  const from = "(/sys/class/block/<device>/stat)";
  const counters: [string, string, (s: BlockStat) => number][] = [
    ["nvmeof_block_read_ios_total", `Reads completed ${from}.`, (s) => s.readIos],
    [
      "nvmeof_block_read_bytes_total",
      `Bytes read: sectors × 512 ${from}.`,
      (s) => s.readSectors * STAT_SECTOR_BYTES,
    ],
    [
      "nvmeof_block_read_seconds_total",
      `Time spent reading ${from}.`,
      (s) => s.readTicksMs / MS_PER_SECOND,
    ],
    ["nvmeof_block_write_ios_total", `Writes completed ${from}.`, (s) => s.writeIos],
    [
      "nvmeof_block_write_bytes_total",
      `Bytes written: sectors × 512 ${from}.`,
      (s) => s.writeSectors * STAT_SECTOR_BYTES,
    ],
    [
      "nvmeof_block_write_seconds_total",
      `Time spent writing ${from}.`,
      (s) => s.writeTicksMs / MS_PER_SECOND,
    ],
  ];
  const adders = counters.map(([name, help, pick]) =>
    [set.family(name, "counter", help), pick] as const
  );
  const inFlight = set.family("nvmeof_block_in_flight", "gauge", `I/Os in flight ${from}.`);
  const seen = new Set<string>();
  for (const [dev, labels] of await devices(o)) {
    const key = JSON.stringify(labels);
    if (seen.has(key)) continue;
    seen.add(key);
    const stat = readBlockStat(o.paths.sysfs, dev);
    if (!stat) continue;
    for (const [add, pick] of adders) add(labels, pick(stat));
    inFlight(labels, stat.inFlight);
  }
  return set.families();
}
