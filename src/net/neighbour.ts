/**
 * The host's IPv4 neighbour (ARP) table, `<proc>/net/arp`: whether a target address answered ARP.
 * In the lab fabric every failed reconnect of a cut rdma path was address resolution timing out
 * (nvme-rdma gives it 3 s), so an unanswered entry names the link as the cause (README "High
 * availability"). `nvmeof doctor` and `nvmeof list --paths` read it for a path that is not live.
 */
import { readText } from "../host/kfs.ts";
import { isIpv4 } from "./address.ts";

/** ATF_COM in /proc/net/arp's Flags: the entry is complete (include/uapi/linux/if_arp.h). */
const ATF_COM = 0x02;

/** A neighbour entry of the host. */
export interface NeighbourView {
  /** resolved: a link-layer address is known; failed: asked and got no answer. */
  state: "resolved" | "failed";
  address: string;
  mac?: string;
  /** The netdev the entry is on. */
  device?: string;
}

/** The entry for `addr` in /proc/net/arp's text, if there is one. */
export function parseArp(text: string, addr: string): NeighbourView | undefined {
  for (const line of text.split("\n").slice(1)) {
    const [ip, , flags, mac, , device] = line.trim().split(/\s+/);
    if (ip !== addr) continue;
    const complete = (parseInt(flags, 16) & ATF_COM) !== 0;
    return complete
      ? { state: "resolved", address: ip, mac, device }
      : { state: "failed", address: ip, device };
  }
  return undefined;
}

/** The IPv4 neighbour entry for `addr` under the procfs root `proc`; IPv6 is not read. */
export function readNeighbour(proc: string, addr: string): NeighbourView | undefined {
  return neighbourLookup(proc)(addr);
}

/**
 * A lookup of IPv4 neighbour entries that reads `<proc>/net/arp` once, at its first IPv4
 * address, for a pass over many paths; IPv6 is not read.
 */
export function neighbourLookup(proc: string): (addr: string) => NeighbourView | undefined {
  let table: string | null | undefined;
  return (addr) => {
    if (!isIpv4(addr)) return undefined;
    if (table === undefined) {
      try {
        table = readText(`${proc}/net/arp`, 1 << 20);
      } catch {
        table = null;
      }
    }
    return table === null ? undefined : parseArp(table, addr);
  };
}

/** "ARP for 10.0.0.2 answered (52:54:… on fab0)" or "ARP for 10.0.0.2 unanswered on fab0". */
export function arpWords(n: NeighbourView): string {
  const on = n.device ? ` on ${n.device}` : "";
  return n.state === "resolved"
    ? `ARP for ${n.address} answered (${n.mac}${on})`
    : `ARP for ${n.address} unanswered${on}`;
}
