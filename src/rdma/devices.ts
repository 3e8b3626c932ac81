/**
 * RDMA device discovery through libibverbs: devices, their attributes, ports and GID tables,
 * with the netdev each GID belongs to and that netdev's MTU beside the RoCE MTU.
 */
import { softRoceCommand } from "./soft_roce.ts";
import { EACCES, ENOENT, ENOSYS, EPERM } from "../errno.ts";
import { libibverbs } from "../../ffi/libibverbs.ts";
import { errno, libc } from "../../ffi/libc.ts";
import {
  GID_TYPE_NAMES,
  IBV_PORT_STATE_NAMES,
  LINK_LAYER_NAMES,
  mtuBytes,
  NODE_TYPE_NAMES,
  PHYS_STATE_NAMES,
  SPEED_NAMES,
  TRANSPORT_NAMES,
  WIDTH_NAMES,
} from "../../ffi/enums.ts";
import {
  IBV_DEVICE,
  IBV_DEVICE_ATTR as DA,
  IBV_GID_ENTRY,
  IBV_PORT_ATTR as PA,
} from "../../ffi/structs.ts";
import { EnvironmentError, errnoName, NativeError } from "../errors.ts";
import { cView } from "./native.ts";
import { formatIp } from "../net/address.ts";
import { hexOf } from "../sha256.ts";

/** One RDMA device as libibverbs lists it. */
export interface RdmaDeviceName {
  name: string;
  /** Node GUID as the kernel prints it: four groups of four hex digits. */
  node_guid: string;
}

function guidText(be: bigint): string {
  // ibv_get_device_guid returns the GUID in network order; print its bytes in order.
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, be, true);
  return hexOf(bytes).match(/.{4}/g)!.join(":");
}

/** Calls `fn` with the device list (ibv_get_device_list), freeing it afterwards. */
function withDeviceList<T>(fn: (devices: Deno.PointerObject[]) => T): T {
  const ibv = libibverbs();
  const count = new Int32Array(1);
  const list = ibv.ibv_get_device_list(count);
  if (list === null) {
    const e = errno();
    throw new EnvironmentError(
      `Cannot list RDMA devices: ibv_get_device_list() failed with ${errnoName(e)} (${e}).`,
      {
        // libibverbs says ENOSYS or ENOENT, by which part of sysfs's infiniband_verbs class is
        // missing on this kernel (both seen): either way no RDMA stack is loaded.
        hint: e === ENOSYS || e === ENOENT
          ? "The kernel has no RDMA support loaded. Load ib_uverbs and your NIC's driver " +
            `(or add a Soft-RoCE device: ${softRoceCommand()}).`
          : "Check that ib_uverbs is loaded and /dev/infiniband exists.",
      },
    );
  }
  try {
    const view = new Deno.UnsafePointerView(list);
    const devices: Deno.PointerObject[] = [];
    for (let i = 0; i < count[0]; i++) {
      const dev = view.getPointer(8 * i);
      if (dev === null) break;
      devices.push(dev);
    }
    return fn(devices);
  } finally {
    ibv.ibv_free_device_list(list);
  }
}

/**
 * Lists the RDMA devices (ibv_get_device_list). Throws EnvironmentError when the kernel has no
 * RDMA support loaded (ENOSYS or ENOENT) or the library is missing.
 */
export function listRdmaDevices(): RdmaDeviceName[] {
  const ibv = libibverbs();
  return withDeviceList((devs) =>
    devs.map((dev) => ({
      name: Deno.UnsafePointerView.getCString(ibv.ibv_get_device_name(dev)!),
      node_guid: guidText(BigInt(ibv.ibv_get_device_guid(dev))),
    }))
  );
}

/** One GID table entry. */
export interface GidInfo {
  index: number;
  /** The GID as an IPv6 address in text (RFC 5952), as ibv_devinfo prints it. */
  gid: string;
  /** "IB", "RoCE v1" or "RoCE v2". */
  type: string;
  netdev: string | null;
  /** The IP address the GID stands for (IPv4 for ::ffff:a.b.c.d), RoCE only. */
  ip: string | null;
}

