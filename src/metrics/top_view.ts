/**
 * What `nvmeof top` shows, as data: built from two collections of the exported families (the
 * previous and the current, see docs/metrics.md) and the time between them, so that top shows
 * exactly what the exporter exports. Pure functions: no I/O, no clock.
 *
 * Rates are counter increases over the interval. A counter lower than before was reset (a device
 * removed and made again): its increase is its current value, as Prometheus' rate() counts it, and
 * never negative. A sample with no previous value has no rate yet (null).
 */
import { hostPort } from "../net/address.ts";
import { byNumbers } from "../order.ts";
import type { MetricFamily, Sample } from "./family.ts";

/** I/O of one block device over the interval (from the nvmeof_block_* families). */
export interface IoRow {
  device: string;
  /** `head`, `path`, `namespace` or `target` (docs/metrics.md). */
  role: string;
  subsystem_nqn: string;
  nsid: string;
  /** The path's controller (role `path` only). */
  controller?: string;
  read_iops: number | null;
  write_iops: number | null;
  read_bytes_per_second: number | null;
  write_bytes_per_second: number | null;
  /** Average time of the interval's I/Os (Δseconds / Δios), null when none completed. */
  latency_seconds: number | null;
  in_flight: number | null;
}

/** One path (fabrics controller) of a subsystem. */
export interface PathRow {
  controller: string;
  transport: string;
  traddr: string;
  trsvcid: string;
  /** traddr:trsvcid, an IPv6 address in brackets. */
  address: string;
  host_traddr: string;
  /** The controller's state (`live`, `connecting`…), `unknown` when not exported. */
  state: string;
  /** The ANA state of each namespace through this path. */
  ana: Array<{ nsid: string; state: string }>;
  /** The path's own block devices (nvmeXcYnZ). */
  devices: IoRow[];
}

/** One NVMe subsystem the host reaches over fabrics. */
export interface SubsystemRow {
  subsystem_nqn: string;
  /** nvme-subsysN, "" when not exported. */
  subsystem: string;
  iopolicy: string;
  paths_live: number;
  paths_total: number;
  /** Namespace heads (multipath) or plain namespaces. */
  namespaces: IoRow[];
  paths: PathRow[];
}

/** An RDMA hardware counter that moved during the interval. */
export interface RdmaCounterRow {
  device: string;
  port: string;
  counter: string;
  increase: number;
  per_second: number | null;
}

/** A host connected to a target port. */
export interface PeerRow {
  remote_address: string;
  connections: number;
}

/** One nvmet port of the storage server. */
export interface TargetPortRow {
  port: string;
  trtype: string;
  adrfam: string;
  traddr: string;
  trsvcid: string;
  address: string;
  /** Whether the kernel listens there, null when not exported. */
  listening: boolean | null;
  connections: number | null;
  subsystems: number | null;
  hosts: PeerRow[];
}

/** One nvmet namespace and the I/O of its backing device. */
export interface TargetNamespaceRow extends IoRow {
  enabled: boolean | null;
}

/** The whole view at one refresh. */
export interface TopView {
  /** When the current collection was made (ISO 8601). */
  time: string;
  host: string;
  /** Seconds between the two collections, null for the first (no rates yet). */
  interval_seconds: number | null;
  subsystems: SubsystemRow[];
  rdma_errors: RdmaCounterRow[];
  target: { ports: TargetPortRow[]; namespaces: TargetNamespaceRow[] };
  /** Collectors whose nvmeof_scrape_collector_success is 0. */
  failed_collectors: string[];
}

/** What `topView` needs besides the two collections. */
export interface TopViewOptions {
  /** Seconds between the previous collection and the current. */
  seconds: number;
  host: string;
  time: Date;
}

/**
 * RDMA hardware counters that count traffic, not trouble: they move with every I/O, so the view
 * of counters that moved leaves them out (docs/metrics.md "Live view").
 */
