/**
 * Target side checks on the live nvmet configfs tree: configfs mounted, nvmet and the module of
 * each transport its ports use (nvmet-rdma, nvmet-tcp) loaded, each rdma port's address on an
 * RDMA netdev and each tcp port's on an interface of this host, a subsystem linked to each port
 * (the first link enables it), namespaces enabled, allow_any_host flagged, and — for a given
 * subsystem NQN and host NQN — whether the port the host uses exports it and the host is allowed.
 */
import { softRoceCommand } from "../rdma/soft_roce.ts";
import { fileKind } from "../configfs/libc_fs.ts";
import { KernelConfigfs } from "../configfs/io.ts";
import { type LivePort, type LiveTree, readTree } from "../configfs/nvmet.ts";
import { portServes } from "../configfs/port_match.ts";
import { isConfigfsMounted } from "../host/kernel.ts";
import { type Check, check } from "./check.ts";
import { type Devices, gidsFor } from "./fabric.ts";
import { moduleCheck } from "./host.ts";
import type { DoctorPaths } from "./kernel_paths.ts";
import { isTransport, type Transport, TRANSPORTS } from "../fabrics/connect_options.ts";
import {
  hostPort,
  isAnyAddress,
  type LocalAddress,
  localAddresses,
  localInterfaceOf,
} from "../net/address.ts";

/** What the user expects of the target. */
export interface TargetExpect {
  /** The transport the user asked about (doctor -t); undefined: whichever the ports use. */
  trtype?: Transport;
  traddr?: string;
  trsvcid: string;
  nqn?: string;
  hostnqn?: string;
}

/** Reads the nvmet tree below `<configfs>/nvmet`, or undefined when nvmet is not there. */
export function readNvmet(paths: DoctorPaths): LiveTree | undefined {
  const root = `${paths.configfs}/nvmet`;
  if (fileKind(root, { follow: true }) !== "dir") return undefined;
  return readTree(new KernelConfigfs(root));
}

const N = "/sys/kernel/config/nvmet";

function portWhere(p: LivePort): string {
  return hostPort(p.attr.addr_traddr ?? "", p.attr.addr_trsvcid ?? "");
}

/** The port's transport, when it is one the doctor checks (rdma, tcp). */
function transportOf(p: LivePort): Transport | undefined {
  const t = p.attr.addr_trtype ?? "";
  return isTransport(t) ? t : undefined;
}

/**
 * The transports `ports` use; rdma alone when there is no port (what a target is set up with by
 * default).
 */
function portTransports(ports: LivePort[]): Set<Transport> {
  if (ports.length === 0) return new Set(["rdma"]);
  return new Set(ports.map(transportOf).filter((t) => t !== undefined));
}

/** The transports the local target's ports use (portTransports; rdma when nvmet is not there). */
export function targetTransports(tree: LiveTree | undefined): Set<Transport> {
  return portTransports(tree?.ports ?? []);
}

/** The address check of a tcp port: nvmet-tcp binds a socket, so any interface of this host. */
function tcpAddressCheck(p: LivePort, addr: string, local: LocalAddress[]): Check {
  const id = `target.port.${p.id}.address`;
  const on = localInterfaceOf(addr, local);
  return on ? check(id, "ok", `port ${p.id} is for ${portWhere(p)}, on ${on.name}`) : check(
    id,
    "fail",
    `port ${p.id} (tcp) is for ${portWhere(p)}, but ${addr} is on no interface of this host: ` +
      "nvmet-tcp cannot bind it (EADDRNOTAVAIL; dmesg says 'failed to bind port socket')",
    `configure ${addr} on the fabric NIC (ip addr add ${addr}/24 dev IFACE); then unlink and ` +
      "relink the port's subsystems",
  );
}

/**
 * Checks of one rdma or tcp port: its address (on an RDMA netdev, or on any interface for tcp)
 * and that a subsystem is linked.
 */
