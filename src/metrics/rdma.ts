/**
 * The `rdma` collector: every RDMA port below `/sys/class/infiniband`, from sysfs alone (no
 * library is loaded): its state, physical state, rate, link layer and netdev, and its counters,
 * `hw_counters/*` and `counters/*`, each by its own file name.
 */
import { exists, listDir, readText } from "../host/kfs.ts";
import { rdmaPortDir, readHwCounters, readPortCounters } from "../rdma/port_counters.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";

/** Port states (ib_port_state, as sysfs `state` names them after the number). */
export const RDMA_PORT_STATES = ["DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"] as const;
/** Physical states (sysfs `phys_state`, after the number). */
export const RDMA_PHYS_STATES = [
  "Sleep",
  "Polling",
  "Disabled",
  "PortConfigurationTraining",
  "LinkUp",
  "LinkErrorRecovery",
  "Phy Test",
] as const;

/** A hw_counters file that is no counter: the refresh interval of the others (ms). */
const NOT_A_COUNTER = "lifespan";
/** Bits per byte, for the rate (sysfs gives Gb/s). */
const BITS_PER_BYTE = 8;
const GIGA = 1e9;
/**
 * What a RoCE packet carries besides its payload, as the kernel's iboe_get_mtu subtracts it from
 * the netdev's MTU: GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4.
 */
const ROCE_HEADER_BYTES = 40 + 8 + 12 + 4 + 28 + 4;
/** The InfiniBand MTUs (enum ib_mtu), largest first. */
const IB_MTUS = [4096, 2048, 1024, 512, 256] as const;

function read(path: string): string | undefined {
  try {
    return readText(path).trim();
  } catch {
    return undefined;
  }
}

/** The name in a `N: NAME` attribute (`4: ACTIVE` → `ACTIVE`). */
export function stateName(text: string): string {
  const colon = text.indexOf(":");
  return (colon >= 0 ? text.slice(colon + 1) : text).trim();
}

/** `rate` (`100 Gb/sec (4X EDR)`, `2.5 Gb/sec (1X SDR)`) in bytes per second; undefined if not. */
export function rateBytesPerSecond(text: string): number | undefined {
  const m = /^([\d.]+)\s*Gb\/sec/.exec(text.trim());
  return m ? Number(m[1]) * GIGA / BITS_PER_BYTE : undefined;
}

/** The active MTU of a RoCE port over a netdev of MTU `netdevMtu` (the kernel's iboe_get_mtu). */
export function roceActiveMtu(netdevMtu: number): number | undefined {
  return IB_MTUS.find((m) => m <= netdevMtu - ROCE_HEADER_BYTES);
}

/** The first netdev a port's GIDs name (`gid_attrs/ndevs/*`), or undefined. */
function portNetdev(dir: string): string | undefined {
  const ndevs = `${dir}/gid_attrs/ndevs`;
  // GID 0 is a RoCE port's default GID, always there: no listing of the whole table (1024 entries
  // on rxe) at every collection.
  const first = read(`${ndevs}/0`);
  if (first) return first;
  const names = listDir(ndevs).sort((a, b) => Number(a) - Number(b));
  for (const n of names) {
    const v = read(`${ndevs}/${n}`);
    if (v) return v;
  }
  return undefined;
}

/** Collects the RDMA families below the sysfs root. */
export function collectRdma(sysfs: string): Promise<MetricFamily[]> {
  const set = new FamilySet();
  const info = set.family(
    "nvmeof_rdma_port_info",
    "gauge",
    "An RDMA port: 1 (/sys/class/infiniband/<device>/ports/<port>; netdev from gid_attrs/ndevs).",
  );
  const state = set.family(
    "nvmeof_rdma_port_state",
    "gauge",
    "The port's state, one-hot (ports/<port>/state).",
  );
  const phys = set.family(
    "nvmeof_rdma_port_phys_state",
    "gauge",
    "The port's physical state, one-hot (ports/<port>/phys_state).",
  );
  const mtu = set.family(
    "nvmeof_rdma_port_active_mtu_bytes",
    "gauge",
    "The active MTU of a RoCE port. sysfs does not show the verbs' active_mtu: this is derived " +
      "from the netdev's MTU (/sys/class/net/<netdev>/mtu) as the kernel's iboe_get_mtu does.",
  );
  const rate = set.family(
    "nvmeof_rdma_port_rate_bytes_per_second",
    "gauge",
    "The port's rate (ports/<port>/rate, Gb/sec, in bytes per second).",
  );
  const hw = set.family(
    "nvmeof_rdma_hw_stats_total",
    "counter",
    "The driver's counters, by file name (ports/<port>/hw_counters/<counter>; not lifespan).",
  );
  const ib = set.family(
    "nvmeof_rdma_port_stats_total",
    "counter",
    "The InfiniBand port counters, by file name (ports/<port>/counters/<counter>).",
  );
  const root = `${sysfs}/class/infiniband`;
  for (const device of listDir(root).sort()) {
    const portsDir = `${root}/${device}/ports`;
    for (const p of listDir(portsDir).filter((n) => /^\d+$/.test(n)).sort((a, b) => +a - +b)) {
      const portNo = Number(p);
      const dir = rdmaPortDir(sysfs, device, portNo);
      if (!exists(dir)) continue;
      const port = p;
      const netdev = portNetdev(dir);
      const linkLayer = read(`${dir}/link_layer`) ?? "";
      info({ device, port, link_layer: linkLayer, netdev: netdev ?? "" }, 1);
      const s = read(`${dir}/state`);
      if (s !== undefined) set.oneHot(state, { device, port }, RDMA_PORT_STATES, stateName(s));
      const ps = read(`${dir}/phys_state`);
      if (ps !== undefined) set.oneHot(phys, { device, port }, RDMA_PHYS_STATES, stateName(ps));
      const r = rateBytesPerSecond(read(`${dir}/rate`) ?? "");
      if (r !== undefined) rate({ device, port }, r);
      if (linkLayer === "Ethernet" && netdev) {
        const m = roceActiveMtu(Number(read(`${sysfs}/class/net/${netdev}/mtu`) ?? "NaN"));
        if (m !== undefined) mtu({ device, port }, m);
      }
      const hwc = readHwCounters(sysfs, device, portNo) ?? {};
      for (const counter of Object.keys(hwc).sort()) {
        if (counter !== NOT_A_COUNTER) hw({ device, port, counter }, hwc[counter]);
      }
      const ibc = readPortCounters(sysfs, device, portNo) ?? {};
      for (const counter of Object.keys(ibc).sort()) ib({ device, port, counter }, ibc[counter]);
    }
  }
  return Promise.resolve(set.families());
}
