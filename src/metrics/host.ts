/**
 * The `host` collector: this machine's fabrics controllers (its paths to remote subsystems) and
 * their subsystems, from /sys/class/nvme and /sys/class/nvme-subsystem, read with the fabrics
 * room's sysfs readers.
 */
import { ANA_STATES } from "../configfs/nvmet.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import {
  controllerDir,
  isFabricsController,
  listSubsystems,
  readAttr,
  type SubsystemInfo,
} from "../fabrics/sysfs.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";

/** The controller states the kernel names (nvme_sysfs_show_state), one-hot in nvmeof_path_state. */
export const PATH_STATES = [
  "new",
  "live",
  "connecting",
  "resetting",
  "deleting",
  "deleting (no IO)",
  "dead",
  "unknown",
] as const;

/** The state `live`: the only one in which a path carries I/O. */
const LIVE = "live";
/** Milliseconds in a second (queue/io_timeout is in ms). */
const MS_PER_SECOND = 1000;

/** The subsystems that have a fabrics controller, with only those controllers. */
export async function fabricsSubsystems(paths: FabricsPaths): Promise<SubsystemInfo[]> {
  return (await listSubsystems(paths))
    .map((s) => ({ ...s, controllers: s.controllers.filter(isFabricsController) }))
    .filter((s) => s.controllers.length > 0);
}

/** A timeout attribute in seconds; undefined when absent or `off`. */
async function seconds(dir: string, name: string): Promise<number | undefined> {
  const v = await readAttr(dir, name);
  return v !== undefined && /^-?\d+$/.test(v) ? Number(v) : undefined;
}

/**
 * Collects the host families; SUBSYSTEMS (default: read from `paths`) lets a collection share one
 * read of the fabrics subsystems with the block collector.
 */
export async function collectHostPaths(
  paths: FabricsPaths,
  subsystems: () => Promise<SubsystemInfo[]> = () => fabricsSubsystems(paths),
): Promise<MetricFamily[]> {
  const set = new FamilySet();
  const info = set.family(
    "nvmeof_path_info",
    "gauge",
    "A fabrics controller (a path) of this host: 1 (/sys/class/nvme).",
  );
  const up = set.family("nvmeof_path_up", "gauge", "1 when the path's controller state is live.");
  const state = set.family(
    "nvmeof_path_state",
    "gauge",
    "The path's controller state, one-hot (/sys/class/nvme/<controller>/state).",
  );
  const ana = set.family(
    "nvmeof_path_ana_state",
    "gauge",
    "The ANA state of a namespace through the path, one-hot (<path device>/ana_state).",
  );
  const kato = set.family(
    "nvmeof_path_keep_alive_timeout_seconds",
    "gauge",
    "The controller's keep-alive timeout (kato).",
  );
  const loss = set.family(
    "nvmeof_path_ctrl_loss_timeout_seconds",
    "gauge",
    "How long the host reconnects before giving the path up (ctrl_loss_tmo); absent when off.",
  );
  const delay = set.family(
    "nvmeof_path_reconnect_delay_seconds",
    "gauge",
    "The delay between reconnect attempts (reconnect_delay).",
  );
  const fastFail = set.family(
    "nvmeof_path_fast_io_fail_timeout_seconds",
    "gauge",
    "When I/O on a reconnecting path fails over (fast_io_fail_tmo); absent when off.",
  );
  const ioTimeout = set.family(
    "nvmeof_path_io_timeout_seconds",
    "gauge",
    "The I/O timeout of the path device's queue (queue/io_timeout).",
  );
  const subsysInfo = set.family(
    "nvmeof_subsystem_info",
    "gauge",
    "An NVMe subsystem with a fabrics controller: 1 (/sys/class/nvme-subsystem).",
  );
  const subsysPaths = set.family(
    "nvmeof_subsystem_paths",
    "gauge",
    "The subsystem's fabrics controllers.",
  );
  const subsysLive = set.family(
    "nvmeof_subsystem_paths_live",
    "gauge",
    "The subsystem's fabrics controllers in state live.",
  );

  for (const s of await subsystems()) {
    const nqn = s.subsysnqn;
    subsysInfo({ subsystem: s.name, subsystem_nqn: nqn, iopolicy: s.iopolicy ?? "" }, 1);
    subsysPaths({ subsystem_nqn: nqn }, s.controllers.length);
    subsysLive({ subsystem_nqn: nqn }, s.controllers.filter((c) => c.state === LIVE).length);
    for (const c of s.controllers) {
      const controller = c.name;
      info({
        controller,
        subsystem_nqn: nqn,
        transport: c.transport,
        traddr: c.address.traddr ?? "",
        trsvcid: c.address.trsvcid ?? "",
        host_traddr: c.address.host_traddr ?? "",
      }, 1);
      up({ controller, subsystem_nqn: nqn }, c.state === LIVE ? 1 : 0);
      set.oneHot(state, { controller }, PATH_STATES, c.state);
      for (const ns of c.namespaces) {
        if (ns.ana_state !== undefined) {
          set.oneHot(ana, { controller, nsid: String(ns.nsid) }, ANA_STATES, ns.ana_state);
        }
      }
      const dir = controllerDir(paths, controller);
      const timeouts: [typeof kato, string][] = [
        [kato, "kato"],
        [loss, "ctrl_loss_tmo"],
        [delay, "reconnect_delay"],
        [fastFail, "fast_io_fail_tmo"],
      ];
      for (const [add, attr] of timeouts) {
        const v = await seconds(dir, attr);
        if (v !== undefined) add({ controller }, v);
      }
    }
    // The queue timeouts: each head's paths under multipath, else the controllers' own namespaces.
    for (const head of s.namespaces) {
      for (const p of head.paths) {
        if (p.io_timeout !== undefined) {
          ioTimeout({ controller: p.controller, device: p.name }, p.io_timeout / MS_PER_SECOND);
        }
      }
      if (!s.multipath && head.io_timeout !== undefined) {
        const owner = s.controllers.find((c) => c.namespaces.some((n) => n.name === head.name));
        if (owner) {
          ioTimeout({ controller: owner.name, device: head.name }, head.io_timeout / MS_PER_SECOND);
        }
      }
    }
  }
  return set.families();
}
