/**
 * A Soft-RoCE (rxe) device whose netdev was set down and up: what the kernel log says about it.
 *
 * On Linux 6.1's rxe a send on the management queue pair (QP1, the one RDMA-CM's requests and
 * replies travel on) while the netdev is down finds no route (rxe_req.c finish_packet → rxe_prepare
 * → rxe_find_route, logged only at debug level: "qp#1 Error during finish packet"), and QP1 goes to
 * the error state (rxe_comp.c → rxe_qp_error, which also sets the responder's state to error). ib_mad then moves it
 * from SQE back to RTS (mad.c ib_mad_send_error), which in rxe re-arms the send side only
 * (rxe_qp.c rxe_qp_from_attr): the responder stays in error and its receive buffers were flushed,
 * so from then on every CM request to the device is dropped (rxe_recv.c check_type_state). The
 * device's listeners look fine (LISTEN, ARP answers) yet answer no one, until the device is
 * made anew. docs/nic_flap.md has the evidence.
 */
import { kernelLog, type KmsgRecord } from "../fabrics/kmsg.ts";
import { readText } from "../host/kfs.ts";

/** The kernel log lines the verdict reads: rxe's port events (rxe_net.c rxe_port_down/up). */
export const RXE_FLAP_RECORDS = /^infiniband \S+: set (down|active)$/;

/** The last down and up of one rxe device's netdev, from the kernel log. */
export interface NicFlap {
  /** The RDMA device (rxe0). */
  device: string;
  /** Kernel log time (µs since boot) of its last "set down". */
  downUsec: number;
  /** Of the "set active" that followed, when it came back. */
  upUsec?: number;
}

/** DEVICE's last down (and up) in `records` (RXE_FLAP_RECORDS' matches, oldest first). */
export function lastFlap(records: KmsgRecord[], device: string): NicFlap | undefined {
  const down = `infiniband ${device}: set down`;
  const up = `infiniband ${device}: set active`;
  let flap: NicFlap | undefined;
  for (const r of records) {
    if (r.message === down) flap = { device, downUsec: r.usec };
    else if (r.message === up && flap && flap.upUsec === undefined) flap.upUsec = r.usec;
  }
  return flap;
}

/** Wall-clock time of a kernel log time, given the uptime (s) and the wall clock (ms) now. */
export function wallClockOf(usec: number, uptimeS: number, nowMs: number): Date {
  return new Date(Math.round(nowMs - (uptimeS * 1e6 - usec) / 1000));
}

/** The exact step that makes DEVICE on NETDEV anew (rdma_rxe; iproute2's rdma). */
export function rxeRecreateCommand(device: string, netdev: string): string {
  return `rdma link delete ${device} && rdma link add ${device} type rxe netdev ${netdev}`;
}

/** A word as a shell reads it: as it is when it holds nothing special, else single-quoted. */
function shellWord(s: string): string {
  return /^[\w.:@%+,/=-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** A path of this host that is not live and goes through a flapped device. */
export interface StuckPath {
  /** Its controller (nvme0). */
  controller: string;
  nqn: string;
  traddr: string;
  trsvcid: string;
  /** host_traddr, when it was connected with one (-w). */
  hostTraddr?: string;
  /** Its reconnect delay, keep-alive and loss timeout are the HA profile's. */
  ha: boolean;
}

/** The `nvmeof connect` that makes PATH again as it was made (its address, -w, the HA profile). */
export function connectAgainCommand(p: StuckPath): string {
  return [
    "nvmeof connect -t rdma",
    `-a ${shellWord(p.traddr)} -s ${shellWord(p.trsvcid)} -n ${shellWord(p.nqn)}`,
    ...(p.hostTraddr ? [`-w ${shellWord(p.hostTraddr)}`] : []),
    ...(p.ha ? ["--ha"] : []),
  ].join(" ");
}

/** The flap of an rxe device's netdev, as the doctor dates it. */
export interface PortFlap {
  flap: NicFlap;
  /** The netdev under the device (fab0). */
  netdev: string;
  downAt: Date;
  upAt?: Date;
}

/** The flap of the rxe device behind `gid` in the kernel log under `dev` (undefined: none, or unreadable). */
export function portFlap(
  gid: { dev: string; gid: { netdev?: string | null } },
  paths: { dev: string; proc: string },
  nowMs = Date.now(),
): PortFlap | undefined {
  const flap = lastFlap(kernelLog(`${paths.dev}/kmsg`, RXE_FLAP_RECORDS), gid.dev);
  let uptime = NaN;
  try {
    uptime = Number(readText(`${paths.proc}/uptime`).split(" ")[0]);
  } catch { /* no uptime: no date, no verdict */ }
  if (!flap || !Number.isFinite(uptime) || uptime <= 0) return undefined;
  return {
    flap,
    netdev: gid.gid.netdev ?? "its netdev",
    downAt: wallClockOf(flap.downUsec, uptime, nowMs),
    ...(flap.upUsec !== undefined ? { upAt: wallClockOf(flap.upUsec, uptime, nowMs) } : {}),
  };
}
