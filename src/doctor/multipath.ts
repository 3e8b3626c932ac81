/**
 * Multipath checks of the host: whether native NVMe multipath is on (nvme_core.multipath), and
 * for each connected fabrics subsystem its iopolicy and the health of every path: a controller
 * that is connecting, resetting or deleting, a path whose ANA state makes it unusable, and no
 * usable path at all. Read from the same sysfs reader as `nvmeof list --paths`.
 *
 * A path that is not live is also looked up in the host's neighbour (ARP) table: measured in the
 * lab fabric, every reconnect attempt that failed with `rdma connection establishment failed
 * (-104)` was an rdma_cm ADDR_ERROR (status -110): nvme-rdma gives address resolution 3 s, and ARP
 * for the target's address went unanswered because the link was still down; the first attempt
 * after ARP was answered again connected. So an unanswered ARP entry names the cause, the link.
 */
import { readText } from "../host/kfs.ts";
import {
  controllerDir,
  type ControllerInfo,
  listSubsystems,
  readTimeouts,
  type SubsystemInfo,
} from "../fabrics/sysfs.ts";
import { withNeighbours } from "../fabrics/topology.ts";
import { USABLE_ANA_STATES } from "../configfs/nvmet.ts";
import { type Check, check, type CheckStatus } from "./check.ts";
import { arpWords, type NeighbourView } from "../net/neighbour.ts";
import type { DoctorPaths } from "./kernel_paths.ts";

/** nvme_core's multipath parameter: Y, N, or why it cannot be read. */
export function multipathCheck(paths: DoctorPaths): Check {
  const id = "host.multipath";
  const mod = `${paths.sysfs}/module/nvme_core`;
  let value: string;
  try {
    value = readText(`${mod}/parameters/multipath`).trim();
  } catch {
    let loaded = true;
    try {
      readText(`${mod}/parameters/max_retries`);
    } catch {
      loaded = false;
    }
    return loaded
      ? check(
        id,
        "warn",
        "nvme_core has no multipath parameter: the kernel is built without CONFIG_NVME_MULTIPATH, " +
          "so each path to a subsystem is its own block device",
        "use a kernel built with CONFIG_NVME_MULTIPATH=y (every distribution kernel is), or dm-multipath",
      )
      : check(
        id,
        "skip",
        `nvme_core is not loaded (no ${mod}): nothing to say about multipath yet`,
      );
  }
  if (value === "Y") {
    return check(
      id,
      "ok",
      "native NVMe multipath is on (nvme_core.multipath=Y): the paths to a subsystem share one " +
        "block device nvmeXnY",
    );
  }
  return check(
    id,
    "warn",
    `native NVMe multipath is off (nvme_core.multipath=${value}): each path to a subsystem is its ` +
      "own block device, and losing a path fails its I/O unless dm-multipath is set up",
    "add nvme_core.multipath=Y to the kernel command line (or 'options nvme_core multipath=Y' in " +
      "/etc/modprobe.d/nvme.conf, then rebuild the initramfs) and reboot",
  );
}

function addr(c: { transport: string; address: Record<string, string> }): string {
  const a = c.address;
  return `${c.transport}${a.traddr ? ` ${a.traddr}${a.trsvcid ? ":" + a.trsvcid : ""}` : ""}`;
}

/** How the kernel retries a controller that lost its connection, from its sysfs attributes. */
async function retryPolicy(paths: DoctorPaths, c: ControllerInfo): Promise<string[]> {
  const { reconnectDelay: delay, ctrlLossTmo: loss } = await readTimeouts(
    controllerDir(paths, c.name),
  );
  return [
    ...(delay !== undefined ? [`reconnects every ${delay} s`] : []),
    ...(loss === -1
      ? ["never gives up"]
      : loss !== undefined
      ? [`gives up ${loss} s after the loss`]
      : []),
  ];
}