export function portChecks(
  p: LivePort,
  devices: Devices,
  nqns: Set<string>,
  local: LocalAddress[] = localAddresses(),
): Check[] {
  const id = `target.port.${p.id}`;
  const out: Check[] = [];
  const addr = p.attr.addr_traddr ?? "";
  const fam = p.attr.addr_adrfam ?? "";
  const base = `${N}/ports/${p.name}`;
  const t = transportOf(p) ?? "rdma";
  if (fam !== "ipv4" && fam !== "ipv6") {
    out.push(check(
      `${id}.address`,
      "fail",
      `port ${p.id} (${t}) has addr_adrfam '${fam}': nvmet-${t} takes only ipv4 or ipv6`,
      `unlink its subsystems, then: echo ipv4 > ${base}/addr_adrfam`,
    ));
  } else if (addr === "" || !p.attr.addr_trsvcid) {
    out.push(check(
      `${id}.address`,
      "fail",
      `port ${p.id} (${t}) has no ${addr === "" ? "addr_traddr" : "addr_trsvcid"}`,
      `echo ADDR > ${base}/addr_traddr; echo 4420 > ${base}/addr_trsvcid (before linking subsystems)`,
    ));
  } else if (isAnyAddress(addr)) {
    out.push(
      check(`${id}.address`, "ok", `port ${p.id} listens on every address (${portWhere(p)})`),
    );
  } else if (t === "tcp") {
    out.push(tcpAddressCheck(p, addr, local));
  } else if ("error" in devices) {
    out.push(check(
      `${id}.address`,
      "skip",
      `port ${p.id} is for ${
        portWhere(p)
      }; could not determine whether ${addr} is on an RDMA netdev ` +
        `(${devices.error})`,
      `look by hand: ip -br addr | grep -w ${addr}; rdma link show`,
    ));
  } else {
    const g = gidsFor(devices, addr)[0];
    out.push(
      g
        ? check(
          `${id}.address`,
          "ok",
          `port ${p.id} is for ${portWhere(p)}, on ${
            g.gid.netdev ?? "?"
          } (${g.dev} port ${g.port})`,
        )
        : check(
          `${id}.address`,
          "fail",
          `port ${p.id} is for ${
            portWhere(p)
          }, but ${addr} is on no RDMA netdev of this host: the kernel ` +
            "cannot bind it (EADDRNOTAVAIL when the address is missing, ENODEV when its netdev has no RDMA device)",
          `configure ${addr} on the RDMA NIC's netdev (ip addr add ${addr}/24 dev IFACE), or add Soft-RoCE on ` +
            `its netdev (${
              softRoceCommand(localInterfaceOf(addr, local)?.name)
            }); then unlink and relink the port's subsystems`,
        ),
    );
  }
  if (p.subsystems.length === 0) {
    out.push(check(
      `${id}.enabled`,
      "fail",
      `port ${p.id} (${
        portWhere(p)
      }) has no subsystem linked: it is not enabled, nothing listens there`,
      `ln -s ${N}/subsystems/NQN ${base}/subsystems/NQN`,
    ));
  } else {
    const missing = p.subsystems.filter((s) => !nqns.has(s));
    out.push(check(
      `${id}.enabled`,
      missing.length ? "warn" : "ok",
      `port ${p.id} (${portWhere(p)}) exports ${p.subsystems.map((s) => `'${s}'`).join(", ")}` +
        (missing.length ? `; link(s) to missing subsystem(s): ${missing.join(", ")}` : ""),
      missing.length ? `rm ${missing.map((s) => `${base}/subsystems/${s}`).join(" ")}` : undefined,
    ));
  }
  return out;
}

/**
 * All target-side checks on `tree` (readNvmet's; undefined: nvmet is not there). `required` makes
 * a missing nvmet a failure (--role target); `local` is this host's addresses, for the tcp ports.
 */
