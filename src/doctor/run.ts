/**
 * Runs the checklist in order — host, fabric, target, reachability — and builds the report.
 * Every check reads what it reports; a part that cannot be read is a `skip` saying why.
 */
import { resolveHostIdentity } from "../fabrics/host_identity.ts";
import { readHostFiles } from "../fabrics/host_identity.ts";
import { describeRdmaDevices } from "../rdma/devices.ts";
import { type Check, check, type DoctorReport, summarize, verdictOf } from "./check.ts";
import {
  type Devices,
  devicesCheck,
  gidCheck,
  mtuChecks,
  pfcEcnCheck,
  portStateChecks,
  routeCheck,
  routeTo,
  tcpRouteCheck,
} from "./fabric.ts";
import { hostChecks } from "./host.ts";
import { kernelConnectCheck } from "./kernel_connect.ts";
import type { DoctorPaths } from "./kernel_paths.ts";
import { probeNvmeRdma, type ProbeOutcome } from "../nvme/admin_probe.ts";
import { classifyTcpProbe, probeNvmeTcp } from "./reach_tcp.ts";
import {
  addressCheck,
  classifyHostFlapped,
  listenerCheck,
  noCmReply,
  pathMtuCheck,
  roceV2Check,
} from "./ip_checks.ts";
import { portFlap, type StuckPath } from "./nic_flap.ts";
import { controllerDir, listControllers, readTimeouts } from "../fabrics/sysfs.ts";
import { haProfile } from "../fabrics/connect_table.ts";
import { observeIp, observeMtu, withNeighbour } from "./ip_probe.ts";
import { lossCheck, TRANSFER_ROUNDS, transferProbe } from "./loss.ts";
import { readHwCounters } from "../rdma/port_counters.ts";
import { readNvmet, targetChecks, targetTransports } from "./target.ts";
import { listeningChecks } from "./listening.ts";
import { chooseRole, type Role } from "./role.ts";
import { localAddresses } from "../net/address.ts";
import type { Transport } from "../fabrics/connect_options.ts";

/** What to check. */
export interface DoctorOptions {
  /** --role; absent: chosen from whether -a is an address of this machine. */
  role?: Role;
  traddr?: string;
  trsvcid: string;
  /** -t: the listener is probed in this transport's own way (default rdma). */
  transport?: Transport;
  nqn?: string;
  hostnqn?: string;
  hostid?: string;
  /** Bound on each RDMA-CM wait of the probe. */
  timeoutMs: number;
}

/** The RDMA devices through libibverbs, or why not. */
export function readDevices(): Devices {
  try {
    return { devices: describeRdmaDevices() };
  } catch (err) {
    const e = err as Error & { hint?: string };
    return { error: e.message, hint: e.hint };
  }
}

/** Sends the CM probe; once more when it met silence (a lost CM packet is not a blocked port). */
async function probeTwice(traddr: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  const first = await probeNvmeRdma(traddr, port, { timeoutMs });
  if (!noCmReply(first)) return first;
  return { ...await probeNvmeRdma(traddr, port, { timeoutMs }), attempts: 2 };
}

