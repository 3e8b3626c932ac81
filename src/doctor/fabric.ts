/**
 * Fabric checks: RDMA devices and ports, the RoCE MTU against the netdev MTU, the RoCE v2 GID of
 * the local address, the route to the target, and PFC/ECN where the kernel shows them. They work
 * on a plain description of the devices (what `describeRdmaDevices` reads through libibverbs) so
 * the rules are testable without hardware.
 */
import { softRoceCommand } from "../rdma/soft_roce.ts";
import { fileKind } from "../configfs/libc_fs.ts";
import { listDir, readText } from "../host/kfs.ts";
import { type Check, check } from "./check.ts";
import type { DoctorPaths } from "./kernel_paths.ts";
import type { GidInfo, PortInfo } from "../rdma/devices.ts";

/** The parts of a GID entry the checks use. */
export type GidView = Pick<GidInfo, "index" | "type" | "netdev" | "ip">;

/** The parts of a port the checks use. */
export type PortView =
  & Pick<
    PortInfo,
    | "port"
    | "state"
    | "phys_state"
    | "link_layer"
    | "max_mtu"
    | "active_mtu"
    | "netdev"
    | "netdev_mtu"
  >
  & { gids: GidView[] };

/** The parts of a device the checks use. */
export interface DeviceView {
  name: string;
  ports: PortView[];
}

/** The RDMA devices, or why they could not be read. */
export type Devices = { devices: DeviceView[] } | { error: string; hint?: string };

/** RoCE MTU sizes, largest first. */
const IB_MTUS = [4096, 2048, 1024, 512, 256];

/**
 * The RoCE MTU a netdev MTU allows (include/rdma/ib_addr.h iboe_get_mtu): the netdev MTU less the
 * RoCE headers (96 bytes; 80 on older kernels), rounded down to an IB MTU. Returns both readings.
 */
export function roceMtuFor(netdevMtu: number): { current: number; older: number } {
  const pick = (room: number) => IB_MTUS.find((m) => m <= room) ?? 0;
  return { current: pick(netdevMtu - 96), older: pick(netdevMtu - 80) };
}

/** The smallest netdev MTU that gives RoCE MTU `mtu`. */
export function netdevMtuFor(mtu: number): number {
  return mtu + 96;
}

function ports(d: Devices): { dev: string; p: PortView }[] {
  return "devices" in d
    ? d.devices.flatMap((dev) => dev.ports.map((p) => ({ dev: dev.name, p })))
    : [];
}

/** An RDMA device exists. */
export function devicesCheck(d: Devices): Check {
  if ("error" in d) {
    return check("fabric.rdma_device", "fail", `cannot list RDMA devices: ${d.error}`, d.hint);
  }
  if (d.devices.length === 0) {
    return check(
      "fabric.rdma_device",
      "fail",
      "no RDMA device: libibverbs lists none",
      "load your RDMA NIC's driver (mlx5_ib, irdma, bnxt_re …), or add Soft-RoCE on the netdev " +
        `that carries the target's subnet: ${softRoceCommand()}`,
    );
  }
  const names = d.devices.map((x) =>
    `${x.name} (${
      x.ports.map((p) => `port ${p.port} ${p.link_layer}${p.netdev ? ` on ${p.netdev}` : ""}`).join(
        ", ",
      )
    })`
  );
  return check("fabric.rdma_device", "ok", `RDMA device(s): ${names.join("; ")}`);
}

/** Each port ACTIVE and LINK_UP. */
export function portStateChecks(d: Devices): Check[] {
  return ports(d).map(({ dev, p }) => {
    const id = `fabric.port.${dev}.${p.port}.state`;
    // libibverbs' names carry a PORT_ prefix (PORT_ACTIVE); sysfs says ACTIVE.
    const up = p.state.replace(/^PORT_/, "") === "ACTIVE" && p.phys_state === "LINK_UP";
    if (up) return check(id, "ok", `${dev} port ${p.port} is ACTIVE, LINK_UP`);
    return check(
      id,
      "fail",
      `${dev} port ${p.port} is ${p.state}, ${p.phys_state} (it must be ACTIVE, LINK_UP to carry traffic)`,
      p.netdev
        ? `bring the netdev up and check its cable/switch port: ip link set ${p.netdev} up; ip link show ${p.netdev}`
        : "check the port's cable and switch port (ibstat); on InfiniBand a subnet manager must run (opensm)",
    );
  });
}

