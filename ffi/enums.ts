/**
 * Enum values of rdma-core 44 (infiniband/verbs.h, rdma/rdma_cma.h) and their names, for x86_64
 * Linux. Names are the C enumerator names without the common prefix, as the tools print them.
 */

/** enum rdma_cm_event_type (rdma_event_str prints RDMA_CM_EVENT_<name>). */
export const RDMA_CM_EVENT_TYPE = {
  ADDR_RESOLVED: 0,
  ADDR_ERROR: 1,
  ROUTE_RESOLVED: 2,
  ROUTE_ERROR: 3,
  CONNECT_REQUEST: 4,
  CONNECT_RESPONSE: 5,
  CONNECT_ERROR: 6,
  UNREACHABLE: 7,
  REJECTED: 8,
  ESTABLISHED: 9,
  DISCONNECTED: 10,
  DEVICE_REMOVAL: 11,
  MULTICAST_JOIN: 12,
  MULTICAST_ERROR: 13,
  ADDR_CHANGE: 14,
  TIMEWAIT_EXIT: 15,
} as const;

/** enum rdma_port_space. */
export const RDMA_PS_TCP = 0x106;

/** enum ibv_qp_state. */
export const IBV_QPS = {
  RESET: 0,
  INIT: 1,
  RTR: 2,
  RTS: 3,
  SQD: 4,
  SQE: 5,
  ERR: 6,
  UNKNOWN: 7,
} as const;

/** enum ibv_qp_type. */
export const IBV_QPT_RC = 2;

/** enum ibv_qp_attr_mask. */
export const IBV_QP_ATTR_MASK = {
  STATE: 1 << 0,
  CUR_STATE: 1 << 1,
  ACCESS_FLAGS: 1 << 3,
  PKEY_INDEX: 1 << 4,
  PORT: 1 << 5,
  AV: 1 << 7,
  PATH_MTU: 1 << 8,
  TIMEOUT: 1 << 9,
  RETRY_CNT: 1 << 10,
  RNR_RETRY: 1 << 11,
  RQ_PSN: 1 << 12,
  MAX_QP_RD_ATOMIC: 1 << 13,
  MIN_RNR_TIMER: 1 << 15,
  SQ_PSN: 1 << 16,
  MAX_DEST_RD_ATOMIC: 1 << 17,
  CAP: 1 << 19,
  DEST_QPN: 1 << 20,
} as const;

/** enum ibv_access_flags. */
export const IBV_ACCESS = {
  LOCAL_WRITE: 1,
  REMOTE_WRITE: 2,
  REMOTE_READ: 4,
  REMOTE_ATOMIC: 8,
} as const;

/** enum ibv_wr_opcode. */
export const IBV_WR = {
  RDMA_WRITE: 0,
  RDMA_WRITE_WITH_IMM: 1,
  SEND: 2,
  SEND_WITH_IMM: 3,
  RDMA_READ: 4,
} as const;

/** enum ibv_send_flags. */
export const IBV_SEND = { FENCE: 1, SIGNALED: 2, SOLICITED: 4, INLINE: 8 } as const;

/** enum ibv_wc_opcode (a receive has bit 0x80 set). */
export const IBV_WC_OPCODE = {
  SEND: 0,
  RDMA_WRITE: 1,
  RDMA_READ: 2,
  COMP_SWAP: 3,
  FETCH_ADD: 4,
  BIND_MW: 5,
  LOCAL_INV: 6,
  TSO: 7,
  RECV: 128,
  RECV_RDMA_WITH_IMM: 129,
} as const;

/** enum ibv_wc_status, by value: the C enumerator names (IBV_WC_<name>). */
export const IBV_WC_STATUS_NAMES = [
  "SUCCESS",
  "LOC_LEN_ERR",
  "LOC_QP_OP_ERR",
  "LOC_EEC_OP_ERR",
  "LOC_PROT_ERR",
  "WR_FLUSH_ERR",
  "MW_BIND_ERR",
  "BAD_RESP_ERR",
  "LOC_ACCESS_ERR",
  "REM_INV_REQ_ERR",
  "REM_ACCESS_ERR",
  "REM_OP_ERR",
  "RETRY_EXC_ERR",
  "RNR_RETRY_EXC_ERR",
  "LOC_RDD_VIOL_ERR",
  "REM_INV_RD_REQ_ERR",
  "REM_ABORT_ERR",
  "INV_EECN_ERR",
  "INV_EEC_STATE_ERR",
  "FATAL_ERR",
  "RESP_TIMEOUT_ERR",
  "GENERAL_ERR",
  "TM_ERR",
  "TM_RNDV_INCOMPLETE",
] as const;

