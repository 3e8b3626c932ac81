/**
 * The observations behind ip_checks.ts: a ping-sized ICMP echo to the target, the neighbour
 * (ARP) table entry for it afterwards, and DF echoes at this host's MTU and below, with the
 * kernel's IP reassembly counter read around each to see a reply that came back in fragments.
 */
import { readText } from "../host/kfs.ts";
import { isIpv4 } from "../net/address.ts";
import { canonicalIp } from "../net/address.ts";
import { DEFAULT_PAYLOAD_SIZE, ICMP_HEADER_SIZE, IPV4_HEADER_SIZE } from "../net/icmp.ts";
import { echo, EchoSocket } from "../net/icmp_echo.ts";
import type { Devices, RouteView } from "./fabric.ts";
import { readNeighbour } from "../net/neighbour.ts";
import { type IpView, mtuProbeSizes, type MtuView } from "./ip_checks.ts";
import type { DoctorPaths } from "./kernel_paths.ts";

/** Bound on one echo wait, whatever --timeout says. */
const ECHO_WAIT_MS = 1000;
const SMALL_TRIES = 3;
const LARGE_TRIES = 2;
/** The size of a default `ping`. */
const SMALL_IP_SIZE = IPV4_HEADER_SIZE + ICMP_HEADER_SIZE + DEFAULT_PAYLOAD_SIZE;
/** A counter of `/proc/net/snmp` ("Ip: … ReasmReqds …" header and value lines), or of snmp6. */
export function snmpCounter(text: string, group: string, field: string): number | undefined {
  const lines = text.split("\n");
  for (let i = 0; i + 1 < lines.length; i++) {
    const head = lines[i].split(/\s+/);
    const vals = lines[i + 1].split(/\s+/);
    if (head[0] !== `${group}:` || vals[0] !== `${group}:`) continue;
    const k = head.indexOf(field);
    return k > 0 && vals[k] !== undefined ? Number(vals[k]) : undefined;
  }
  const m = new RegExp(`^${group}${field}\\s+(\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Fragments the kernel has received for reassembly (IPv4 Ip ReasmReqds, IPv6 Ip6ReasmReqds). */
function reassembled(paths: DoctorPaths, v4: boolean): () => number | undefined {
  return () => {
    try {
      return v4
        ? snmpCounter(readText(`${paths.proc}/net/snmp`, 1 << 16), "Ip", "ReasmReqds")
        : snmpCounter(readText(`${paths.proc}/net/snmp6`, 1 << 16), "Ip6", "ReasmReqds");
    } catch {
      return undefined;
    }
  };
}

/** A ping-sized echo to the target; the route's error, netdev and gateway. */
export async function observeIp(
  traddr: string,
  route: RouteView,
  o: { timeoutMs: number },
): Promise<IpView> {
  const v: IpView = { traddr };
  if (route.error && /unreachable/i.test(route.error)) v.routeError = route.error;
  if (route.dev) v.dev = route.dev;
  if (route.gateway) v.gateway = route.gateway;
  try {
    using s = EchoSocket.open(traddr);
    v.echo = await echo(s, SMALL_IP_SIZE, {
      tries: SMALL_TRIES,
      timeoutMs: Math.min(o.timeoutMs, ECHO_WAIT_MS),
    });
  } catch (err) {
    v.socketError = (err as Error).message;
  }
  return v;
}

/** Adds the neighbour entry (read after every probe that could have resolved it). */
export function withNeighbour(paths: DoctorPaths, v: IpView): IpView {
  const n = readNeighbour(paths.proc, canonicalIp(v.gateway ?? v.traddr) ?? v.traddr);
  return n ? { ...v, neighbour: n } : v;
}

/** DF echoes at the route netdev's MTU and below (only when a small echo was answered). */
export async function observeMtu(
  paths: DoctorPaths,
  devices: Devices,
  v: IpView,
  o: { timeoutMs: number },
): Promise<MtuView | undefined> {
  if (!v.dev) return undefined;
  let netdevMtu: number;
  try {
    netdevMtu = Number(readText(`${paths.sysfs}/class/net/${v.dev}/mtu`, 64).trim());
  } catch {
    return undefined;
  }
  if (!(netdevMtu > 0)) return undefined;
  const port = "devices" in devices
    ? devices.devices.flatMap((d) => d.ports).find((p) => p.netdev === v.dev)
    : undefined;
  const m: MtuView = { netdev: v.dev, netdevMtu, probes: [] };
  if (port) m.roceMtu = port.active_mtu;
  if (!v.echo?.answered) return m;
  try {
    using s = EchoSocket.open(v.traddr);
    for (const size of mtuProbeSizes(netdevMtu)) {
      m.probes.push(
        await echo(s, size, {
          tries: LARGE_TRIES,
          timeoutMs: Math.min(o.timeoutMs, ECHO_WAIT_MS),
          reassembled: reassembled(paths, isIpv4(v.traddr)),
        }),
      );
    }
  } catch { /* the small echo's socket opened; a failure here leaves the probes empty */ }
  return m;
}