/** The RoCE active MTU against the netdev MTU, per Ethernet port. */
export function mtuCheck(dev: string, p: PortView): Check {
  const id = `fabric.port.${dev}.${p.port}.mtu`;
  if (p.link_layer !== "Ethernet") {
    return check(id, "ok", `${dev} port ${p.port} (${p.link_layer}): active MTU ${p.active_mtu}`);
  }
  if (!p.netdev || p.netdev_mtu === null) {
    return check(
      id,
      "skip",
      `${dev} port ${p.port}: RoCE active MTU ${p.active_mtu}; could not determine the netdev MTU ` +
        "(no netdev on the GID table)",
      "look by hand: rdma link show; ip link show DEV",
    );
  }
  const rule = roceMtuFor(p.netdev_mtu);
  const want = Math.min(rule.current, p.max_mtu);
  const wantOld = Math.min(rule.older, p.max_mtu);
  const base =
    `${dev} port ${p.port}: netdev ${p.netdev} MTU ${p.netdev_mtu}, RoCE active MTU ${p.active_mtu}`;
  if (p.active_mtu === want || p.active_mtu === wantOld) {
    if (p.active_mtu < 4096 && p.max_mtu >= 4096) {
      return check(
        id,
        "ok",
        `${base} (capped by the netdev MTU; RoCE MTU 4096 needs netdev MTU >= ${
          netdevMtuFor(4096)
        } ` +
          "here, on the peer and on every switch port between: the path uses the smaller of the two ends)",
      );
    }
    return check(id, "ok", `${base} (the largest this netdev MTU allows; the peer's must match)`);
  }
  if (p.active_mtu > Math.max(want, wantOld)) {
    return check(
      id,
      "fail",
      `${base}: RoCE frames of ${p.active_mtu} bytes do not fit the netdev MTU (at most ${want})`,
      `raise the netdev MTU: ip link set ${p.netdev} mtu ${
        Math.max(netdevMtuFor(p.active_mtu), 9000)
      }` +
        " (and on the peer and switch ports)",
    );
  }
  return check(
    id,
    "warn",
    `${base}: the netdev allows RoCE MTU ${want}, the RDMA port uses ${p.active_mtu} (it did not follow the netdev)`,
    `re-apply the MTU so the RDMA device sees it: ip link set ${p.netdev} mtu ${p.netdev_mtu}; ` +
      `for Soft-RoCE re-create the link: rdma link delete ${dev}; rdma link add ${dev} type rxe netdev ${p.netdev}`,
  );
}

/** All MTU checks. */
export function mtuChecks(d: Devices): Check[] {
  return ports(d).map(({ dev, p }) => mtuCheck(dev, p));
}

/** The RDMA ports whose GID table carries `ip`, with the entries. */
export function gidsFor(d: Devices, ip: string): { dev: string; port: number; gid: GidView }[] {
  return ports(d).flatMap(({ dev, p }) =>
    p.gids.filter((g) => g.ip === ip).map((gid) => ({ dev, port: p.port, gid }))
  );
}

/** Netdevs that carry an RDMA port. */
export function rdmaNetdevs(d: Devices): Set<string> {
  const s = new Set<string>();
  for (const { p } of ports(d)) {
    if (p.netdev) s.add(p.netdev);
    for (const g of p.gids) if (g.netdev) s.add(g.netdev);
  }
  return s;
}

