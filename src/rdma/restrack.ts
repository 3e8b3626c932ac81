/**
 * The RDMA core's resource tracking, read over netlink (the RDMA_NL_NLDEV client of NETLINK_RDMA),
 * as `rdma resource show cm_id` does: one dump of the devices, then per device a dump of its
 * connection manager ids. Every queue of a kernel user such as nvmet-rdma is a CM id, with its
 * state and its source and destination addresses, which is how a storage server sees the hosts
 * connected to it from other machines.
 */
import {
  RDMA_CM_STATE_NAMES,
  RDMA_NL_NLDEV,
  RDMA_NLDEV_ATTR,
  RDMA_NLDEV_CMD,
} from "../../ffi/enums.ts";
import { NETLINK_RDMA } from "../../ffi/libc.ts";
import { parseSockaddr, type SocketAddress } from "../net/address.ts";
import {
  attrString,
  attrTable,
  attrU32,
  attrU8,
  type NetlinkMessage,
  parseAttrs,
  u32Attr,
} from "../net/netlink.ts";
import { NetlinkSocket } from "../net/socket.ts";

/** An RDMA device as the kernel numbers it. */
export interface RdmaDeviceIndex {
  index: number;
  name: string;
}

/** One connection manager id. */
export interface CmIdEntry {
  /** The RDMA device it is bound to, and the port (0 while it is bound to none). */
  device: string;
  port: number;
  /** The state's name as the rdma tool prints it (CONNECT, LISTEN …). */
  state: string;
  /** The port space (RDMA_PS_TCP = 0x106 …). */
  ps: number;
  /** The kernel module that created it (`nvmet_rdma`), or the user process's pid. */
  kernName?: string;
  pid?: number;
  src?: SocketAddress;
  dst?: SocketAddress;
}

/** nlmsg_type of an RDMA_NL_NLDEV command. */
export function nldevType(command: number): number {
  return (RDMA_NL_NLDEV << 10) | command;
}

/** The attributes of a CM id dump request: the device index (the kernel requires one). */
export function cmIdDumpAttrs(devIndex: number): Uint8Array[] {
  return [u32Attr(RDMA_NLDEV_ATTR.DEV_INDEX, devIndex)];
}

/** The devices in the answer to an RDMA_NLDEV_CMD_GET dump. */
export function parseDevices(messages: NetlinkMessage[]): RdmaDeviceIndex[] {
  const out: RdmaDeviceIndex[] = [];
  for (const m of messages) {
    const t = attrTable(parseAttrs(m.payload));
    const index = attrU32(t.get(RDMA_NLDEV_ATTR.DEV_INDEX));
    const name = attrString(t.get(RDMA_NLDEV_ATTR.DEV_NAME));
    if (index !== undefined && name !== undefined) out.push({ index, name });
  }
  return out;
}

/** The CM ids in the answer to an RDMA_NLDEV_CMD_RES_CM_ID_GET dump. */
export function parseCmIds(messages: NetlinkMessage[]): CmIdEntry[] {
  const out: CmIdEntry[] = [];
  for (const m of messages) {
    const t = attrTable(parseAttrs(m.payload));
    const device = attrString(t.get(RDMA_NLDEV_ATTR.DEV_NAME)) ?? "";
    const table = t.get(RDMA_NLDEV_ATTR.RES_CM_ID);
    if (!table) continue;
    for (const entry of parseAttrs(table.payload)) {
      if (entry.type !== RDMA_NLDEV_ATTR.RES_CM_ID_ENTRY) continue;
      const e = attrTable(parseAttrs(entry.payload));
      const state = attrU8(e.get(RDMA_NLDEV_ATTR.RES_STATE));
      const ps = attrU32(e.get(RDMA_NLDEV_ATTR.RES_PS));
      if (state === undefined || ps === undefined) continue;
      const src = e.get(RDMA_NLDEV_ATTR.RES_SRC_ADDR);
      const dst = e.get(RDMA_NLDEV_ATTR.RES_DST_ADDR);
      const kernName = attrString(e.get(RDMA_NLDEV_ATTR.RES_KERN_NAME));
      const pid = attrU32(e.get(RDMA_NLDEV_ATTR.RES_PID));
      out.push({
        device,
        port: attrU32(e.get(RDMA_NLDEV_ATTR.PORT_INDEX)) ?? 0,
        state: RDMA_CM_STATE_NAMES[state] ?? "UNKNOWN",
        ps,
        ...(kernName !== undefined ? { kernName } : {}),
        ...(pid !== undefined ? { pid } : {}),
        ...(src ? { src: parseSockaddr(src.payload) } : {}),
        ...(dst ? { dst: parseSockaddr(dst.payload) } : {}),
      });
    }
  }
  return out;
}

/**
 * Every CM id of every RDMA device of this kernel. Throws NativeError when the RDMA netlink
 * interface is missing (ib_core not loaded: socket() fails with EPROTONOSUPPORT) or refuses.
 */
export function readCmIds(): CmIdEntry[] {
  using sock = new NetlinkSocket(NETLINK_RDMA);
  const devices = parseDevices(
    sock.dump(nldevType(RDMA_NLDEV_CMD.GET), [], "RDMA_NLDEV_CMD_GET"),
  );
  return devices.flatMap((d) =>
    parseCmIds(
      sock.dump(
        nldevType(RDMA_NLDEV_CMD.RES_CM_ID_GET),
        cmIdDumpAttrs(d.index),
        "RDMA_NLDEV_CMD_RES_CM_ID_GET",
      ),
    )
  );
}
