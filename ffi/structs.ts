/**
 * Struct layouts of rdma-core 44 on x86_64 Linux, as offset tables: one table per struct, keyed by
 * the C member designator (`"wr.rdma.rkey"` for nested members), with `$size` = sizeof. Read and
 * write them little-endian through a DataView unless a field is marked big-endian (BE).
 *
 * Every table is checked against the installed headers by tests/unit/abi_conformance_test.ts,
 * which compiles a C probe printing sizeof/offsetof for every entry here. Only the fields the code
 * uses are listed; padding is spelled out in the declarations. The libc and socket structs are in
 * ffi/libc_structs.ts.
 */
import { LIBC_ABI_TABLES } from "./libc_structs.ts";

/**
 * struct rdma_event_channel { int fd; };
 */
export const RDMA_EVENT_CHANNEL = { $size: 4, fd: 0 } as const;

/**
 * struct rdma_cm_id {
 *   struct ibv_context *verbs;              // 0
 *   struct rdma_event_channel *channel;     // 8
 *   void *context;                          // 16
 *   struct ibv_qp *qp;                      // 24
 *   struct rdma_route route;                // 32: addr { src_addr(128) @32, dst_addr(128) @160,
 *                                           //      ibaddr { sgid @288, dgid @304, pkey @320 } },
 *                                           //      path_rec @328, num_paths @336
 *   enum rdma_port_space ps;                // 344
 *   uint8_t port_num;                       // 348, 3 bytes padding
 *   struct rdma_cm_event *event;            // 352
 *   struct ibv_comp_channel *send_cq_channel; struct ibv_cq *send_cq;   // 360, 368
 *   struct ibv_comp_channel *recv_cq_channel; struct ibv_cq *recv_cq;   // 376, 384
 *   struct ibv_srq *srq; struct ibv_pd *pd;  // 392, 400
 *   enum ibv_qp_type qp_type;               // 408, 4 bytes padding
 * };  // 416
 */
export const RDMA_CM_ID = {
  $size: 416,
  verbs: 0,
  channel: 8,
  context: 16,
  qp: 24,
  "route.addr.src_addr": 32,
  "route.addr.dst_addr": 160,
  "route.addr.addr.ibaddr.sgid": 288,
  "route.addr.addr.ibaddr.dgid": 304,
  ps: 344,
  port_num: 348,
  event: 352,
  pd: 400,
  qp_type: 408,
} as const;

/**
 * struct rdma_conn_param {
 *   const void *private_data;       // 0
 *   uint8_t private_data_len;       // 8
 *   uint8_t responder_resources;    // 9
 *   uint8_t initiator_depth;        // 10
 *   uint8_t flow_control;           // 11
 *   uint8_t retry_count;            // 12 (ignored when accepting)
 *   uint8_t rnr_retry_count;        // 13
 *   uint8_t srq;                    // 14, 1 byte padding
 *   uint32_t qp_num;                // 16, 4 bytes padding
 * };  // 24
 */
export const RDMA_CONN_PARAM = {
  $size: 24,
  private_data: 0,
  private_data_len: 8,
  responder_resources: 9,
  initiator_depth: 10,
  flow_control: 11,
  retry_count: 12,
  rnr_retry_count: 13,
  srq: 14,
  qp_num: 16,
} as const;

/**
 * struct rdma_cm_event {
 *   struct rdma_cm_id *id;          // 0
 *   struct rdma_cm_id *listen_id;   // 8
 *   enum rdma_cm_event_type event;  // 16
 *   int status;                     // 20 (-errno, or the IB CM reject reason for REJECTED)
 *   union { struct rdma_conn_param conn; struct rdma_ud_param ud; } param;  // 24 (56)
 * };  // 80
 */
export const RDMA_CM_EVENT = {
  $size: 80,
  id: 0,
  listen_id: 8,
  event: 16,
  status: 20,
  "param.conn.private_data": 24,
  "param.conn.private_data_len": 32,
  "param.conn.responder_resources": 33,
  "param.conn.initiator_depth": 34,
  "param.conn.qp_num": 40,
} as const;

/**
 * struct ibv_device {
 *   struct _ibv_device_ops _ops;          // 0 (16)
 *   enum ibv_node_type node_type;         // 16
 *   enum ibv_transport_type transport_type; // 20
 *   char name[64];                        // 24
 *   char dev_name[64];                    // 88
 *   char dev_path[256];                   // 152
 *   char ibdev_path[256];                 // 408
 * };  // 664
 */