/** The enum ibv_wc_status values the code tests for, by their C names (IBV_WC_<name>). */
export const IBV_WC_STATUS = {
  SUCCESS: 0,
  WR_FLUSH_ERR: 5,
  REM_ACCESS_ERR: 10,
  RETRY_EXC_ERR: 12,
  RNR_RETRY_EXC_ERR: 13,
} as const;

/** IBV_WC_<name> for a work-completion status value. */
export function wcStatusName(status: number): string {
  const n = IBV_WC_STATUS_NAMES[status];
  return n ? `IBV_WC_${n}` : `IBV_WC_STATUS_${status}`;
}

/** RDMA_CM_EVENT_<name> for an event type value, as rdma_event_str() prints it. */
export function cmEventName(event: number): string {
  for (const [name, v] of Object.entries(RDMA_CM_EVENT_TYPE)) if (v === event) return name;
  return `UNKNOWN_EVENT_${event}`;
}

/** The IB CM reject reasons the code tells apart (include/rdma/ib_cm.h enum ib_cm_rej_reason). */
export const IB_CM_REJ = {
  /** No listener on the service ID (address and port): what rdma_cm sends for a closed port. */
  INVALID_SERVICE_ID: 8,
  /** The listener rejected with its own private data (rdma_reject). */
  CONSUMER_DEFINED: 28,
} as const;

/** IB CM reject reasons (include/rdma/ib_cm.h enum ib_cm_rej_reason). */
export const IB_CM_REJ_REASON: Readonly<Record<number, string>> = {
  1: "NO_QP",
  2: "NO_EEC",
  3: "NO_RESOURCES",
  4: "TIMEOUT",
  5: "UNSUPPORTED",
  6: "INVALID_COMM_ID",
  7: "INVALID_COMM_INSTANCE",
  8: "INVALID_SERVICE_ID",
  9: "INVALID_TRANSPORT_TYPE",
  10: "STALE_CONN",
  11: "RDC_NOT_EXIST",
  12: "INVALID_GID",
  13: "INVALID_LID",
  14: "INVALID_SL",
  15: "INVALID_TRAFFIC_CLASS",
  16: "INVALID_HOP_LIMIT",
  17: "INVALID_PACKET_RATE",
  24: "PORT_CM_REDIRECT",
  25: "PORT_REDIRECT",
  26: "INVALID_MTU",
  27: "INSUFFICIENT_RESP_RESOURCES",
  28: "CONSUMER_DEFINED",
  29: "INVALID_RNR_RETRY",
  30: "DUPLICATE_LOCAL_COMM_ID",
  31: "INVALID_CLASS_VERSION",
  32: "INVALID_FLOW_LABEL",
  33: "INVALID_ALT_FLOW_LABEL",
  35: "VENDOR_OPTION_NOT_SUPPORTED",
};

/** IBV_QPS_<name> for a QP state value. */
export function qpStateName(state: number): string {
  for (const [name, v] of Object.entries(IBV_QPS)) if (v === state) return name;
  return `STATE_${state}`;
}

/** enum ibv_mtu → bytes (1 → 256 … 5 → 4096); 0 for an unknown value. */
export function mtuBytes(mtu: number): number {
  return mtu >= 1 && mtu <= 5 ? 128 << mtu : 0;
}

/** enum ibv_port_state names as ibv_devinfo prints them (PORT_<name>). */
export const IBV_PORT_STATE_NAMES: Readonly<Record<number, string>> = {
  0: "PORT_NOP",
  1: "PORT_DOWN",
  2: "PORT_INIT",
  3: "PORT_ARMED",
  4: "PORT_ACTIVE",
  5: "PORT_ACTIVE_DEFER",
};

/** Port physical states as ibv_devinfo and `rdma link` print them. */
export const PHYS_STATE_NAMES: Readonly<Record<number, string>> = {
  1: "SLEEP",
  2: "POLLING",
  3: "DISABLED",
  4: "PORT_CONFIGURATION_TRAINING",
  5: "LINK_UP",
  6: "LINK_ERROR_RECOVERY",
  7: "PHY_TEST",
};