/** One port of a device. */
export interface PortInfo {
  port: number;
  state: string;
  phys_state: string;
  link_layer: string;
  max_mtu: number;
  active_mtu: number;
  lid: number;
  sm_lid: number;
  gid_tbl_len: number;
  max_msg_sz: number;
  active_width: string;
  active_speed: string;
  /** The netdev of the port's GIDs (RoCE), its MTU, and the RoCE MTU derived from it. */
  netdev: string | null;
  netdev_mtu: number | null;
  gids: GidInfo[];
}

/** One device with its attributes and ports. */
export interface DeviceInfo {
  name: string;
  node_type: string;
  transport: string;
  fw_ver: string;
  node_guid: string;
  sys_image_guid: string;
  vendor_id: number;
  vendor_part_id: number;
  hw_ver: number;
  phys_port_cnt: number;
  max_qp: number;
  max_qp_wr: number;
  max_cq: number;
  max_cqe: number;
  max_mr: number;
  max_mr_size: bigint;
  max_pd: number;
  max_sge: number;
  max_qp_rd_atom: number;
  max_qp_init_rd_atom: number;
  uverbs: string;
  ports: PortInfo[];
}

function ifName(ifindex: number): string | null {
  if (!ifindex) return null;
  const buf = new Uint8Array(64);
  if (libc().if_indextoname(ifindex, buf) === null) return null;
  return new TextDecoder().decode(buf.subarray(0, buf.indexOf(0)));
}

function netdevMtu(netdev: string): number | null {
  try {
    return Number(Deno.readTextFileSync(`/sys/class/net/${netdev}/mtu`).trim());
  } catch {
    return null;
  }
}

function cstr(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}

function readGids(ctx: Deno.PointerObject, ports: number): GidInfo[][] {
  const max = 1024;
  const buf = new Uint8Array(IBV_GID_ENTRY.$size * max);
  const n = Number(
    libibverbs()._ibv_query_gid_table(ctx, buf, BigInt(max), 0, BigInt(IBV_GID_ENTRY.$size)),
  );
  const out: GidInfo[][] = Array.from({ length: ports }, () => []);
  if (n < 0) return out;
  const dv = new DataView(buf.buffer);
  for (let i = 0; i < n; i++) {
    const o = i * IBV_GID_ENTRY.$size;
    const gid = buf.slice(o + IBV_GID_ENTRY.gid, o + IBV_GID_ENTRY.gid + 16);
    const type = dv.getUint32(o + IBV_GID_ENTRY.gid_type, true);
    const port = dv.getUint32(o + IBV_GID_ENTRY.port_num, true);
    const text = formatIp(gid, { keepMapped: true });
    const roce = type === 1 || type === 2;
    const entry: GidInfo = {
      index: dv.getUint32(o + IBV_GID_ENTRY.gid_index, true),
      gid: text,
      type: GID_TYPE_NAMES[type] ?? `type ${type}`,
      netdev: ifName(dv.getUint32(o + IBV_GID_ENTRY.ndev_ifindex, true)),
      ip: roce ? formatIp(gid) : null,
    };
    if (port >= 1 && port <= ports) out[port - 1].push(entry);
  }
  for (const list of out) list.sort((a, b) => a.index - b.index || a.type.localeCompare(b.type));
  return out;
}

