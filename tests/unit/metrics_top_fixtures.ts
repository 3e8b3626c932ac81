/**
 * Synthetic collections for the `nvmeof top` tests: the families of docs/metrics.md as the
 * collectors export them, for a host with one subsystem over two paths and a storage server.
 */
import type { MetricFamily, MetricType } from "../../src/metrics/family.ts";

type Row = [Record<string, string>, number];

/** A family NAME of TYPE with ROWS. */
export function fam(name: string, type: MetricType, rows: Row[]): MetricFamily {
  return { name, help: name, type, samples: rows.map(([labels, value]) => ({ labels, value })) };
}

export const NQN = "nqn.2024-01.io.example:ha";

/** The block counters of one device, named by their family's short name. */
export interface BlockCounts {
  rios: number;
  rbytes: number;
  rsec: number;
  wios: number;
  wbytes: number;
  wsec: number;
  inflight?: number;
}

const BLOCK_NAMES: Record<keyof BlockCounts, string> = {
  rios: "nvmeof_block_read_ios_total",
  rbytes: "nvmeof_block_read_bytes_total",
  rsec: "nvmeof_block_read_seconds_total",
  wios: "nvmeof_block_write_ios_total",
  wbytes: "nvmeof_block_write_bytes_total",
  wsec: "nvmeof_block_write_seconds_total",
  inflight: "nvmeof_block_in_flight",
};

/** The nvmeof_block_* families of DEVICES (labels → counts). */
export function block(devices: Array<[Record<string, string>, BlockCounts]>): MetricFamily[] {
  return (Object.keys(BLOCK_NAMES) as Array<keyof BlockCounts>).map((k) =>
    fam(
      BLOCK_NAMES[k],
      k === "inflight" ? "gauge" : "counter",
      devices.filter(([, c]) => c[k] !== undefined).map(([l, c]) => [l, c[k]!]),
    )
  );
}

const STATES = ["new", "live", "connecting", "resetting", "deleting", "dead"];

/** nvme1 (rdma) and nvme2 (tcp) to NQN, with NVME2_STATE; ANA per path. */
export function hostPaths(nvme2State: string, nvme2Ana: string): MetricFamily[] {
  const ctrls: Array<[string, string, string, string]> = [
    ["nvme1", "rdma", "live", "optimized"],
    ["nvme2", "tcp", nvme2State, nvme2Ana],
  ];
  return [
    fam("nvmeof_subsystem_info", "gauge", [[{
      subsystem: "nvme-subsys1",
      subsystem_nqn: NQN,
      iopolicy: "round-robin",
    }, 1]]),
    fam(
      "nvmeof_path_info",
      "gauge",
      ctrls.map(([c, t], i) => [{
        controller: c,
        subsystem_nqn: NQN,
        transport: t,
        traddr: i === 0 ? "10.77.0.1" : "fd00::1",
        trsvcid: i === 0 ? "4420" : "4421",
        host_traddr: "",
      }, 1]),
    ),
    fam(
      "nvmeof_path_state",
      "gauge",
      ctrls.flatMap(([c, , st]) =>
        STATES.map((s): Row => [{ controller: c, state: s }, s === st ? 1 : 0])
      ),
    ),
    fam(
      "nvmeof_path_ana_state",
      "gauge",
      ctrls.flatMap(([c, , , ana]) =>
        ["optimized", "non-optimized", "inaccessible"].map((
          s,
        ): Row => [{ controller: c, nsid: "1", state: s }, s === ana ? 1 : 0])
      ),
    ),
    fam("nvmeof_subsystem_paths", "gauge", [[{ subsystem_nqn: NQN }, 2]]),
    fam("nvmeof_subsystem_paths_live", "gauge", [[
      { subsystem_nqn: NQN },
      1 + (nvme2State === "live" ? 1 : 0),
    ]]),
  ];
}

export const HEAD = { device: "nvme1n1", role: "head", subsystem_nqn: NQN, nsid: "1" };
export const PATH1 = { ...HEAD, device: "nvme1c1n1", role: "path", controller: "nvme1" };
export const PATH2 = { ...HEAD, device: "nvme1c2n1", role: "path", controller: "nvme2" };