export const IBV_DEVICE = {
  $size: 664,
  node_type: 16,
  transport_type: 20,
  name: 24,
  dev_name: 88,
  dev_path: 152,
  ibdev_path: 408,
} as const;

/**
 * struct ibv_context {
 *   struct ibv_device *device;            // 0
 *   struct ibv_context_ops ops;           // 8 (256): poll_cq @96, req_notify_cq @104,
 *                                         //   post_send @208, post_recv @216 (absolute)
 *   int cmd_fd; int async_fd;             // 264, 268
 *   int num_comp_vectors;                 // 272, 4 bytes padding
 *   pthread_mutex_t mutex;                // 280 (40)
 *   void *abi_compat;                     // 320
 * };  // 328
 */
export const IBV_CONTEXT = {
  $size: 328,
  device: 0,
  "ops.poll_cq": 96,
  "ops.req_notify_cq": 104,
  "ops.post_send": 208,
  "ops.post_recv": 216,
  cmd_fd: 264,
  async_fd: 268,
  num_comp_vectors: 272,
  abi_compat: 320,
} as const;

/**
 * struct ibv_device_attr {
 *   char fw_ver[64];                      // 0
 *   __be64 node_guid; __be64 sys_image_guid;  // 64, 72 (BE)
 *   uint64_t max_mr_size; uint64_t page_size_cap;  // 80, 88
 *   uint32_t vendor_id, vendor_part_id, hw_ver;    // 96, 100, 104
 *   int max_qp, max_qp_wr;                // 108, 112
 *   unsigned int device_cap_flags;        // 116
 *   int max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd;  // 120 … 140
 *   int max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom;  // 144 … 156
 *   … (ee, rdd, mw, raw qp, mcast, ah, fmr, srq limits) …
 *   uint16_t max_pkeys;                   // 224
 *   uint8_t local_ca_ack_delay;           // 226
 *   uint8_t phys_port_cnt;                // 227, 4 bytes padding
 * };  // 232
 */
export const IBV_DEVICE_ATTR = {
  $size: 232,
  fw_ver: 0,
  node_guid: 64,
  sys_image_guid: 72,
  max_mr_size: 80,
  vendor_id: 96,
  vendor_part_id: 100,
  hw_ver: 104,
  max_qp: 108,
  max_qp_wr: 112,
  max_sge: 120,
  max_cq: 128,
  max_cqe: 132,
  max_mr: 136,
  max_pd: 140,
  max_qp_rd_atom: 144,
  max_qp_init_rd_atom: 156,
  max_pkeys: 224,
  phys_port_cnt: 227,
} as const;

/**
 * struct ibv_port_attr {
 *   enum ibv_port_state state;            // 0
 *   enum ibv_mtu max_mtu, active_mtu;     // 4, 8
 *   int gid_tbl_len;                      // 12
 *   uint32_t port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr;  // 16 … 28
 *   uint16_t pkey_tbl_len, lid, sm_lid;   // 32, 34, 36
 *   uint8_t lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply;  // 38 … 42
 *   uint8_t active_width, active_speed, phys_state, link_layer, flags;  // 43 … 47
 *   uint16_t port_cap_flags2;             // 48, 2 bytes padding
 * };  // 52. The exported ibv_query_port fills only the first 48 bytes (_compat_ibv_port_attr).
 */
export const IBV_PORT_ATTR = {
  $size: 52,
  state: 0,
  max_mtu: 4,
  active_mtu: 8,
  gid_tbl_len: 12,
  port_cap_flags: 16,
  max_msg_sz: 20,
  pkey_tbl_len: 32,
  lid: 34,
  sm_lid: 36,
  lmc: 38,
  active_width: 43,
  active_speed: 44,
  phys_state: 45,
  link_layer: 46,
} as const;

/**
 * struct ibv_gid_entry {
 *   union ibv_gid gid;       // 0 (16, network order)
 *   uint32_t gid_index;      // 16
 *   uint32_t port_num;       // 20
 *   uint32_t gid_type;       // 24 (enum ibv_gid_type: 0 IB, 1 RoCE v1, 2 RoCE v2)
 *   uint32_t ndev_ifindex;   // 28
 * };  // 32
 */
export const IBV_GID_ENTRY = {
  $size: 32,
  gid: 0,
  gid_index: 16,
  port_num: 20,
  gid_type: 24,
  ndev_ifindex: 28,
} as const;

/**
 * struct ibv_pd { struct ibv_context *context; uint32_t handle; };  // 16
 */
export const IBV_PD = { $size: 16, context: 0, handle: 8 } as const;