export function targetChecks(
  paths: DoctorPaths,
  tree: LiveTree | undefined,
  devices: Devices,
  expect: TargetExpect,
  required: boolean,
  local: LocalAddress[] = localAddresses(),
): Check[] {
  const out: Check[] = [];
  const mounted = isConfigfsMounted(paths.configfs, paths.proc);
  out.push(
    mounted === undefined
      ? check("target.configfs", "skip", `could not read ${paths.proc}/mounts`)
      : mounted
      ? check("target.configfs", "ok", `configfs is mounted on ${paths.configfs}`)
      : check(
        "target.configfs",
        required ? "fail" : "skip",
        `configfs is not mounted on ${paths.configfs}`,
        `mount -t configfs none ${paths.configfs}`,
      ),
  );
  if (!tree) {
    out.push(check(
      "target.nvmet",
      required ? "fail" : "skip",
      `nvmet is not loaded (${paths.configfs}/nvmet does not exist)` +
        (required ? "" : ": no target on this host (use --role target to require one)"),
      `modprobe -a nvmet nvmet-${expect.trtype ?? "rdma"}`,
    ));
    return out;
  }
  if (!required && tree.ports.length === 0 && tree.subsystems.length === 0) {
    out.push(check(
      "target.nvmet",
      "skip",
      `nvmet is loaded but configures no port and no subsystem: no target on this host ` +
        "(use --role target to require one)",
    ));
    return out;
  }
  out.push(check("target.nvmet", "ok", `nvmet is loaded (${paths.configfs}/nvmet)`));
  // The module of each transport the ports use, and of the one asked about (rdma by default when
  // there is no port at all).
  const checked = tree.ports.filter((p) => transportOf(p) !== undefined);
  const transports = tree.ports.length === 0 && expect.trtype
    ? new Set([expect.trtype])
    : portTransports(tree.ports);
  if (expect.trtype) transports.add(expect.trtype);
  for (const t of TRANSPORTS.filter((t) => transports.has(t))) {
    const enabled = checked.some((p) => transportOf(p) === t && p.subsystems.length > 0);
    out.push(moduleCheck(paths, `target.module.nvmet_${t}`, `nvmet-${t}`, {
      needed: `it serves ${t} ports`,
      autoload: enabled ? undefined : `the kernel requests it when a ${t} port is enabled`,
    }));
  }
  const want = expect.trtype;
  if (tree.ports.length === 0 || (want && !checked.some((p) => transportOf(p) === want))) {
    const t = want ?? "rdma";
    out.push(check(
      "target.ports",
      "fail",
      tree.ports.length === 0
        ? `no port in ${paths.configfs}/nvmet/ports: nothing listens`
        : `no ${t} port in ${paths.configfs}/nvmet/ports (${tree.ports.length} port(s) of other transports)`,
      `create one: nvmeof target up -f SPEC (or mkdir ports/1 with addr_trtype ${t}, addr_adrfam, ` +
        "addr_traddr, addr_trsvcid, then link a subsystem)",
    ));
  }
  const nqns = new Set(tree.subsystems.map((s) => s.nqn));
  for (const p of checked) out.push(...portChecks(p, devices, nqns, local));
  for (const s of tree.subsystems) {
    const id = `target.subsystem.${s.nqn}`;
    const dir = `${N}/subsystems/${s.nqn}`;
    const on = s.namespaces.filter((n) => n.enable);
    out.push(
      on.length
        ? check(
          `${id}.namespaces`,
          "ok",
          `'${s.nqn}' has ${on.length} enabled namespace(s): ${
            on.map((n) => `${n.nsid} (${n.device_path})`).join(", ")
          }`,
        )
        : check(
          `${id}.namespaces`,
          "warn",
          `'${s.nqn}' has no enabled namespace (${s.namespaces.length} defined): hosts connect but get no block device`,
          s.namespaces.length
            ? `echo 1 > ${dir}/namespaces/${s.namespaces[0].nsid}/enable (device_path must exist)`
            : `mkdir ${dir}/namespaces/1; echo /dev/BLOCKDEV > ${dir}/namespaces/1/device_path; echo 1 > ${dir}/namespaces/1/enable`,
        ),
    );
    if (s.attr.allow_any_host === "1") {
      out.push(check(
        `${id}.hosts`,
        "warn",
        `'${s.nqn}' has allow_any_host 1: every host that reaches the port can connect`,
        `echo 0 > ${dir}/attr_allow_any_host; then ln -s ${N}/hosts/HOSTNQN ${dir}/allowed_hosts/HOSTNQN for each host`,
      ));
    }
    if (!tree.ports.some((p) => p.subsystems.includes(s.nqn))) {
      out.push(check(
        `${id}.ports`,
        "warn",
        `'${s.nqn}' is linked to no port: no host can reach it`,
        `ln -s ${dir} ${N}/ports/PORTID/subsystems/${s.nqn}`,
      ));
    }
  }
  if (expect.nqn) out.push(...expectChecks(tree, expect));
  return out;
}