/** A path not live whose target address does not answer ARP: the link, and what shows it. */
function unansweredArpFix(c: ControllerInfo, n: NeighbourView): string {
  const dev = n.device ?? "DEV";
  const attempts = c.transport === "rdma"
    ? "every reconnect attempt fails in address resolution (dmesg: 'rdma connection establishment " +
      "failed (-104)' after 3 s)"
    : "every reconnect attempt fails before it reaches the target";
  return `path ${c.name} is ${c.state} and ${n.address} does not answer ARP on ${dev}: ${attempts}, ` +
    `so the link to the target is still down; check it (ip link show ${dev}; ping -I ${dev} ` +
    `${n.address}) and the target's address; the first attempt after ARP is answered again ` +
    "connects (the reconnect delay above is the longest wait)";
}

/** One subsystem's paths: worst status, every path in words, and the fix for the worst. */
export async function subsystemPathsCheck(paths: DoctorPaths, s: SubsystemInfo): Promise<Check> {
  const id = `host.paths.${s.name}`;
  const problems: Array<{ status: CheckStatus; fix: string }> = [];
  const words: string[] = [];
  for (const c of s.controllers) {
    const anas = s.namespaces.flatMap((n) =>
      n.paths.filter((p) => p.controller === c.name).map((p) => p.ana_state)
    ).filter((a): a is string => a !== undefined);
    const ana = [...new Set(anas)].join("/");
    let note = "";
    if (c.state !== "live") {
      const arp = c.neighbour;
      const said = [(await retryPolicy(paths, c)).join(", "), arp ? arpWords(arp) : ""];
      note = said.some(Boolean) ? ` (${said.filter(Boolean).join("; ")})` : "";
      problems.push({
        status: "warn",
        fix: arp?.state === "failed"
          ? unansweredArpFix(c, arp)
          : `path ${c.name} is ${c.state}: ` + (c.transport === "rdma"
            ? `'nvmeof doctor -a ${c.address.traddr ?? "ADDR"} -s ${
              c.address.trsvcid ?? "PORT"
            } -n ${s.subsysnqn}' names why it does not come back; `
            : "") +
            "the kernel log shows each attempt (dmesg | grep nvme)",
      });
    }
    const bad = anas.filter((a) => !USABLE_ANA_STATES.has(a));
    if (bad.length) {
      problems.push({
        status: "warn",
        fix: `path ${c.name} is ANA ${bad[0]}: the target's ANA group on ${
          addr(c)
        } says so (a planned failover, or set that group's ana_state back to optimized on the target)`,
      });
    }
    words.push(`${c.name} ${addr(c)} ${c.state}${ana ? " " + ana : ""}${note}`);
  }
  for (const n of s.multipath ? s.namespaces : []) {
    const usable = n.paths.filter((p) =>
      p.state === "live" && (p.ana_state === undefined || USABLE_ANA_STATES.has(p.ana_state))
    );
    if (usable.length === 0) {
      problems.unshift({
        status: "fail",
        fix: `no usable path to ${n.name}: its I/O waits for a path to come back (and fails when ` +
          "ctrl_loss_tmo ends); bring a path back (see the other paths' state) or reconnect",
      });
    }
  }
  const policy = s.multipath && s.iopolicy ? `, iopolicy ${s.iopolicy}` : "";
  const seen = `'${s.subsysnqn}'${policy}, ${s.controllers.length} path${
    s.controllers.length === 1 ? "" : "s"
  }: ${words.join("; ")}`;
  const worst = problems.find((p) => p.status === "fail") ?? problems[0];
  return worst
    ? check(
      id,
      worst.status,
      `${seen}${problems.length > 1 ? ` (${problems.length} problems)` : ""}`,
      worst.fix,
    )
    : check(id, "ok", seen);
}

/** host.multipath, then one check per connected fabrics subsystem. */
export async function multipathChecks(paths: DoctorPaths): Promise<Check[]> {
  const out = [multipathCheck(paths)];
  for (const s of withNeighbours(await listSubsystems(paths), paths.proc)) {
    const fabrics = s.controllers.filter((c) => c.transport !== "pcie");
    if (fabrics.length === 0 || s.subsystype === "discovery") continue;
    out.push(await subsystemPathsCheck(paths, { ...s, controllers: fabrics }));
  }
  return out;
}