const RDMA_TRAFFIC_COUNTERS: ReadonlySet<string> = new Set([
  "sent_pkts",
  "rcvd_pkts",
  "rdma_sends",
  "rdma_recvs",
  "rx_write_requests",
  "rx_read_requests",
  "rx_atomic_requests",
]);

/** The block families' short names and the full names they stand for. */
const BLOCK = {
  readIos: "nvmeof_block_read_ios_total",
  readBytes: "nvmeof_block_read_bytes_total",
  readSeconds: "nvmeof_block_read_seconds_total",
  writeIos: "nvmeof_block_write_ios_total",
  writeBytes: "nvmeof_block_write_bytes_total",
  writeSeconds: "nvmeof_block_write_seconds_total",
  inFlight: "nvmeof_block_in_flight",
} as const;

/** Milliseconds in a second: the view's interval is rounded to them. */
const MS = 1000;

/** Values of the one-hot state gauges and the `_up`/`_listening` gauges that mean "yes". */
const ON = 1;

/** One collection, indexed by family name, and each family's samples by their labels on first use. */
class Families {
  #byName = new Map<string, Sample[]>();
  #byLabels = new Map<string, Map<string, number>>();

  constructor(families: readonly MetricFamily[]) {
    for (const f of families) {
      const list = this.#byName.get(f.name);
      if (list) list.push(...f.samples);
      else this.#byName.set(f.name, [...f.samples]);
    }
  }

  samples(name: string): Sample[] {
    return this.#byName.get(name) ?? [];
  }

  /**
   * The value of NAME's sample whose labels are LABELS (the same names and values), or
   * undefined: one lookup, since a view asks this for every device of hundreds of paths.
   */
  value(name: string, labels: Readonly<Record<string, string>>): number | undefined {
    let index = this.#byLabels.get(name);
    if (!index) {
      index = new Map();
      for (const s of this.samples(name)) {
        const key = labelKey(s.labels);
        if (!index.has(key)) index.set(key, s.value);
      }
      this.#byLabels.set(name, index);
    }
    return index.get(labelKey(labels));
  }
}

/** Each label set's key, made once: a collector passes one set to all of a device's families. */
const labelKeys = new WeakMap<Readonly<Record<string, string>>, string>();

/** A key equal for two label sets exactly when they have the same names and values. */
function labelKey(labels: Readonly<Record<string, string>>): string {
  let key = labelKeys.get(labels);
  if (key === undefined) {
    key = JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
    labelKeys.set(labels, key);
  }
  return key;
}

/** Whether every label of WANT is on S with the same value. */
function has(s: Sample, want: Readonly<Record<string, string>>): boolean {
  return Object.entries(want).every(([k, v]) => s.labels[k] === v);
}

/** A counter's increase: null without a previous value; a reset counts from zero. */
function counterIncrease(previous: number | undefined, current: number): number | null {
  if (previous === undefined) return null;
  return current < previous ? current : current - previous;
}

/**
 * The view from the PREVIOUS collection (undefined for the first) and the CURRENT, made
 * `o.seconds` apart.
 */
export function topView(
  previous: readonly MetricFamily[] | undefined,
  current: readonly MetricFamily[],
  o: TopViewOptions,
): TopView {
  const cur = new Families(current);
  const prev = previous ? new Families(previous) : undefined;
  const seconds = prev && o.seconds > 0 ? o.seconds : null;
  const io = ioRows(prev, cur, seconds);
  return {
    time: o.time.toISOString(),
    host: o.host,
    interval_seconds: seconds === null ? null : Math.round(seconds * MS) / MS,
    subsystems: subsystemRows(cur, io),
    rdma_errors: rdmaErrorRows(prev, cur, seconds),
    target: {
      ports: targetPortRows(cur),
      namespaces: io.filter((r) => r.role === "target").map((r) => ({
        ...r,
        enabled: flag(cur.value("nvmeof_target_namespace_enabled", {
          subsystem_nqn: r.subsystem_nqn,
          nsid: r.nsid,
          device: r.device,
        })),
      })).sort((a, b) => byNumbers(a.subsystem_nqn, b.subsystem_nqn) || byNumbers(a.nsid, b.nsid)),
    },
    failed_collectors: cur.samples("nvmeof_scrape_collector_success")
      .filter((s) => s.value !== ON).map((s) => s.labels.collector ?? "").sort(),
  };
}

