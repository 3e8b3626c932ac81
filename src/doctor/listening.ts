/**
 * Whether each enabled rdma or tcp port of the local target is really bound: nvmet binds the
 * port's address when the first subsystem is linked, and a failed bind shows only in the kernel
 * log. For every rdma port whose address is on a local RDMA port, the doctor sends the
 * admin-queue connect request to it and reads the answer; for every tcp port whose address is
 * local (or the wildcard, probed at the loopback address), the ICReq.
 */
import type { LivePort, LiveTree } from "../configfs/nvmet.ts";
import { type Check, check } from "./check.ts";
import { type Devices, gidsFor } from "./fabric.ts";
import { probeNvmeRdma, type ProbeOutcome } from "../nvme/admin_probe.ts";
import { classifyProbe } from "./reach.ts";
import { type PortFlap, portFlap, rxeRecreateCommand } from "./nic_flap.ts";
import { classifyTcpProbe, probeNvmeTcp, type TcpProbeOutcome } from "./reach_tcp.ts";
import {
  canonicalIp,
  hostPort,
  isAnyAddress,
  localAddresses,
  localInterfaceOf,
} from "../net/address.ts";

/** The verdict on a tcp port from the ICReq probe's answer. */
export function classifyTcpListening(p: LivePort, o: TcpProbeOutcome): Check {
  const id = `target.port.${p.id}.listening`;
  const where = hostPort(o.traddr, o.trsvcid);
  const v = classifyTcpProbe(o);
  if (v.status === "ok") {
    return {
      ...check(id, "ok", `port ${p.id} answers at ${where}: bound, ${v.seen.replace(/^an? /, "")}`),
      found: v.found,
    };
  }
  if (v.status === "skip") return check(id, "skip", v.seen);
  return {
    ...check(
      id,
      "fail",
      `port ${p.id} (tcp) has ${p.subsystems.length} subsystem(s) linked but its listener does not ` +
        `answer the ICReq at ${where}: ${v.seen}`,
      "read the bind error: dmesg | grep nvmet_tcp ('failed to bind port socket': the address is not " +
        "on this host, or another socket holds the port); then unlink and relink a subsystem to bind " +
        `again: rm /sys/kernel/config/nvmet/ports/${p.id}/subsystems/NQN; ln -s ` +
        `/sys/kernel/config/nvmet/subsystems/NQN /sys/kernel/config/nvmet/ports/${p.id}/subsystems/NQN`,
    ),
    found: v.found,
  };
}

/** Where to probe a tcp port's listener from this host: its address if local, loopback for a wildcard. */
export function tcpProbeAddress(traddr: string, local = localAddresses()): string | undefined {
  const c = canonicalIp(traddr);
  if (c && isAnyAddress(c)) return c === "::" ? "::1" : "127.0.0.1";
  return localInterfaceOf(traddr, local) ? traddr : undefined;
}

/** The step that re-enables port P: unlink and relink its subsystems (nvmet binds anew). */
function relinkStep(p: LivePort): string {
  const ports = `/sys/kernel/config/nvmet/ports/${p.id}/subsystems`;
  const nqn = p.subsystems.length === 1 ? p.subsystems[0] : "NQN";
  return `rm ${ports}/${nqn}; ln -s /sys/kernel/config/nvmet/subsystems/${nqn} ${ports}/${nqn}`;
}

/**
 * The verdict on a port whose listener does not answer since its rxe netdev went down and came
 * back (nic_flap.ts), or undefined when the probe's answer or the kernel log is not that.
 */
