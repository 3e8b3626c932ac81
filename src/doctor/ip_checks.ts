/**
 * Verdicts from what the target answers below NVMe: whether its address answers at all (ICMP
 * echo, ARP), whether RoCE v2 gets through when IP does, and whether the path carries this host's
 * MTU. Pure functions from observations to checks; ip_probe.ts makes the observations.
 */
import type { Transport } from "../fabrics/connect_options.ts";
import { isIpv4 } from "../net/address.ts";
import type { NeighbourView } from "../net/neighbour.ts";
import { payloadForIpSize } from "../net/icmp.ts";
import type { EchoOutcome } from "../net/icmp_echo.ts";
import { type Check, check } from "./check.ts";
import { roceMtuFor } from "./fabric.ts";
import type { ProbeOutcome } from "../nvme/admin_probe.ts";
import { classifyProbe } from "./reach.ts";
import {
  connectAgainCommand,
  type PortFlap,
  rxeRecreateCommand,
  type StuckPath,
} from "./nic_flap.ts";
import { hostPort } from "../net/address.ts";

/** What the IP probes saw of the target. */
export interface IpView {
  traddr: string;
  /** Why no echo could be sent (no socket). */
  socketError?: string;
  /** A small (ping-sized) echo. */
  echo?: EchoOutcome;
  /** The neighbour looked up: the target, or the gateway towards it. */
  neighbour?: NeighbourView;
  /** The route's error (`ip route get`), e.g. "Network is unreachable". */
  routeError?: string;
  /** The route's netdev and gateway. */
  dev?: string;
  gateway?: string;
}

/** RoCE v2's UDP destination port (IANA), where every RoCE v2 packet goes, the CM's included. */
export const ROCE_V2_UDP_PORT = 4791;

/** IB CM reject reason 8: no listener for the service ID (the port). */
const REJ_INVALID_SERVICE_ID = 8;

/** Whether the target answers IP at all, and how we know. */
export function ipUp(v: IpView): { up: boolean; how: string } {
  if (v.echo?.answered) return { up: true, how: `answers ICMP echo in ${v.echo.rttMs} ms` };
  if (v.neighbour?.state === "resolved" && !v.gateway) {
    return { up: true, how: `answers ARP (${v.neighbour.mac} on ${v.neighbour.device})` };
  }
  return { up: false, how: "answers neither ICMP echo nor ARP" };
}

/**
 * reach.address: the target's address answers (echo, else ARP), or why it does not. The fixes
 * name the netdev the `transport` uses: an RDMA netdev for rdma, any for tcp.
 */
export function addressCheck(v: IpView, transport: Transport = "rdma"): Check {
  const id = "reach.address";
  const a = v.traddr;
  const netdev = transport === "tcp" ? "fabric netdev" : "RDMA netdev";
  if (v.routeError) {
    return check(
      id,
      "fail",
      `target unreachable: no route to ${a} (${v.routeError})`,
      `add a route to the target's subnet through the ${netdev}: ip route add SUBNET dev IFACE ` +
        `(check with: ip route get ${a})`,
    );
  }
  if (v.echo?.answered) {
    const n = v.neighbour?.state === "resolved" ? `; neighbour ${v.neighbour.mac}` : "";
    return check(id, "ok", `${a} answers ICMP echo in ${v.echo.rttMs} ms${n}`);
  }
  if (v.socketError && !v.neighbour) {
    return check(id, "skip", `could not send ICMP echo: ${v.socketError}`, `ping -c 3 ${a}`);
  }
  const via = v.gateway ? `the gateway ${v.gateway} towards ${a}` : a;
  const onDev = v.dev ? ` on ${v.dev}` : "";
  if (v.neighbour?.state === "failed" || v.echo?.error === "EHOSTUNREACH") {
    return check(
      id,
      "fail",
      `target unreachable: ${via} did not answer ARP${onDev} (neighbour entry incomplete) and ` +
        `no ICMP echo came back: no machine on that link has this address up, or the link is down`,
      `on the target: ip -br addr | grep -w ${a} (the address must be on its ${netdev}, state UP); ` +
        `here: ip neigh show ${v.gateway ?? a}; check the cable, switch port and VLAN between`,
    );
  }
  if (v.neighbour?.state === "resolved") {
    return check(
      id,
      "warn",
      `${via} answers ARP (${v.neighbour.mac}${onDev}) but not ICMP echo: ICMP is filtered, so ` +
        "the path MTU cannot be measured",
      `let ICMP echo through on the target (nft list ruleset | grep icmp) to let doctor measure the path`,
    );
  }
  return check(
    id,
    "fail",
    `target unreachable: no ICMP echo reply from ${a}` +
      (v.echo?.error ? ` (${v.echo.error})` : "") + (v.gateway ? ` through ${v.gateway}` : ""),
    `check that ${a} is up on the target (ip -br addr) and the path to it: ping -c 3 ${a}; ip neigh show`,
  );
}