/** IBV_LINK_LAYER_*: 0 unspecified, 1 InfiniBand, 2 Ethernet. */
export const LINK_LAYER_NAMES: Readonly<Record<number, string>> = {
  0: "Unspecified",
  1: "InfiniBand",
  2: "Ethernet",
};

/** enum ibv_gid_type as _ibv_query_gid_ex reports it, with the sysfs wording. */
export const GID_TYPE_NAMES: Readonly<Record<number, string>> = {
  0: "IB",
  1: "RoCE v1",
  2: "RoCE v2",
};

/** ibv_port_attr.active_width → lanes, as ibv_devinfo prints it. */
export const WIDTH_NAMES: Readonly<Record<number, string>> = {
  1: "1X",
  2: "4X",
  4: "8X",
  8: "12X",
  16: "2X",
};

/** ibv_port_attr.active_speed → per-lane rate, as ibv_devinfo prints it. */
export const SPEED_NAMES: Readonly<Record<number, string>> = {
  0: "0.0 Gbps",
  1: "2.5 Gbps",
  2: "5.0 Gbps",
  4: "10.0 Gbps",
  8: "10.0 Gbps",
  16: "14.0 Gbps",
  32: "25.0 Gbps",
  64: "50.0 Gbps",
  128: "100.0 Gbps",
};

/** enum ibv_node_type / ibv_transport_type names. */
export const NODE_TYPE_NAMES: Readonly<Record<number, string>> = {
  1: "CA",
  2: "SWITCH",
  3: "ROUTER",
  4: "RNIC",
  5: "USNIC",
  6: "USNIC_UDP",
  7: "UNSPECIFIED",
};
export const TRANSPORT_NAMES: Readonly<Record<number, string>> = {
  0: "InfiniBand",
  1: "iWARP",
  2: "usNIC",
  3: "usNIC UDP",
  4: "unspecified",
};

/*
 * Netlink (Linux uapi <linux/netlink.h>) and the RDMA subsystem's device interface
 * (<rdma/rdma_netlink.h>, RDMA_NL_NLDEV): what `rdma resource show cm_id` asks the kernel.
 */

/** nlmsghdr.nlmsg_flags (NLM_F_<name>). */
export const NLM_F = { REQUEST: 0x1, MULTI: 0x2, ACK: 0x4, DUMP: 0x300 } as const;

/** Control message types (NLMSG_<name>). */
export const NLMSG = { NOOP: 1, ERROR: 2, DONE: 3 } as const;

/** Flag bits in nlattr.nla_type (NLA_F_<name>); the rest is the attribute type. */
export const NLA_F = { NESTED: 1 << 15, NET_BYTEORDER: 1 << 14 } as const;

/** The RDMA netlink client of the device interface; nlmsg_type = client << 10 | op. */
export const RDMA_NL_NLDEV = 5;

/** enum rdma_nldev_command (RDMA_NLDEV_CMD_<name>), the ones nvmeof sends. */
export const RDMA_NLDEV_CMD = { GET: 1, RES_CM_ID_GET: 11 } as const;

/** enum rdma_nldev_attr (RDMA_NLDEV_ATTR_<name>), the ones nvmeof reads. ABI: never renumbered. */
export const RDMA_NLDEV_ATTR = {
  DEV_INDEX: 1,
  DEV_NAME: 2,
  PORT_INDEX: 3,
  RES_STATE: 27,
  RES_PID: 28,
  RES_KERN_NAME: 29,
  RES_CM_ID: 30,
  RES_CM_ID_ENTRY: 31,
  RES_PS: 32,
  RES_SRC_ADDR: 33,
  RES_DST_ADDR: 34,
  RES_CM_IDN: 63,
} as const;

/**
 * The kernel's enum rdma_cm_state (drivers/infiniband/core/cma_priv.h, not uapi, but stable and
 * printed by iproute2's `rdma resource show cm_id` under these names), by value.
 */
export const RDMA_CM_STATE_NAMES = [
  "IDLE",
  "ADDR_QUERY",
  "ADDR_RESOLVED",
  "ROUTE_QUERY",
  "ROUTE_RESOLVED",
  "CONNECT",
  "DISCONNECT",
  "ADDR_BOUND",
  "LISTEN",
  "DEVICE_REMOVAL",
  "DESTROYING",
] as const;