/** Route, IP answer, GID, RoCE v2, listener, path MTU and loss towards -a. */
async function reachChecks(
  paths: DoctorPaths,
  devices: Devices,
  o: DoctorOptions & { traddr: string },
): Promise<Check[]> {
  const checks: Check[] = [];
  const route = await routeTo(o.traddr);
  checks.push(routeCheck(devices, o.traddr, route));
  const ip0 = await observeIp(o.traddr, route, o);
  let probe: ProbeOutcome | undefined;
  let probeError: string | undefined;
  try {
    probe = "devices" in devices
      ? await probeTwice(o.traddr, Number(o.trsvcid), o.timeoutMs)
      : undefined;
  } catch (err) {
    probeError = (err as Error).message;
  }
  const ip = withNeighbour(paths, ip0);
  checks.push(addressCheck(ip));
  const local = probe?.src?.addr ?? (route.type === "local" ? o.traddr : route.prefsrc);
  checks.push(gidCheck(
    devices,
    local,
    probe?.src ? "chosen by RDMA-CM address resolution" : "from the IP route",
  ));
  // No CM answer since this host's own rxe device went down and up: that, not the path, is why.
  const flap = probe?.src && noCmReply(probe)
    ? portFlap({ dev: probe.src.device, gid: { netdev: route.dev } }, paths)
    : undefined;
  // The host's stuck paths are read only when its device flapped and came back.
  const flapped = probe && flap?.upAt
    ? classifyHostFlapped(probe, flap, await stuckPaths(paths, o.traddr, o.trsvcid))
    : undefined;
  checks.push(
    flapped
      ? check(
        "reach.roce_v2",
        "skip",
        "no CM reply since this host's NIC went down: see reach.listener",
      )
      : roceV2Check(probe, ip),
  );
  checks.push(
    flapped ?? (probe ? listenerCheck(probe, ip) : check(
      "reach.listener",
      "skip",
      probeError
        ? `could not run the RDMA-CM probe: ${probeError}`
        : "no RDMA device here, so no RDMA-CM connect request could be sent",
    )),
  );
  checks.push(
    route.type === "local"
      ? check(
        "reach.path_mtu",
        "skip",
        `${o.traddr} is this host's own address: no path to measure`,
      )
      : pathMtuCheck(await observeMtu(paths, devices, ip, o), ip),
  );
  if (probe?.event === "ESTABLISHED" && probe.src) {
    checks.push(await lossAfterTransfer(paths, o, probe.src, route.dev));
  } else {
    checks.push(check("reach.loss", "skip", "no NVMe/RDMA target accepted a connect: no transfer"));
  }
  return checks;
}

/** This host's rdma paths to TRADDR:TRSVCID that are not live, with what it takes to make them again. */
async function stuckPaths(
  paths: DoctorPaths,
  traddr: string,
  trsvcid: string,
): Promise<StuckPath[]> {
  const ha = haProfile();
  const out: StuckPath[] = [];
  for (const c of await listControllers(paths)) {
    const a = c.address;
    if (c.transport !== "rdma" || c.state === "live" || c.cntrltype === "discovery") continue;
    if (a.traddr !== traddr || a.trsvcid !== trsvcid) continue;
    const t = await readTimeouts(controllerDir(paths, c.name));
    out.push({
      controller: c.name,
      nqn: c.subsysnqn,
      traddr,
      trsvcid,
      ...(a.host_traddr ? { hostTraddr: a.host_traddr } : {}),
      ha: t.reconnectDelay === ha.reconnectDelay && t.kato === ha.keepAliveTmo &&
        t.ctrlLossTmo === ha.ctrlLossTmo,
    });
  }
  return out;
}

/** Route, IP answer and the NVMe/TCP listener (TCP connect, ICReq/ICResp) towards -a. */
async function tcpReachChecks(
  paths: DoctorPaths,
  o: DoctorOptions & { traddr: string },
): Promise<Check[]> {
  const route = await routeTo(o.traddr);
  const ip0 = await observeIp(o.traddr, route, o);
  const probe = await probeNvmeTcp(o.traddr, Number(o.trsvcid), { timeoutMs: o.timeoutMs });
  const ip = withNeighbour(paths, ip0);
  return [tcpRouteCheck(o.traddr, route), addressCheck(ip, "tcp"), classifyTcpProbe(probe, ip)];
}

/** Reads the probe port's hw_counters around a short transfer. */
async function lossAfterTransfer(
  paths: DoctorPaths,
  o: DoctorOptions & { traddr: string },
  src: { device: string; port: number },
  netdev: string | undefined,
): Promise<Check> {
  const files = await readHostFiles(paths).catch(() => undefined);
  const hostid = o.hostid ?? files?.hostid ?? crypto.randomUUID();
  const hostnqn = o.hostnqn ?? files?.hostnqn ?? `nqn.2014-08.org.nvmexpress:uuid:${hostid}`;
  const before = readHwCounters(paths.sysfs, src.device, src.port);
  const t = await transferProbe(o.traddr, Number(o.trsvcid), {
    hostnqn,
    hostid,
    timeoutMs: o.timeoutMs,
    rounds: TRANSFER_ROUNDS,
  });
  const after = readHwCounters(paths.sysfs, src.device, src.port);
  return lossCheck(before, after, {
    dev: src.device,
    port: src.port,
    netdev,
    transfer: `${TRANSFER_ROUNDS} Identify Controller transfers (4 KiB each) from the discovery ` +
      "controller",
    transferError: t.error && `it stopped after ${t.done}: ${t.error}`,
  });
}