/** Whether the CM probe got no reply at all (no accept, no reject) at the connect step. */
export function noCmReply(o: ProbeOutcome): boolean {
  return o.stage === "connect" && (o.event === "TIMEOUT" || o.event === "UNREACHABLE");
}

/** reach.roce_v2: any CM answer proves RoCE v2 gets through; silence while IP answers says it is dropped. */
export function roceV2Check(o: ProbeOutcome | undefined, v: IpView): Check {
  const id = "reach.roce_v2";
  if (!o || (o.localError && o.event === "NONE")) {
    return check(id, "skip", "no RDMA-CM connect request was sent");
  }
  if (o.stage !== "connect") {
    return check(
      id,
      "skip",
      `the connect request was not sent (${o.event} at the ${o.stage} step)`,
    );
  }
  if (!noCmReply(o)) {
    return check(
      id,
      "ok",
      `the target's RDMA-CM answered (${o.event}): RoCE v2 (UDP ${ROCE_V2_UDP_PORT}) gets through`,
    );
  }
  const ip = ipUp(v);
  if (!ip.up) {
    return check(id, "skip", `no CM reply, but ${v.traddr} ${ip.how} either: see reach.address`);
  }
  return check(
    id,
    "fail",
    `RoCE v2 blocked: ${v.traddr} ${ip.how}, but RDMA-CM got no reply at all (no accept, no ` +
      `reject) to ${o.attempts ?? 1} connect request(s), ${o.timeoutMs ?? "?"} ms each: UDP port ` +
      `${ROCE_V2_UDP_PORT} (RoCE v2) is probably dropped by a firewall on the target or the path`,
    `on the target: nft list ruleset | grep ${ROCE_V2_UDP_PORT}; allow udp dport ` +
      `${ROCE_V2_UDP_PORT} (nft insert rule inet filter input udp dport ${ROCE_V2_UDP_PORT} accept, ` +
      `or iptables -I INPUT -p udp --dport ${ROCE_V2_UDP_PORT} -j ACCEPT), and in any firewall or ` +
      `switch ACL between. Opening TCP 4420 is not what RoCE v2 needs: 4420 is the RDMA-CM service ` +
      `id (and NVMe/TCP's port); every RoCE v2 packet, the CM's included, is UDP to ${ROCE_V2_UDP_PORT}. ` +
      "With no firewall, check that the target's RDMA-CM is loaded at all (lsmod | grep ib_cm): " +
      "a kernel without it ignores the request",
  );
}

/**
 * reach.listener with the IP view: reason 8 from a target that answers IP says "up, but nothing
 * listens"; silence is left to reach.address or reach.roce_v2, which name its cause.
 */
export function listenerCheck(o: ProbeOutcome, v: IpView): Check {
  const c = classifyProbe(o);
  const ip = ipUp(v);
  if (o.event === "REJECTED" && o.status === REJ_INVALID_SERVICE_ID && ip.up) {
    return { ...c, seen: `target up but nothing listening: ${v.traddr} ${ip.how}, but ${c.seen}` };
  }
  const silent = noCmReply(o) ||
    (!ip.up && ["TIMEOUT", "UNREACHABLE", "ADDR_ERROR", "ROUTE_ERROR"].includes(o.event));
  if (c.status === "fail" && silent) {
    return check(
      c.id,
      "skip",
      `no CM answer from ${v.traddr}: ` + (ip.up ? "see reach.roce_v2" : "see reach.address"),
    );
  }
  return c;
}

/**
 * reach.listener when the target's RDMA-CM gave no answer and THIS host's rxe device (the one the
 * probe left from) went down and came back in the kernel log: its own QP1 dropped the replies
 * (docs/nic_flap.md). STUCK: this host's paths to the probed address that are not live; each is
 * disconnected before the device is made anew (a delete while its reconnect is pending hangs in
 * the kernel until that attempt gives up) and connected again after. Undefined when the probe's
 * answer or the flap is not that.
 */
export function classifyHostFlapped(
  o: ProbeOutcome,
  f?: PortFlap,
  stuck: StuckPath[] = [],
): Check | undefined {
  if (!f?.upAt || !noCmReply(o) || !o.src || o.src.device !== f.flap.device) return undefined;
  const dev = f.flap.device;
  const remake = `make ${dev} anew: ${rxeRecreateCommand(dev, f.netdev)} (Soft-RoCE only; drops ` +
    `this host's connections on ${dev})`;
  const fix = stuck.length
    ? `${stuck.length > 1 ? "disconnect each path that is not live" : "disconnect the path"}: ` +
      stuck.map((p) => `nvmeof disconnect -d ${p.controller}`).join(" && ") +
      ` (it returns once the connect attempt pending through ${dev} gives up: up to about 100 s ` +
      `on Linux 6.1; made anew before that, the device's delete hangs in the kernel until then); ` +
      `then ${remake}; then connect ${stuck.length > 1 ? "them" : "it"} again: ` +
      stuck.map(connectAgainCommand).join(" && ") +
      " (or nvmeof connect --saved, for saved connections)"
    : `${remake}; then nvmeof connect --saved. If a path's reconnect through ${dev} is pending, ` +
      "disconnect it first: the delete hangs until that attempt gives up (docs/nic_flap.md)";
  return check(
    "reach.listener",
    "fail",
    `this host's NIC ${f.netdev} (${dev}) went down at ${f.downAt.toISOString()} and came back at ` +
      `${f.upAt.toISOString()}; its RDMA-CM has not answered since: no reply from ` +
      `${hostPort(o.traddr, o.trsvcid)} to ${o.attempts ?? 1} connect request(s): a send on ` +
      "Soft-RoCE's management queue pair (QP1) while the link was down (a disconnect) left its " +
      "receive side in error, so it drops every CM reply",
    fix,
  );
}