/** A RoCE v2 GID exists for the local address `ip` used to reach the target. */
export function gidCheck(d: Devices, ip: string | undefined, how: string): Check {
  const id = "fabric.gid";
  if (!ip) {
    return check(
      id,
      "skip",
      `could not determine the local address used to reach the target (${how})`,
      "look by hand: ip route get TARGET_ADDR; then rdma link show and the port's gid_attrs/types",
    );
  }
  if ("error" in d) return check(id, "skip", `local address ${ip}: no RDMA devices to look in`);
  const found = gidsFor(d, ip);
  const v2 = found.find((f) => f.gid.type === "RoCE v2");
  if (v2) {
    return check(
      id,
      "ok",
      `local address ${ip} has RoCE v2 GID index ${v2.gid.index} on ${v2.dev} port ${v2.port}` +
        (v2.gid.netdev ? ` (${v2.gid.netdev})` : "") + ` (${how})`,
    );
  }
  if (found.length) {
    const f = found[0];
    return check(
      id,
      "warn",
      `local address ${ip} has only a ${f.gid.type} GID (index ${f.gid.index} on ${f.dev}): RoCE v1 does not cross IP routers`,
      "use RoCE v2 (the default of current kernels; check /sys/kernel/config/rdma_cm/<dev>/ports/<p>/default_roce_mode)",
    );
  }
  return check(
    id,
    "fail",
    `local address ${ip} has no GID on any RDMA port (${how}): the RDMA device is not on the netdev that holds it`,
    `put ${ip} on the RDMA NIC's netdev, or add Soft-RoCE on its netdev: ${softRoceCommand()}`,
  );
}

/** What `ip -j route get ADDR` says. */
export interface RouteView {
  type?: string;
  dev?: string;
  gateway?: string;
  prefsrc?: string;
  error?: string;
}