/**
 * struct ibv_mr {
 *   struct ibv_context *context; struct ibv_pd *pd;  // 0, 8
 *   void *addr; size_t length;                       // 16, 24
 *   uint32_t handle, lkey, rkey;                     // 32, 36, 40, 4 bytes padding
 * };  // 48
 */
export const IBV_MR = {
  $size: 48,
  context: 0,
  pd: 8,
  addr: 16,
  length: 24,
  handle: 32,
  lkey: 36,
  rkey: 40,
} as const;

/**
 * struct ibv_comp_channel { struct ibv_context *context; int fd; int refcnt; };  // 16
 */
export const IBV_COMP_CHANNEL = { $size: 16, context: 0, fd: 8, refcnt: 12 } as const;

/**
 * struct ibv_cq {
 *   struct ibv_context *context; struct ibv_comp_channel *channel; void *cq_context;  // 0, 8, 16
 *   uint32_t handle; int cqe;                        // 24, 28
 *   pthread_mutex_t mutex; pthread_cond_t cond;      // 32 (40), 72 (48)
 *   uint32_t comp_events_completed, async_events_completed;  // 120, 124
 * };  // 128
 */
export const IBV_CQ = { $size: 128, context: 0, channel: 8, cq_context: 16, cqe: 28 } as const;

/**
 * struct ibv_qp {
 *   struct ibv_context *context; void *qp_context; struct ibv_pd *pd;  // 0, 8, 16
 *   struct ibv_cq *send_cq, *recv_cq; struct ibv_srq *srq;           // 24, 32, 40
 *   uint32_t handle, qp_num;                                          // 48, 52
 *   enum ibv_qp_state state; enum ibv_qp_type qp_type;                // 56, 60
 *   pthread_mutex_t mutex; pthread_cond_t cond; uint32_t events_completed;  // 64, 104, 152
 * };  // 160
 */
export const IBV_QP = {
  $size: 160,
  context: 0,
  pd: 16,
  send_cq: 24,
  recv_cq: 32,
  qp_num: 52,
  state: 56,
  qp_type: 60,
} as const;

/**
 * struct ibv_qp_init_attr {
 *   void *qp_context; struct ibv_cq *send_cq, *recv_cq; struct ibv_srq *srq;  // 0, 8, 16, 24
 *   struct ibv_qp_cap { uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge,
 *                       max_inline_data; } cap;                               // 32 (20)
 *   enum ibv_qp_type qp_type;                                                 // 52
 *   int sq_sig_all;                                                           // 56, 4 bytes padding
 * };  // 64
 */
export const IBV_QP_INIT_ATTR = {
  $size: 64,
  qp_context: 0,
  send_cq: 8,
  recv_cq: 16,
  srq: 24,
  "cap.max_send_wr": 32,
  "cap.max_recv_wr": 36,
  "cap.max_send_sge": 40,
  "cap.max_recv_sge": 44,
  "cap.max_inline_data": 48,
  qp_type: 52,
  sq_sig_all: 56,
} as const;

/**
 * struct ibv_qp_attr {
 *   enum ibv_qp_state qp_state, cur_qp_state;   // 0, 4
 *   enum ibv_mtu path_mtu; enum ibv_mig_state path_mig_state;  // 8, 12
 *   uint32_t qkey, rq_psn, sq_psn, dest_qp_num; // 16, 20, 24, 28
 *   unsigned int qp_access_flags;               // 32
 *   struct ibv_qp_cap cap;                      // 36 (20)
 *   struct ibv_ah_attr ah_attr;                 // 56 (32): grh { dgid @56, flow_label @72,
 *                                               //   sgid_index @76, hop_limit @77, traffic_class @78 },
 *                                               //   dlid @80, sl @82, src_path_bits @83, static_rate @84,
 *                                               //   is_global @85, port_num @86
 *   struct ibv_ah_attr alt_ah_attr;             // 88 (32)
 *   uint16_t pkey_index, alt_pkey_index;        // 120, 122
 *   uint8_t en_sqd_async_notify, sq_draining;   // 124, 125
 *   uint8_t max_rd_atomic, max_dest_rd_atomic;  // 126, 127
 *   uint8_t min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry;  // 128 … 132
 *   uint8_t alt_port_num, alt_timeout;          // 133, 134, 1 byte padding
 *   uint32_t rate_limit;                        // 136, 4 bytes padding
 * };  // 144
 */
