/**
 * Readers for the NVMe host's sysfs (drivers/nvme/host/core.c and, from 6.8, sysfs.c): controllers in /sys/class/nvme, subsystems in
 * /sys/class/nvme-subsystem, and the namespaces' block devices. The root is a parameter.
 */
import { listDir, readAttributeIf } from "../host/kfs.ts";
import type { FabricsPaths } from "./initiator_paths.ts";
import type { NeighbourView } from "../net/neighbour.ts";
import { byNumbers } from "../order.ts";

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
  /** The logical block size in bytes (`queue/logical_block_size`), when sysfs has it. */
  sector_size?: number;
  /** Under a controller with native multipath: the hidden per-path device (`nvme1c2n1`). */
  path?: string;
  /** The path's ANA state (`optimized`, `non-optimized`, `inaccessible`, ...), when it has one. */
  ana_state?: string;
  /** The path's ANA group. */
  ana_grpid?: number;
}

/** One path of a multipath head: a controller's hidden device for that namespace. */
export interface PathInfo {
  /** The per-path device (`nvme1c2n1`). */
  name: string;
  /** The controller it goes through (`nvme2`). */
  controller: string;
  transport: string;
  address: ControllerAddress;
  /** The controller's state (`live`, `connecting`, `resetting`, `deleting`, ...). */
  state: string;
  /** The path's ANA state; absent when the kernel has none for it (no ANA support). */
  ana_state?: string;
  ana_grpid?: number;
  /** The path's I/O timeout in ms (its queue's `io_timeout`). */
  io_timeout?: number;
}

/** A namespace of a subsystem: with native multipath a head and its paths. */
export interface HeadInfo extends NamespaceInfo {
  /** Every controller's path to this namespace (empty without native multipath). */
  paths: PathInfo[];
  /** Without native multipath: the namespace queue's I/O timeout in ms (`queue/io_timeout`). */
  io_timeout?: number;
}

/** A controller, from /sys/class/nvme/nvmeN. */
export interface ControllerInfo {
  name: string;
  instance: number;
  transport: string;
  address: ControllerAddress;
  /** The `address` attribute as the kernel wrote it (a PCIe controller's is its PCI address). */
  address_attr: string;
  subsysnqn: string;
  hostnqn: string;
  hostid: string;
  cntlid: number;
  state: string;
  /** io, discovery or admin (absent on older kernels). */
  cntrltype?: string;
  model?: string;
  serial?: string;
  firmware_rev?: string;
  namespaces: NamespaceInfo[];
  /**
   * For a controller that is not live, its target address's ARP entry (`list --paths`, doctor):
   * failed means the address does not answer, the link is the cause (topology.ts withNeighbours).
   */
  neighbour?: NeighbourView;
}