export function classifyFlapped(p: LivePort, o: ProbeOutcome, f?: PortFlap): Check | undefined {
  if (!f?.upAt || (o.event !== "TIMEOUT" && o.event !== "UNREACHABLE")) return undefined;
  const dev = f.flap.device;
  const back = ` and came back at ${f.upAt.toISOString()}`;
  return check(
    `target.port.${p.id}.listening`,
    "fail",
    `the storage server's NIC ${f.netdev} (${dev}) went down at ${f.downAt.toISOString()}${back}; ` +
      `port ${p.id}'s RDMA listener at ${hostPort(o.traddr, o.trsvcid)} has not answered since ` +
      `(${o.event}): a send on Soft-RoCE's management queue pair (QP1) while the link was down ` +
      "(a disconnect) left its receive side in error, so it drops every connect request",
    `make ${dev} anew, then re-enable the port: ${rxeRecreateCommand(dev, f.netdev)}; ${
      relinkStep(p)
    } ` +
      `(drops the connections on ${dev}; hosts reconnect by themselves; Soft-RoCE only, a hardware RoCE NIC ` +
      "keeps its QP1: docs/nic_flap.md)",
  );
}

/** The verdict on one port from the probe's answer (and its netdev's flap, when there was one). */
export function classifyListening(p: LivePort, o: ProbeOutcome, flap?: PortFlap): Check {
  const id = `target.port.${p.id}.listening`;
  const where = hostPort(o.traddr, o.trsvcid);
  const flapped = classifyFlapped(p, o, flap);
  if (flapped) return flapped;
  const v = classifyProbe(o);
  if (v.status === "ok" || v.status === "warn") {
    return check(
      id,
      "ok",
      `port ${p.id} answers at ${where}: bound, ${v.seen.replace(/^an? /, "")}`,
    );
  }
  if (v.status === "skip") return check(id, "skip", v.seen);
  return check(
    id,
    "fail",
    `port ${p.id} has ${p.subsystems.length} subsystem(s) linked but does not answer at ${where}: ` +
      `the kernel did not bind it (${v.seen})`,
    "read the bind error: dmesg | grep 'nvmet_rdma: binding CM ID' (-99: the address was not configured " +
      "when the port was enabled; -19: it is not on an RDMA device); then unlink and relink a subsystem " +
      `to bind again: rm /sys/kernel/config/nvmet/ports/${p.id}/subsystems/NQN; ln -s ` +
      `/sys/kernel/config/nvmet/subsystems/NQN /sys/kernel/config/nvmet/ports/${p.id}/subsystems/NQN`,
  );
}

/**
 * Probes every enabled rdma or tcp port of `tree` (readNvmet's; undefined: nvmet is not there)
 * whose address is local; other ports are left to the address checks.
 */
export async function listeningChecks(
  tree: LiveTree | undefined,
  devices: Devices,
  timeoutMs: number,
  paths: { dev: string; proc: string } = { dev: "/dev", proc: "/proc" },
): Promise<Check[]> {
  if (!tree) return [];
  const out: Check[] = [];
  let local: ReturnType<typeof localAddresses> | undefined;
  for (const p of tree.ports) {
    const addr = p.attr.addr_traddr ?? "";
    const port = Number(p.attr.addr_trsvcid);
    if (p.subsystems.length === 0 || !port) continue;
    if (p.attr.addr_trtype === "tcp") {
      const at = tcpProbeAddress(addr, local ??= localAddresses());
      if (at) out.push(classifyTcpListening(p, await probeNvmeTcp(at, port, { timeoutMs })));
      continue;
    }
    if (p.attr.addr_trtype !== "rdma" || "error" in devices) continue;
    const gids = gidsFor(devices, addr);
    if (!gids.length) continue;
    try {
      const o = await probeNvmeRdma(addr, port, { timeoutMs });
      const flap = o.event === "TIMEOUT" || o.event === "UNREACHABLE"
        ? portFlap(gids[0], paths)
        : undefined;
      out.push(classifyListening(p, o, flap));
    } catch (err) {
      out.push(check(
        `target.port.${p.id}.listening`,
        "skip",
        `could not probe port ${p.id}: ${(err as Error).message}`,
      ));
    }
  }
  return out;
}