/** Asks the kernel for the route to `addr` (iproute2). */
export async function routeTo(addr: string): Promise<RouteView> {
  try {
    const out = await new Deno.Command("ip", {
      args: ["-j", "route", "get", addr],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const d = new TextDecoder();
    if (!out.success) return { error: d.decode(out.stderr).trim() || `ip exited ${out.code}` };
    const r = JSON.parse(d.decode(out.stdout))[0] ?? {};
    return { type: r.type, dev: r.dev, prefsrc: r.prefsrc, gateway: r.gateway };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** The skip when `ip route get` gave no device for `addr`. */
function routeUnknown(addr: string, r: RouteView): Check {
  return check(
    "fabric.route",
    "skip",
    `could not determine the route to ${addr}: ${r.error ?? "no device in the answer"}`,
    `look by hand: ip route get ${addr}`,
  );
}

/** The route to an NVMe/TCP target: any netdev carries TCP, so only whether there is one. */
export function tcpRouteCheck(addr: string, r: RouteView): Check {
  const id = "fabric.route";
  if (r.error || !r.dev) return routeUnknown(addr, r);
  if (r.type === "local") {
    return check(id, "ok", `${addr} is a local address (on ${r.dev}): the target is this host`);
  }
  return check(
    id,
    "ok",
    `route to ${addr} leaves through ${r.dev}${r.prefsrc ? ` from ${r.prefsrc}` : ""}` +
      (r.gateway ? ` via ${r.gateway}` : ""),
  );
}

/** The route to the target leaves through an RDMA-capable netdev (or the target is local and on one). */
export function routeCheck(d: Devices, addr: string, r: RouteView): Check {
  const id = "fabric.route";
  if (r.error || !r.dev) return routeUnknown(addr, r);
  if ("error" in d) {
    return check(id, "skip", `route to ${addr} via ${r.dev}: no RDMA devices to compare`);
  }
  if (r.type === "local") {
    const g = gidsFor(d, addr)[0];
    return g
      ? check(
        id,
        "ok",
        `${addr} is a local address, on ${
          g.gid.netdev ?? g.dev
        } (${g.dev} port ${g.port}): the target is this host`,
      )
      : check(
        id,
        "fail",
        `${addr} is a local address but on no RDMA port's netdev: RDMA cannot reach it`,
        `add Soft-RoCE on the netdev that holds ${addr} (${softRoceCommand()}) or use an address on the RDMA NIC`,
      );
  }
  const nets = rdmaNetdevs(d);
  if (nets.has(r.dev)) {
    return check(
      id,
      "ok",
      `route to ${addr} leaves through ${r.dev}${
        r.prefsrc ? ` from ${r.prefsrc}` : ""
      }, an RDMA netdev`,
    );
  }
  return check(
    id,
    "fail",
    `route to ${addr} leaves through ${r.dev}, which has no RDMA device (RDMA netdevs: ${
      [...nets].join(", ") || "none"
    })`,
    `route the target's subnet through the RDMA NIC's netdev (ip route add ${addr}/32 dev RDMA_NETDEV), ` +
      `or add Soft-RoCE on ${r.dev}: ${softRoceCommand(r.dev)}`,
  );
}

/** PFC from `dcb -j pfc show dev DEV`, ECN from mlx5-style `<sysfs>/class/net/DEV/ecn`. */
export async function pfcEcnCheck(paths: DoctorPaths, netdev: string): Promise<Check> {
  const id = `fabric.lossless.${netdev}`;
  const parts: string[] = [];
  let pfcOn: number[] | undefined;
  try {
    const out = await new Deno.Command("dcb", {
      args: ["-j", "pfc", "show", "dev", netdev],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const d = new TextDecoder();
    if (out.success) {
      const j = JSON.parse(d.decode(out.stdout));
      const list = (j.prio_pfc ?? j["prio-pfc"] ?? []) as { prio: number; enabled: boolean }[];
      pfcOn = list.filter((x) => x.enabled).map((x) => x.prio);
      parts.push(`PFC on priorities: ${pfcOn.length ? pfcOn.join(",") : "none"}`);
    } else {
      parts.push(
        `PFC: could not determine (dcb pfc show dev ${netdev}: ${
          d.decode(out.stderr).trim().split("\n")[0]
        })`,
      );
    }
  } catch (err) {
    parts.push(`PFC: could not determine (dcb: ${(err as Error).message})`);
  }
  const ecnDir = `${paths.sysfs}/class/net/${netdev}/ecn`;
  let ecnOn: string[] | undefined;
  if (fileKind(ecnDir, { follow: true }) === "dir") {
    ecnOn = [];
    for (const role of ["roce_np", "roce_rp"]) {
      const dir = `${ecnDir}/${role}/enable`;
      if (fileKind(dir, { follow: true }) !== "dir") continue;
      for (const prio of listDir(dir)) {
        try {
          if (readText(`${dir}/${prio}`).trim() === "1") ecnOn.push(`${role}:${prio}`);
        } catch { /* unreadable entry: leave it out */ }
      }
    }
    parts.push(`ECN enabled: ${ecnOn.length ? ecnOn.join(",") : "none"}`);
  } else {
    parts.push("ECN: could not determine (the driver exposes no ecn/ in sysfs)");
  }
  const seen = `${netdev}: ${parts.join("; ")}`;
  const byHand =
    `check by hand: dcb pfc show dev ${netdev} (or mlnx_qos -i ${netdev}); the switch must ` +
    "have PFC on the RoCE priority (commonly 3) or ECN marking on, end to end";
  if (pfcOn === undefined && ecnOn === undefined) return check(id, "skip", seen, byHand);
  if ((pfcOn?.length ?? 0) > 0 || (ecnOn?.length ?? 0) > 0) return check(id, "ok", seen);
  return check(
    id,
    "warn",
    `${seen}: the fabric is lossy for RoCE (drops cost retransmission timeouts, seen as stalls and "Connection timed out")`,
    `enable PFC on the RoCE priority: dcb pfc set dev ${netdev} prio-pfc 3:on (and on the switch), or enable ECN`,
  );
}
