/**
 * Readers for the NVMe host's sysfs (drivers/nvme/host/core.c and, from 6.8, sysfs.c): controllers in /sys/class/nvme, subsystems in
 * /sys/class/nvme-subsystem, and the namespaces' block devices. The root is a parameter.
 */
import { listDir, readText } from "../host/kfs.ts";
import type { FabricsPaths } from "./paths.ts";

/** The parsed `address` attribute (`traddr=…,trsvcid=…[,host_traddr=…][,host_iface=…]`). */
export type ControllerAddress = Record<string, string>;

/** A namespace as the host sees it. */
export interface NamespaceInfo {
  /** The block device's name (`nvme1n1`); with native multipath, the shared head. */
  name: string;
  /** `/dev/<name>` */
  device: string;
  nsid: number;
  /** Size in bytes (sysfs `size` is in 512-byte sectors). */
  size: number;
}

/** A controller, from /sys/class/nvme/nvmeN. */
export interface ControllerInfo {
  name: string;
  instance: number;
  transport: string;
  address: ControllerAddress;
  subsysnqn: string;
  hostnqn: string;
  hostid: string;
  cntlid: number;
  state: string;
  /** io, discovery or admin (absent on older kernels). */
  cntrltype?: string;
  namespaces: NamespaceInfo[];
}

/** A subsystem, from /sys/class/nvme-subsystem/nvme-subsysK. */
export interface SubsystemInfo {
  name: string;
  subsysnqn: string;
  subsystype?: string;
  model?: string;
  serial?: string;
  iopolicy?: string;
  controllers: ControllerInfo[];
  namespaces: NamespaceInfo[];
}

/** Parses a controller's `address` attribute. */
export function parseAddress(text: string): ControllerAddress {
  const out: ControllerAddress = {};
  for (const part of text.trim().split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/** Reads one attribute, trimmed; undefined when absent or unreadable. */
export function readAttr(dir: string, name: string): Promise<string | undefined> {
  try {
    return Promise.resolve(readText(`${dir}/${name}`).trim());
  } catch {
    return Promise.resolve(undefined);
  }
}

function names(dir: string, pattern: RegExp): Promise<string[]> {
  try {
    return Promise.resolve(listDir(dir).filter((n) => pattern.test(n)).sort(byNumbers));
  } catch {
    return Promise.resolve([]);
  }
}

/** Sorts nvme2 before nvme10. */
function byNumbers(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true });
}

const CONTROLLER = /^nvme\d+$/;
const NAMESPACE_DIR = /^nvme\d+(c\d+)?n\d+$/;

/** The class directory of a controller. */
export function controllerDir(paths: FabricsPaths, name: string): string {
  return `${paths.sysfs}/class/nvme/${name}`;
}

/** The namespaces under a controller (its path devices `nvmeKcNnM` or plain `nvmeKnM`). */
export async function controllerNamespaces(
  paths: FabricsPaths,
  name: string,
): Promise<NamespaceInfo[]> {
  const dir = controllerDir(paths, name);
  const out: NamespaceInfo[] = [];
  for (const entry of await names(dir, NAMESPACE_DIR)) {
    out.push(await namespaceInfo(paths, `${dir}/${entry}`, entry.replace(/c\d+n/, "n")));
  }
  return out;
}

async function namespaceInfo(
  paths: FabricsPaths,
  dir: string,
  blockName: string,
): Promise<NamespaceInfo> {
  const sectors = Number(await readAttr(dir, "size") ?? "0");
  return {
    name: blockName,
    device: `${paths.dev}/${blockName}`,
    nsid: Number(await readAttr(dir, "nsid") ?? "0"),
    size: sectors * 512,
  };
}

/** Reads one controller; undefined when it does not exist (or vanished meanwhile). */
export async function readController(
  paths: FabricsPaths,
  name: string,
): Promise<ControllerInfo | undefined> {
  const dir = controllerDir(paths, name);
  const transport = await readAttr(dir, "transport");
  if (transport === undefined) return undefined;
  const cntrltype = await readAttr(dir, "cntrltype");
  return {
    name,
    instance: Number(name.slice(4)),
    transport,
    address: parseAddress(await readAttr(dir, "address") ?? ""),
    subsysnqn: await readAttr(dir, "subsysnqn") ?? "",
    hostnqn: await readAttr(dir, "hostnqn") ?? "",
    hostid: await readAttr(dir, "hostid") ?? "",
    cntlid: Number(await readAttr(dir, "cntlid") ?? "0"),
    state: await readAttr(dir, "state") ?? "unknown",
    ...(cntrltype !== undefined ? { cntrltype } : {}),
    namespaces: await controllerNamespaces(paths, name),
  };
}

/** Every controller the host has (fabrics and PCIe). */
export async function listControllers(paths: FabricsPaths): Promise<ControllerInfo[]> {
  const out: ControllerInfo[] = [];
  for (const name of await names(`${paths.sysfs}/class/nvme`, CONTROLLER)) {
    const c = await readController(paths, name);
    if (c) out.push(c);
  }
  return out;
}

/** Every subsystem with its controllers and namespaces. */
export async function listSubsystems(paths: FabricsPaths): Promise<SubsystemInfo[]> {
  const root = `${paths.sysfs}/class/nvme-subsystem`;
  const out: SubsystemInfo[] = [];
  for (const name of await names(root, /^nvme-subsys\d+$/)) {
    const dir = `${root}/${name}`;
    const controllers: ControllerInfo[] = [];
    for (const c of await names(dir, CONTROLLER)) {
      const info = await readController(paths, c);
      if (info) controllers.push(info);
    }
    // Native multipath: the shared heads live under the subsystem; otherwise each controller has its own.
    const namespaces: NamespaceInfo[] = [];
    for (const ns of await names(dir, /^nvme\d+n\d+$/)) {
      namespaces.push(await namespaceInfo(paths, `${dir}/${ns}`, ns));
    }
    if (namespaces.length === 0) {
      const seen = new Set<string>();
      for (const c of controllers) {
        for (const ns of c.namespaces) {
          if (!seen.has(ns.name)) {
            seen.add(ns.name);
            namespaces.push(ns);
          }
        }
      }
    }
    const opt = async (attr: string) => await readAttr(dir, attr);
    const info: SubsystemInfo = {
      name,
      subsysnqn: await opt("subsysnqn") ?? "",
      controllers,
      namespaces,
    };
    for (const attr of ["subsystype", "model", "serial", "iopolicy"] as const) {
      const v = await opt(attr);
      if (v !== undefined) info[attr] = v;
    }
    out.push(info);
  }
  return out;
}

/** What identifies a fabrics connection (the kernel's duplicate check, nvmf_ip_options_match). */
export interface ConnectionKey {
  transport: string;
  traddr: string;
  trsvcid: string;
  subsysnqn: string;
  hostnqn: string;
  hostTraddr?: string;
}

/** True when `c` is the connection `key` describes (and is not being deleted). */
export function matchesConnection(c: ControllerInfo, key: ConnectionKey): boolean {
  if (c.state.startsWith("deleting") || c.state === "dead") return false;
  return c.transport === key.transport && c.subsysnqn === key.subsysnqn &&
    c.hostnqn === key.hostnqn && sameAddr(c.address.traddr, key.traddr) &&
    (c.address.trsvcid ?? "") === key.trsvcid &&
    (key.hostTraddr === undefined || sameAddr(c.address.host_traddr, key.hostTraddr));
}

function sameAddr(a: string | undefined, b: string): boolean {
  return a !== undefined && a.toLowerCase() === b.toLowerCase();
}