function describe(dev: Deno.PointerObject): DeviceInfo {
  const ibv = libibverbs();
  const name = Deno.UnsafePointerView.getCString(ibv.ibv_get_device_name(dev)!);
  const dview = cView(dev, IBV_DEVICE.$size);
  const devBytes = new Uint8Array(dview.buffer, dview.byteOffset, IBV_DEVICE.$size);
  const ctx = ibv.ibv_open_device(dev);
  if (ctx === null) {
    const e = errno();
    throw new NativeError("ibv_open_device", e, {
      message: `Cannot open RDMA device '${name}': ${errnoName(e)} (${e}).`,
      hint: e === EACCES || e === EPERM
        ? "Opening /dev/infiniband/uverbs* needs read/write access: run as root or join the rdma group."
        : undefined,
    });
  }
  try {
    const attr = new Uint8Array(DA.$size);
    const rc = ibv.ibv_query_device(ctx, attr);
    if (rc !== 0) throw new NativeError("ibv_query_device", rc);
    const a = new DataView(attr.buffer);
    const guid = (off: number) => guidText(a.getBigUint64(off, true));
    const nports = a.getUint8(DA.phys_port_cnt);
    const gids = readGids(ctx, nports);
    const ports: PortInfo[] = [];
    for (let p = 1; p <= nports; p++) {
      const pa = new Uint8Array(64);
      const prc = ibv.ibv_query_port(ctx, p, pa);
      if (prc !== 0) throw new NativeError("ibv_query_port", prc);
      const v = new DataView(pa.buffer);
      const netdev = gids[p - 1].find((g) => g.netdev)?.netdev ?? null;
      ports.push({
        port: p,
        state: IBV_PORT_STATE_NAMES[v.getUint32(PA.state, true)] ??
          String(v.getUint32(PA.state, true)),
        phys_state: PHYS_STATE_NAMES[v.getUint8(PA.phys_state)] ??
          String(v.getUint8(PA.phys_state)),
        link_layer: LINK_LAYER_NAMES[v.getUint8(PA.link_layer)] ??
          String(v.getUint8(PA.link_layer)),
        max_mtu: mtuBytes(v.getUint32(PA.max_mtu, true)),
        active_mtu: mtuBytes(v.getUint32(PA.active_mtu, true)),
        lid: v.getUint16(PA.lid, true),
        sm_lid: v.getUint16(PA.sm_lid, true),
        gid_tbl_len: v.getInt32(PA.gid_tbl_len, true),
        max_msg_sz: v.getUint32(PA.max_msg_sz, true),
        active_width: WIDTH_NAMES[v.getUint8(PA.active_width)] ??
          String(v.getUint8(PA.active_width)),
        active_speed: SPEED_NAMES[v.getUint8(PA.active_speed)] ??
          String(v.getUint8(PA.active_speed)),
        netdev,
        netdev_mtu: netdev ? netdevMtu(netdev) : null,
        gids: gids[p - 1],
      });
    }
    return {
      name,
      node_type: NODE_TYPE_NAMES[dview.getInt32(IBV_DEVICE.node_type, true)] ?? "unknown",
      transport: TRANSPORT_NAMES[dview.getInt32(IBV_DEVICE.transport_type, true)] ?? "unknown",
      fw_ver: cstr(attr.subarray(DA.fw_ver, DA.fw_ver + 64)),
      node_guid: guid(DA.node_guid),
      sys_image_guid: guid(DA.sys_image_guid),
      vendor_id: a.getUint32(DA.vendor_id, true),
      vendor_part_id: a.getUint32(DA.vendor_part_id, true),
      hw_ver: a.getUint32(DA.hw_ver, true),
      phys_port_cnt: nports,
      max_qp: a.getInt32(DA.max_qp, true),
      max_qp_wr: a.getInt32(DA.max_qp_wr, true),
      max_cq: a.getInt32(DA.max_cq, true),
      max_cqe: a.getInt32(DA.max_cqe, true),
      max_mr: a.getInt32(DA.max_mr, true),
      max_mr_size: a.getBigUint64(DA.max_mr_size, true),
      max_pd: a.getInt32(DA.max_pd, true),
      max_sge: a.getInt32(DA.max_sge, true),
      max_qp_rd_atom: a.getInt32(DA.max_qp_rd_atom, true),
      max_qp_init_rd_atom: a.getInt32(DA.max_qp_init_rd_atom, true),
      uverbs: cstr(devBytes.subarray(IBV_DEVICE.dev_name, IBV_DEVICE.dev_name + 64)),
      ports,
    };
  } finally {
    ibv.ibv_close_device(ctx);
  }
}

/** Every RDMA device with its attributes, ports and GID tables. */
export function describeRdmaDevices(): DeviceInfo[] {
  return withDeviceList((devs) => devs.map(describe));
}