/** This host's side of the path, and the DF echoes sent along it. */
export interface MtuView {
  netdev: string;
  netdevMtu: number;
  /** The local RDMA port's active MTU on that netdev, when one is there. */
  roceMtu?: number;
  /** DF echoes at the netdev MTU and at smaller sizes. */
  probes: EchoOutcome[];
}

/** The classic Ethernet MTU: the size the probe falls back to. */
export const ETHERNET_MTU = 1500;
/** The smallest netdev MTU that gives RoCE MTU 1024 (1024 + 96 bytes of RoCE v2 headers). */
export const ROCE_1024_NETDEV_MTU = 1120;

/** The sizes to probe under a netdev MTU, largest first. */
export function mtuProbeSizes(netdevMtu: number): number[] {
  return [netdevMtu, ETHERNET_MTU, ROCE_1024_NETDEV_MTU].filter((s, i, all) =>
    s <= netdevMtu && all.indexOf(s) === i
  );
}

/** reach.path_mtu: whether the path (and the target's side) carries this host's MTU. */
export function pathMtuCheck(m: MtuView | undefined, v: IpView): Check {
  const id = "reach.path_mtu";
  if (!m) {
    return check(id, "skip", "could not determine the netdev (and its MTU) the route uses");
  }
  const here = `${m.netdev} MTU ${m.netdevMtu}` +
    (m.roceMtu ? `, RoCE active MTU ${m.roceMtu}` : "");
  if (!v.echo?.answered) {
    return check(
      id,
      "skip",
      `${here}; no ICMP echo reply from ${v.traddr}: the path MTU cannot be measured`,
      `ping -M do -s ${payloadForIpSize(m.netdevMtu, isIpv4(v.traddr) ? 4 : 6)} -c 3 ${v.traddr}`,
    );
  }
  const full = m.probes.find((p) => p.ipSize === m.netdevMtu);
  const whole = m.probes.filter((p) => p.answered && !p.fragments).map((p) => p.ipSize);
  const carried = whole.length ? Math.max(...whole) : undefined;
  if (!full || (full.answered && !full.fragments)) {
    return check(
      id,
      "ok",
      `the path carries ${m.netdevMtu}-byte packets both ways: a DF echo of that size came back ` +
        `whole (${here})` + (m.netdevMtu <= ETHERNET_MTU
          ? "; a larger MTU on the target is harmless (the connect takes this host's RoCE MTU)"
          : ""),
    );
  }
  let seen: string;
  if (full.answered) {
    seen = `the target answered a ${full.ipSize}-byte DF echo in ${full.fragments} fragments: ` +
      `its side sends smaller packets than this host's ${here}`;
  } else if (full.error === "EMSGSIZE") {
    seen = `this host cannot send ${full.ipSize} bytes with DF to ${v.traddr} (EMSGSIZE): the ` +
      `route's MTU is below ${here} (a route mtu, or a router reported a smaller path MTU)`;
  } else {
    seen =
      `a ${full.ipSize}-byte DF echo got no answer while smaller ones did: the target side or ` +
      `the path carries less than this host's ${here}`;
  }
  const theirs = carried ?? ROCE_1024_NETDEV_MTU;
  const mine = m.roceMtu ?? roceMtuFor(m.netdevMtu).current;
  const target = roceMtuFor(theirs).current;
  seen += `; the largest DF echo that came back whole was ${carried ?? "none"} bytes. RoCE path ` +
    `MTU: this host's side ${mine}, the target's side at most ${target}` +
    (mine > target
      ? `: a connection from here asks for ${mine}, and the target's ${mine}-byte RoCE packets ` +
        "do not fit its link, so the connect can work while reads and Identify stall"
      : "");
  return check(
    id,
    "fail",
    `MTU mismatch: ${seen}`,
    `set ${m.netdev}'s MTU to ${theirs} on this host (ip link set ${m.netdev} mtu ${theirs}), or ` +
      `the target's RDMA netdev (and every switch port between; on a Linux bridge, the bridge and ` +
      `all its ports) to ${m.netdevMtu}`,
  );
}