/** A subsystem, from /sys/class/nvme-subsystem/nvme-subsysK. */
export interface SubsystemInfo {
  name: string;
  subsysnqn: string;
  subsystype?: string;
  model?: string;
  serial?: string;
  firmware_rev?: string;
  /** How I/O is spread over the paths: numa, round-robin (queue-depth on newer kernels). */
  iopolicy?: string;
  /** True when the namespaces are shared heads with one path per controller (native multipath). */
  multipath: boolean;
  controllers: ControllerInfo[];
  namespaces: HeadInfo[];
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

/**
 * Reads one attribute, trimmed; undefined when absent or unreadable. One read of a page
 * (readAttributeIf): a compute node's list or metrics reads thousands of them, and an absent one
 * costs no error.
 */
export function readAttr(dir: string, name: string): Promise<string | undefined> {
  try {
    return Promise.resolve(readAttributeIf(`${dir}/${name}`)?.trim());
  } catch {
    return Promise.resolve(undefined);
  }
}

/** A controller's reconnect settings in seconds, as sysfs shows them; absent ones are undefined. */
export interface ControllerTimeouts {
  kato?: number;
  /** -1: never given up (sysfs shows `off`). */
  ctrlLossTmo?: number;
  reconnectDelay?: number;
}

/** Reads a controller's keep-alive, loss timeout and reconnect delay from its directory DIR. */
export async function readTimeouts(dir: string): Promise<ControllerTimeouts> {
  const num = (v: string | undefined) =>
    v === "off" ? -1 : v !== undefined && /^-?\d+$/.test(v) ? Number(v) : undefined;
  return {
    kato: num(await readAttr(dir, "kato")),
    ctrlLossTmo: num(await readAttr(dir, "ctrl_loss_tmo")),
    reconnectDelay: num(await readAttr(dir, "reconnect_delay")),
  };
}

function names(dir: string, pattern: RegExp): Promise<string[]> {
  try {
    return Promise.resolve(listDir(dir).filter((n) => pattern.test(n)).sort(byNumbers));
  } catch {
    return Promise.resolve([]);
  }
}

const CONTROLLER = /^nvme\d+$/;
const NAMESPACE_DIR = /^nvme\d+(c\d+)?n\d+$/;
const PATH_DEVICE = /^nvme(\d+)c(\d+)n(\d+)$/;
const HEAD_DEVICE = /^nvme(\d+)n(\d+)$/;

/** The class directory of a controller. */
export function controllerDir(paths: FabricsPaths, name: string): string {
  return `${paths.sysfs}/class/nvme/${name}`;
}

/**
 * The namespaces under a controller (its path devices `nvmeKcNnM` or plain `nvmeKnM`). HEADS, the
 * subsystem's heads already read (by block name), give a path device its head's nsid, size and
 * block size: the kernel shows the head's there (nsid_show reads the head; a path's capacity and
 * block size are set with its head's), so a compute node with hundreds of paths reads them once
 * per namespace, not once per path, as libnvme does.
 */
export async function controllerNamespaces(
  paths: FabricsPaths,
  name: string,
  heads?: ReadonlyMap<string, NamespaceInfo>,
): Promise<NamespaceInfo[]> {
  const dir = controllerDir(paths, name);
  const out: NamespaceInfo[] = [];
  for (const entry of await names(dir, NAMESPACE_DIR)) {
    const blockName = entry.replace(/c\d+n/, "n");
    const head = heads?.get(blockName);
    const ns = head ? { ...head } : await namespaceInfo(paths, `${dir}/${entry}`, blockName);
    if (PATH_DEVICE.test(entry)) {
      ns.path = entry;
      const ana = await readAttr(`${dir}/${entry}`, "ana_state");
      const grp = await readAttr(`${dir}/${entry}`, "ana_grpid");
      if (ana) ns.ana_state = ana;
      if (grp && /^\d+$/.test(grp)) ns.ana_grpid = Number(grp);
    }
    out.push(ns);
  }
  return out;
}

/** The sysfs directory of a namespace's block device: under its subsystem (a head) or controller. */
export function namespaceDir(paths: FabricsPaths, owner: string, name: string): string {
  return owner.startsWith("nvme-subsys")
    ? `${paths.sysfs}/class/nvme-subsystem/${owner}/${name}`
    : `${controllerDir(paths, owner)}/${name}`;
}

async function namespaceInfo(
  paths: FabricsPaths,
  dir: string,
  blockName: string,
): Promise<NamespaceInfo> {
  const sectors = Number(await readAttr(dir, "size") ?? "0");
  const lbs = await readAttr(dir, "queue/logical_block_size");
  return {
    name: blockName,
    device: `${paths.dev}/${blockName}`,
    nsid: Number(await readAttr(dir, "nsid") ?? "0"),
    size: sectors * 512,
    ...(lbs && /^\d+$/.test(lbs) ? { sector_size: Number(lbs) } : {}),
  };
}

/**
 * Reads one controller; undefined when it does not exist (or vanished meanwhile). HEADS: its
 * subsystem's heads, already read (controllerNamespaces).
 */
export async function readController(
  paths: FabricsPaths,
  name: string,
  heads?: ReadonlyMap<string, NamespaceInfo>,
): Promise<ControllerInfo | undefined> {
  const dir = controllerDir(paths, name);
  const transport = await readAttr(dir, "transport");
  if (transport === undefined) return undefined;
  const cntrltype = await readAttr(dir, "cntrltype");
  const ident: Pick<ControllerInfo, "model" | "serial" | "firmware_rev"> = {};
  for (const attr of ["model", "serial", "firmware_rev"] as const) {
    const v = await readAttr(dir, attr);
    if (v !== undefined) ident[attr] = v;
  }
  const addressAttr = await readAttr(dir, "address") ?? "";
  return {
    name,
    instance: Number(name.slice(4)),
    transport,
    address: parseAddress(addressAttr),
    address_attr: addressAttr,
    subsysnqn: await readAttr(dir, "subsysnqn") ?? "",
    hostnqn: await readAttr(dir, "hostnqn") ?? "",
    hostid: await readAttr(dir, "hostid") ?? "",
    cntlid: Number(await readAttr(dir, "cntlid") ?? "0"),
    state: await readAttr(dir, "state") ?? "unknown",
    ...(cntrltype !== undefined ? { cntrltype } : {}),
    ...ident,
    namespaces: await controllerNamespaces(paths, name, heads),
  };
}

/** True for a controller reached over a fabric (rdma, tcp, fc, loop), not a local PCIe drive. */
export function isFabricsController(c: Pick<ControllerInfo, "transport">): boolean {
  return c.transport !== "pcie";
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

/**
 * Every subsystem with its controllers and namespaces. With native multipath the namespaces are
 * the heads under the subsystem, each with its paths (one per controller, named nvmeAcCnB for
 * head nvmeAnB, with its ANA state); otherwise each controller's own namespaces.
 */
export async function listSubsystems(paths: FabricsPaths): Promise<SubsystemInfo[]> {
  const root = `${paths.sysfs}/class/nvme-subsystem`;
  const out: SubsystemInfo[] = [];
  for (const name of await names(root, /^nvme-subsys\d+$/)) {
    const dir = `${root}/${name}`;
    const headInfo = new Map<string, NamespaceInfo>();
    for (const ns of await names(dir, HEAD_DEVICE)) {
      headInfo.set(ns, await namespaceInfo(paths, `${dir}/${ns}`, ns));
    }
    const controllers: ControllerInfo[] = [];
    for (const c of await names(dir, CONTROLLER)) {
      const info = await readController(paths, c, headInfo);
      if (info) controllers.push(info);
    }
    const heads: HeadInfo[] = [];
    for (const [ns, head] of headInfo) {
      heads.push({ ...head, paths: await headPaths(paths, ns, controllers) });
    }
    const multipath = heads.length > 0;
    const namespaces: HeadInfo[] = heads;
    if (!multipath) {
      const seen = new Set<string>();
      for (const c of controllers) {
        for (const ns of c.namespaces) {
          if (!seen.has(ns.name)) {
            seen.add(ns.name);
            namespaces.push({ ...ns, ...await queueTimeout(paths, c.name, ns), paths: [] });
          }
        }
      }
    }
    const opt = async (attr: string) => await readAttr(dir, attr);
    const info: SubsystemInfo = {
      name,
      subsysnqn: await opt("subsysnqn") ?? "",
      multipath,
      controllers,
      namespaces,
    };
    for (const attr of ["subsystype", "model", "serial", "firmware_rev", "iopolicy"] as const) {
      const v = await opt(attr);
      if (v !== undefined) info[attr] = v;
    }
    out.push(info);
  }
  return out;
}

/**
 * The queue directory of namespace `ns` under controller `controller`: its per-path device's
 * under native multipath (`nvme1c2n1`), else its own. connect writes its settings there.
 */
export function queueDir(paths: FabricsPaths, controller: string, ns: NamespaceInfo): string {
  return `${namespaceDir(paths, controller, ns.path ?? ns.name)}/queue`;
}

/** The I/O timeout (ms) of `ns`'s queue under `controller` (connect --io-timeout sets it). */
async function queueTimeout(
  paths: FabricsPaths,
  controller: string,
  ns: NamespaceInfo,
): Promise<{ io_timeout?: number }> {
  const t = await readAttr(queueDir(paths, controller, ns), "io_timeout");
  return t && /^\d+$/.test(t) ? { io_timeout: Number(t) } : {};
}

/** The paths of head `nvmeAnB`: each controller's `nvmeAcCnB`, in controller order. */
async function headPaths(
  paths: FabricsPaths,
  head: string,
  controllers: ControllerInfo[],
): Promise<PathInfo[]> {
  const [, subsys, nsIndex] = HEAD_DEVICE.exec(head)!;
  const out: PathInfo[] = [];
  for (const c of controllers) {
    for (const ns of c.namespaces) {
      const m = ns.path ? PATH_DEVICE.exec(ns.path) : null;
      if (!m || m[1] !== subsys || m[3] !== nsIndex) continue;
      out.push({
        name: ns.path!,
        controller: c.name,
        transport: c.transport,
        address: c.address,
        state: c.state,
        ...(ns.ana_state !== undefined ? { ana_state: ns.ana_state } : {}),
        ...(ns.ana_grpid !== undefined ? { ana_grpid: ns.ana_grpid } : {}),
        ...await queueTimeout(paths, c.name, ns),
      });
    }
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
  hostIface?: string;
}

/** True when `c` is the connection `key` describes (and is not being deleted). */
export function matchesConnection(c: ControllerInfo, key: ConnectionKey): boolean {
  if (c.state.startsWith("deleting") || c.state === "dead") return false;
  return c.transport === key.transport && c.subsysnqn === key.subsysnqn &&
    c.hostnqn === key.hostnqn && sameAddr(c.address.traddr, key.traddr) &&
    (c.address.trsvcid ?? "") === key.trsvcid &&
    (key.hostTraddr === undefined || sameAddr(c.address.host_traddr, key.hostTraddr)) &&
    (key.hostIface === undefined || c.address.host_iface === key.hostIface);
}

function sameAddr(a: string | undefined, b: string): boolean {
  return a !== undefined && a.toLowerCase() === b.toLowerCase();
}