/** Whether the subsystem the user names exists, is on the port the host uses, and allows the host. */
export function expectChecks(tree: LiveTree, e: TargetExpect): Check[] {
  const nqn = e.nqn!;
  const out: Check[] = [];
  const dir = `${N}/subsystems/${nqn}`;
  const sub = tree.subsystems.find((s) => s.nqn === nqn);
  if (!sub) {
    out.push(check(
      "target.expect.subsystem",
      "fail",
      `subsystem '${nqn}' does not exist on this target (it has: ${
        tree.subsystems.map((s) => `'${s.nqn}'`).join(", ") || "none"
      })`,
      `create it (nvmeof target up) or use the right -n NQN`,
    ));
    return out;
  }
  if (e.traddr) {
    const t = e.trtype ?? "rdma";
    const end = { trtype: t, local: { address: e.traddr, port: Number(e.trsvcid) } };
    const ports = tree.ports.filter((p) => portServes(p, end));
    const linked = ports.filter((p) => p.subsystems.includes(nqn));
    if (ports.length === 0) {
      const elsewhere = tree.ports.filter((p) => p.attr.addr_trtype === t);
      out.push(check(
        "target.expect.port",
        "fail",
        `no ${t} port on this target is for ${hostPort(e.traddr, e.trsvcid)}` +
          (elsewhere.length
            ? ` (${t} ports: ${elsewhere.map((p) => `${p.id} for ${portWhere(p)}`).join(", ")})`
            : ""),
        `create a port for ${e.traddr} ${e.trsvcid} and link '${nqn}' to it, or connect to ` +
          (elsewhere.length ? `${portWhere(elsewhere[0])}` : "the port's address"),
      ));
    } else if (linked.length === 0) {
      out.push(check(
        "target.expect.port",
        "fail",
        `subsystem '${nqn}' is not linked to port ${ports[0].id} (${
          portWhere(ports[0])
        }): the target answers ` +
          `the host's connect with "invalid subsystem" (EIO)`,
        `ln -s ${dir} ${N}/ports/${ports[0].id}/subsystems/${nqn}`,
      ));
    } else {
      out.push(check(
        "target.expect.port",
        "ok",
        `subsystem '${nqn}' is linked to port ${linked[0].id} (${portWhere(linked[0])})`,
      ));
    }
  }
  if (e.hostnqn) {
    if (sub.attr.allow_any_host === "1") {
      out.push(check("target.expect.host", "ok", `'${nqn}' allows any host`));
    } else if (sub.allowed_hosts.includes(e.hostnqn)) {
      out.push(
        check("target.expect.host", "ok", `host '${e.hostnqn}' is in allowed_hosts of '${nqn}'`),
      );
    } else {
      out.push(check(
        "target.expect.host",
        "fail",
        `host '${e.hostnqn}' is not in allowed_hosts of '${nqn}' (allowed: ${
          sub.allowed_hosts.map((h) => `'${h}'`).join(", ") || "none"
        }): the target refuses its connect (EIO)`,
        `mkdir -p ${N}/hosts/${e.hostnqn}; ln -s ${N}/hosts/${e.hostnqn} ${dir}/allowed_hosts/${e.hostnqn}`,
      ));
    }
  }
  return out;
}