export const IBV_QP_ATTR = {
  $size: 144,
  qp_state: 0,
  cur_qp_state: 4,
  path_mtu: 8,
  rq_psn: 20,
  sq_psn: 24,
  dest_qp_num: 28,
  qp_access_flags: 32,
  "ah_attr.grh.dgid": 56,
  "ah_attr.grh.sgid_index": 76,
  "ah_attr.grh.hop_limit": 77,
  "ah_attr.is_global": 85,
  "ah_attr.port_num": 86,
  pkey_index: 120,
  max_rd_atomic: 126,
  max_dest_rd_atomic: 127,
  min_rnr_timer: 128,
  port_num: 129,
  timeout: 130,
  retry_cnt: 131,
  rnr_retry: 132,
} as const;

/**
 * struct ibv_sge { uint64_t addr; uint32_t length; uint32_t lkey; };  // 16
 */
export const IBV_SGE = { $size: 16, addr: 0, length: 8, lkey: 12 } as const;

/**
 * struct ibv_send_wr {
 *   uint64_t wr_id; struct ibv_send_wr *next; struct ibv_sge *sg_list;  // 0, 8, 16
 *   int num_sge; enum ibv_wr_opcode opcode;                             // 24, 28
 *   unsigned int send_flags;                                           // 32
 *   union { __be32 imm_data; uint32_t invalidate_rkey; };               // 36
 *   union { struct { uint64_t remote_addr; uint32_t rkey; } rdma; … } wr;  // 40 (32)
 *   union { struct { uint32_t remote_srqn; } xrc; } qp_type;            // 72, 4 bytes padding
 *   union { struct { … } bind_mw; struct { … } tso; };                  // 80 (48)
 * };  // 128
 */
export const IBV_SEND_WR = {
  $size: 128,
  wr_id: 0,
  next: 8,
  sg_list: 16,
  num_sge: 24,
  opcode: 28,
  send_flags: 32,
  imm_data: 36,
  "wr.rdma.remote_addr": 40,
  "wr.rdma.rkey": 48,
} as const;

/**
 * struct ibv_recv_wr { uint64_t wr_id; struct ibv_recv_wr *next; struct ibv_sge *sg_list;
 *                      int num_sge; };  // 32 (4 bytes padding)
 */
export const IBV_RECV_WR = { $size: 32, wr_id: 0, next: 8, sg_list: 16, num_sge: 24 } as const;

/**
 * struct ibv_wc {
 *   uint64_t wr_id;                        // 0
 *   enum ibv_wc_status status;             // 8
 *   enum ibv_wc_opcode opcode;             // 12
 *   uint32_t vendor_err, byte_len;         // 16, 20
 *   union { __be32 imm_data; uint32_t invalidated_rkey; };  // 24
 *   uint32_t qp_num, src_qp;               // 28, 32
 *   unsigned int wc_flags;                 // 36
 *   uint16_t pkey_index, slid;             // 40, 42
 *   uint8_t sl, dlid_path_bits;            // 44, 45, 2 bytes padding
 * };  // 48
 */
export const IBV_WC = {
  $size: 48,
  wr_id: 0,
  status: 8,
  opcode: 12,
  vendor_err: 16,
  byte_len: 20,
  imm_data: 24,
  qp_num: 28,
  src_qp: 32,
  wc_flags: 36,
} as const;

/** Every table above and those of ffi/libc_structs.ts, by C type, for the ABI conformance probe. */
export const ABI_TABLES: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  "struct rdma_event_channel": RDMA_EVENT_CHANNEL,
  "struct rdma_cm_id": RDMA_CM_ID,
  "struct rdma_conn_param": RDMA_CONN_PARAM,
  "struct rdma_cm_event": RDMA_CM_EVENT,
  "struct ibv_device": IBV_DEVICE,
  "struct ibv_context": IBV_CONTEXT,
  "struct ibv_device_attr": IBV_DEVICE_ATTR,
  "struct ibv_port_attr": IBV_PORT_ATTR,
  "struct ibv_gid_entry": IBV_GID_ENTRY,
  "struct ibv_pd": IBV_PD,
  "struct ibv_mr": IBV_MR,
  "struct ibv_comp_channel": IBV_COMP_CHANNEL,
  "struct ibv_cq": IBV_CQ,
  "struct ibv_qp": IBV_QP,
  "struct ibv_qp_init_attr": IBV_QP_INIT_ATTR,
  "struct ibv_qp_attr": IBV_QP_ATTR,
  "struct ibv_sge": IBV_SGE,
  "struct ibv_send_wr": IBV_SEND_WR,
  "struct ibv_recv_wr": IBV_RECV_WR,
  "struct ibv_wc": IBV_WC,
  ...LIBC_ABI_TABLES,
};