function flag(v: number | undefined): boolean | null {
  return v === undefined ? null : v === ON;
}

/** Every block device of the current collection with its rates. */
function ioRows(prev: Families | undefined, cur: Families, seconds: number | null): IoRow[] {
  const devices = new Map<string, Readonly<Record<string, string>>>();
  for (const name of [BLOCK.readIos, BLOCK.writeIos]) {
    for (const s of cur.samples(name)) devices.set(JSON.stringify(s.labels), s.labels);
  }
  const rows: IoRow[] = [];
  for (const labels of devices.values()) {
    const inc = (name: string) => {
      const c = cur.value(name, labels);
      return c === undefined ? null : counterIncrease(prev?.value(name, labels), c);
    };
    const rate = (name: string) => {
      const d = inc(name);
      return d === null || seconds === null ? null : d / seconds;
    };
    const ios = [inc(BLOCK.readIos), inc(BLOCK.writeIos)];
    const secs = [inc(BLOCK.readSeconds), inc(BLOCK.writeSeconds)];
    const nIos = ios.reduce<number>((a, b) => a + (b ?? 0), 0);
    const known = seconds !== null && ios.some((x) => x !== null);
    rows.push({
      device: labels.device ?? "",
      role: labels.role ?? "",
      subsystem_nqn: labels.subsystem_nqn ?? "",
      nsid: labels.nsid ?? "",
      ...(labels.controller !== undefined ? { controller: labels.controller } : {}),
      read_iops: rate(BLOCK.readIos),
      write_iops: rate(BLOCK.writeIos),
      read_bytes_per_second: rate(BLOCK.readBytes),
      write_bytes_per_second: rate(BLOCK.writeBytes),
      latency_seconds: known && nIos > 0
        ? secs.reduce<number>((a, b) => a + (b ?? 0), 0) / nIos
        : null,
      in_flight: cur.value(BLOCK.inFlight, labels) ?? null,
    });
  }
  return rows.sort((a, b) => byNumbers(a.device, b.device));
}

/** The one-hot STATE family's state per key label, e.g. controller → "live". */
function oneHot(cur: Families, name: string, keys: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of cur.samples(name)) {
    if (s.value === ON) out.set(keys.map((k) => s.labels[k] ?? "").join("\0"), s.labels.state);
  }
  return out;
}

