/**
 * nvme-cli's shapes for `list` and `list-subsys`, text and JSON, key for key as nvme-cli 2.3
 * (Debian 12's, with libnvme 1.3) prints them (nvme-print.c: json_simple_list, json_list_item,
 * json_print_nvme_subsystem_list, nvme_show_simple_list, nvme_show_subsystem). One difference
 * on purpose: entries come in sysfs order (nvme2 before nvme10), as libnvme lists them from 1.10
 * on; libnvme 1.3 lists the newest first.
 */
import type { DeviceRow, HostSubsystems } from "../fabrics/topology.ts";
import type { SubsystemInfo } from "../fabrics/sysfs.ts";

/** One entry of `nvme list -o json`'s "Devices". */
export interface NvmeCliDevice {
  NameSpace: number;
  DevicePath: string;
  Firmware: string;
  ModelNumber: string;
  SerialNumber: string;
  UsedBytes: number;
  MaximumLBA: number;
  PhysicalSize: number;
  SectorSize: number;
}

/** `nvme list -o json`: `{"Devices": [...]}`. */
export function devicesJson(rows: DeviceRow[]): { Devices: NvmeCliDevice[] } {
  return {
    Devices: rows.map((r) => ({
      NameSpace: r.nsid,
      DevicePath: r.devicePath,
      Firmware: r.firmware,
      ModelNumber: r.model,
      SerialNumber: r.serial,
      UsedBytes: r.usage.nuse * r.usage.lbaSize,
      MaximumLBA: r.usage.nsze,
      PhysicalSize: r.usage.nsze * r.usage.lbaSize,
      SectorSize: r.usage.lbaSize,
    })),
  };
}

const SI: Array<[number, string]> = [
  [1e30, "Q"],
  [1e27, "R"],
  [1e24, "Y"],
  [1e21, "Z"],
  [1e18, "E"],
  [1e15, "P"],
  [1e12, "T"],
  [1e9, "G"],
  [1e6, "M"],
  [1e3, "k"],
  [1, ""],
];

/** nvme-cli's suffix_si_get: the value scaled and its SI prefix ("" below 1). */
function si(value: number): [number, string] {
  for (const [m, s] of SI) if (value >= m) return [value / m, s];
  return [value, ""];
}

/** nvme-cli's suffix_binary_get: rounded to the nearest unit. */
function binary(value: number): [number, string] {
  for (const [shift, s] of [[50, "Pi"], [40, "Ti"], [30, "Gi"], [20, "Mi"], [10, "Ki"]] as const) {
    const unit = 2 ** shift;
    if (Math.abs(value) >= unit) return [Math.floor((value + unit / 2) / unit), s];
  }
  return [value, ""];
}

const pad = (s: string, n: number) => s.padEnd(n);
const padStart = (s: string, n: number) => s.padStart(n);
const DASH = "-".repeat(96);

/** `nvme list`'s table (nvme_show_simple_list). */
export function devicesText(rows: DeviceRow[]): string {
  const cols = [21, 21, 20, 40, 9, 26, 16, 8];
  const line = (cells: string[]) => cells.map((c, i) => pad(c, cols[i])).join(" ");
  const out = [
    line(["Node", "Generic", "SN", "Model", "Namespace", "Usage", "Format", "FW Rev"]),
    cols.map((n) => DASH.slice(0, n)).join(" "),
  ];
  for (const r of rows) {
    const lba = r.usage.lbaSize;
    const [used, us] = si(r.usage.nuse * lba);
    const [size, ss] = si(r.usage.nsze * lba);
    const [l, ls] = binary(lba);
    const usage = `${padStart(used.toFixed(2), 6)} ${padStart(us, 2)}B / ${
      padStart(size.toFixed(2), 6)
    } ${padStart(ss, 2)}B`;
    const format = `${padStart(l.toFixed(0), 3)} ${padStart(ls, 2)}B + ${
      padStart(String(r.usage.metaSize), 2)
    } B`;
    out.push(line([
      r.devicePath,
      r.genericPath,
      r.serial,
      r.model,
      String(r.nsid),
      usage,
      format,
      r.firmware,
    ]));
  }
  return out.join("\n");
}

/** One path (or controller) of `nvme list-subsys -o json`. */
export interface NvmeCliPath {
  Name: string;
  Transport: string;
  Address: string;
  State: string;
  ANAState?: string;
}

/** One host of `nvme list-subsys -o json`. */
export interface NvmeCliHost {
  HostNQN: string;
  HostID?: string;
  Subsystems: Array<{ Name: string; NQN: string; Paths: NvmeCliPath[] }>;
}

/**
 * A subsystem's paths as list-subsys shows them: with native multipath the paths of its first
 * namespace (with ANAState when `showAna`, i.e. when a namespace was named), else its controllers.
 */
function subsysPaths(s: SubsystemInfo, showAna: boolean): NvmeCliPath[] {
  const head = s.multipath ? s.namespaces[0] : undefined;
  if (head && head.paths.length > 0) {
    return head.paths.map((p) => {
      const c = s.controllers.find((x) => x.name === p.controller);
      return {
        Name: p.controller,
        Transport: p.transport,
        Address: c?.address_attr ?? "",
        State: p.state,
        // libnvme reads a path without ana_state as optimized.
        ...(showAna ? { ANAState: p.ana_state ?? "optimized" } : {}),
      };
    });
  }
  return s.controllers.map((c) => ({
    Name: c.name,
    Transport: c.transport,
    Address: c.address_attr,
    State: c.state,
  }));
}

/** `nvme list-subsys -o json`: `[{HostNQN, HostID, Subsystems: [{Name, NQN, Paths}]}]`. */
export function subsysJson(hosts: HostSubsystems[], showAna: boolean): NvmeCliHost[] {
  return hosts.map((h) => ({
    HostNQN: h.hostnqn,
    ...(h.hostid ? { HostID: h.hostid } : {}),
    Subsystems: h.subsystems.map((s) => ({
      Name: s.name,
      NQN: s.subsysnqn,
      Paths: subsysPaths(s, showAna),
    })),
  }));
}

/** `nvme list-subsys`'s text (nvme_show_subsystem). */
export function subsysText(hosts: HostSubsystems[], showAna: boolean): string {
  const out: string[] = [];
  for (const h of hosts) {
    for (const s of h.subsystems) {
      out.push(`${s.name} - NQN=${s.subsysnqn}`, "\\");
      const multipath = s.multipath && (s.namespaces[0]?.paths.length ?? 0) > 0;
      for (const p of subsysPaths(s, showAna)) {
        // nvme-cli prints the ANA column (empty without a namespace) for multipath paths only.
        out.push(
          ` +- ${p.Name} ${p.Transport} ${p.Address} ${p.State}` +
            (multipath ? ` ${p.ANAState ?? ""}` : ""),
        );
      }
    }
  }
  return out.join("\n");
}