/** Runs every check that applies to `o`. */
export async function runDoctor(paths: DoctorPaths, o: DoctorOptions): Promise<DoctorReport> {
  const checks: Check[] = [];
  const { role, reason } = chooseRole(o.role, o.traddr, localAddresses());
  const initiator = role !== "target";
  const target = role !== "initiator";
  const transport = o.transport ?? "rdma";
  if (initiator) checks.push(...await hostChecks(paths, transport));

  const devices = readDevices();
  // The target side's checks all read one reading of the nvmet tree.
  const nvmet = target ? readNvmet(paths) : undefined;
  const dc = devicesCheck(devices);
  // RDMA devices matter over rdma: the host side's default, and the target side's when -t is
  // not given and its ports use rdma (or it has none yet).
  const tcpOnly = transport === "tcp" ||
    (!o.transport && !initiator && !targetTransports(nvmet).has("rdma"));
  checks.push(
    tcpOnly && dc.status !== "ok"
      ? check(
        dc.id,
        "skip",
        `${dc.seen} (${o.transport ? "-t tcp needs none" : "this target's ports are all tcp"})`,
      )
      : dc,
  );
  checks.push(...portStateChecks(devices));
  checks.push(...mtuChecks(devices));
  if ("devices" in devices) {
    const netdevs = new Set(
      devices.devices.flatMap((d) =>
        d.ports.filter((p) => p.link_layer === "Ethernet" && p.netdev).map((p) => p.netdev!)
      ),
    );
    for (const n of netdevs) checks.push(await pfcEcnCheck(paths, n));
  }

  let hostnqn = o.hostnqn;
  if (!hostnqn) hostnqn = (await readHostFiles(paths).catch(() => undefined))?.hostnqn;

  if (target) {
    checks.push(...targetChecks(paths, nvmet, devices, {
      trtype: o.transport,
      traddr: o.traddr,
      trsvcid: o.trsvcid,
      nqn: o.nqn,
      hostnqn,
    }, role === "target"));
    checks.push(...await listeningChecks(nvmet, devices, o.timeoutMs, paths));
  }

  if (!o.traddr) {
    checks.push(check(
      "reach",
      "skip",
      "no -a TARGET_ADDR given: the route, the GID and the listener were not tested",
      "nvmeof doctor -a TARGET_ADDR [-s 4420] [-n NQN]",
    ));
  } else if (initiator) {
    checks.push(
      ...transport === "tcp"
        ? await tcpReachChecks(paths, { ...o, traddr: o.traddr })
        : await reachChecks(paths, devices, { ...o, traddr: o.traddr }),
    );
    if (o.nqn) {
      try {
        const id = await resolveHostIdentity({ hostnqn: o.hostnqn, hostid: o.hostid }, paths);
        checks.push(
          await kernelConnectCheck(paths, {
            transport,
            traddr: o.traddr,
            trsvcid: o.trsvcid,
            nqn: o.nqn,
            hostnqn: id.hostnqn,
            hostid: id.hostid,
            nrIoQueues: 1,
            ctrlLossTmo: 0,
          }),
        );
      } catch (err) {
        const e = err as Error & { hint?: string };
        checks.push(check(
          "reach.kernel_connect",
          "skip",
          `no kernel connect tried: ${e.message}`,
          e.hint,
        ));
      }
    }
  }
  return {
    role,
    role_reason: reason,
    ...(o.traddr ? { traddr: o.traddr } : {}),
    trsvcid: o.trsvcid,
    ...(o.nqn ? { nqn: o.nqn } : {}),
    checks,
    summary: summarize(checks),
    verdict: verdictOf(checks),
  };
}