function subsystemRows(cur: Families, io: IoRow[]): SubsystemRow[] {
  const states = oneHot(cur, "nvmeof_path_state", ["controller"]);
  const ups = new Map(
    cur.samples("nvmeof_path_up").map((s) => [s.labels.controller, s.value === ON]),
  );
  const ana = new Map<string, Array<{ nsid: string; state: string }>>();
  for (const s of cur.samples("nvmeof_path_ana_state")) {
    if (s.value !== ON) continue;
    const list = ana.get(s.labels.controller) ?? [];
    list.push({ nsid: s.labels.nsid, state: s.labels.state });
    ana.set(s.labels.controller, list);
  }
  const devicesOf = Map.groupBy(io.filter((r) => r.role === "path"), (r) => r.controller);
  const paths: PathRow[] = cur.samples("nvmeof_path_info").map(({ labels: l }) => ({
    controller: l.controller,
    transport: l.transport ?? "",
    traddr: l.traddr ?? "",
    trsvcid: l.trsvcid ?? "",
    address: l.traddr ? (l.trsvcid ? hostPort(l.traddr, l.trsvcid) : l.traddr) : "",
    host_traddr: l.host_traddr ?? "",
    state: states.get(l.controller) ??
      (ups.get(l.controller) === true ? "live" : ups.has(l.controller) ? "down" : "unknown"),
    ana: (ana.get(l.controller) ?? []).sort((a, b) => byNumbers(a.nsid, b.nsid)),
    devices: devicesOf.get(l.controller) ?? [],
  })).sort((a, b) => byNumbers(a.controller, b.controller));
  const nqnOf = new Map(
    cur.samples("nvmeof_path_info").map((s) => [s.labels.controller, s.labels.subsystem_nqn]),
  );
  const info = new Map(
    cur.samples("nvmeof_subsystem_info").map((s) => [
      s.labels.subsystem_nqn,
      s.labels,
    ]),
  );
  const heads = io.filter((r) => r.role === "head" || r.role === "namespace");
  const nqns = new Set([...info.keys(), ...nqnOf.values(), ...heads.map((r) => r.subsystem_nqn)]);
  const pathsOf = Map.groupBy(paths, (p) => nqnOf.get(p.controller));
  const headsOf = Map.groupBy(heads, (r) => r.subsystem_nqn);
  return [...nqns].sort(byNumbers).map((nqn) => {
    const mine = pathsOf.get(nqn) ?? [];
    const count = (name: string, fallback: number) =>
      cur.value(name, { subsystem_nqn: nqn }) ?? fallback;
    return {
      subsystem_nqn: nqn,
      subsystem: info.get(nqn)?.subsystem ?? "",
      iopolicy: info.get(nqn)?.iopolicy ?? "",
      paths_live: count(
        "nvmeof_subsystem_paths_live",
        mine.filter((p) => p.state === "live").length,
      ),
      paths_total: count("nvmeof_subsystem_paths", mine.length),
      namespaces: headsOf.get(nqn) ?? [],
      paths: mine,
    };
  });
}

function rdmaErrorRows(
  prev: Families | undefined,
  cur: Families,
  seconds: number | null,
): RdmaCounterRow[] {
  if (!prev) return [];
  const name = "nvmeof_rdma_hw_stats_total";
  const rows: RdmaCounterRow[] = [];
  for (const s of cur.samples(name)) {
    if (RDMA_TRAFFIC_COUNTERS.has(s.labels.counter)) continue;
    const increase = counterIncrease(prev.value(name, s.labels), s.value);
    if (increase === null || increase <= 0) continue;
    rows.push({
      device: s.labels.device,
      port: s.labels.port,
      counter: s.labels.counter,
      increase,
      per_second: seconds === null ? null : increase / seconds,
    });
  }
  return rows.sort((a, b) =>
    byNumbers(a.device, b.device) || byNumbers(a.port, b.port) || byNumbers(a.counter, b.counter)
  );
}

function targetPortRows(cur: Families): TargetPortRow[] {
  return cur.samples("nvmeof_target_port_info").map(({ labels: l }) => {
    const port = { port: l.port };
    return {
      port: l.port,
      trtype: l.trtype ?? "",
      adrfam: l.adrfam ?? "",
      traddr: l.traddr ?? "",
      trsvcid: l.trsvcid ?? "",
      address: l.traddr ? (l.trsvcid ? hostPort(l.traddr, l.trsvcid) : l.traddr) : "",
      listening: flag(cur.value("nvmeof_target_port_listening", port)),
      connections: cur.value("nvmeof_target_port_connections", port) ?? null,
      subsystems: cur.value("nvmeof_target_port_subsystems", port) ?? null,
      hosts: cur.samples("nvmeof_target_port_peer_connections").filter((s) => has(s, port))
        .map((s) => ({ remote_address: s.labels.remote_address, connections: s.value }))
        .sort((a, b) => byNumbers(a.remote_address, b.remote_address)),
    };
  }).sort((a, b) => byNumbers(a.port, b.port));
}
