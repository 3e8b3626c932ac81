/**
 * libibverbs.so.1: the exported symbols nvmeof calls, keyed by their exact C names, with each C
 * declaration in a comment. The data-path verbs (ibv_post_send, ibv_post_recv, ibv_poll_cq,
 * ibv_req_notify_cq) are header inlines, not exports: they are reached through ibv_context.ops
 * (the slot offsets are IBV_CONTEXT["ops.*"] in ffi/structs.ts; src/rdma/verbs.ts calls them). Return conventions: constructors give NULL + errno; the rest give 0 or a
 * positive errno value.
 */
import { lazy, openLibrary, type Symbols } from "./loader.ts";

export const LIBIBVERBS_SYMBOLS = {
  /** struct ibv_device **ibv_get_device_list(int *num_devices); */
  ibv_get_device_list: { parameters: ["buffer"], result: "pointer" },
  /** void ibv_free_device_list(struct ibv_device **list); */
  ibv_free_device_list: { parameters: ["pointer"], result: "void" },
  /** const char *ibv_get_device_name(struct ibv_device *device); */
  ibv_get_device_name: { parameters: ["pointer"], result: "pointer" },
  /** __be64 ibv_get_device_guid(struct ibv_device *device); */
  ibv_get_device_guid: { parameters: ["pointer"], result: "u64" },
  /** struct ibv_context *ibv_open_device(struct ibv_device *device); */
  ibv_open_device: { parameters: ["pointer"], result: "pointer" },
  /** int ibv_close_device(struct ibv_context *context); */
  ibv_close_device: { parameters: ["pointer"], result: "i32" },
  /** int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr); */
  ibv_query_device: { parameters: ["pointer", "buffer"], result: "i32" },
  /**
   * int ibv_query_port(struct ibv_context *context, uint8_t port_num,
   *                    struct _compat_ibv_port_attr *port_attr);  (fills 48 bytes)
   */
  ibv_query_port: { parameters: ["pointer", "u8", "buffer"], result: "i32" },
  /**
   * ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
   *                              size_t max_entries, uint32_t flags, size_t entry_size);
   */
  _ibv_query_gid_table: {
    parameters: ["pointer", "buffer", "usize", "u32", "usize"],
    result: "isize",
  },
  /** struct ibv_pd *ibv_alloc_pd(struct ibv_context *context); */
  ibv_alloc_pd: { parameters: ["pointer"], result: "pointer" },
  /** int ibv_dealloc_pd(struct ibv_pd *pd); */
  ibv_dealloc_pd: { parameters: ["pointer"], result: "i32" },
  /** struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access); */
  ibv_reg_mr: { parameters: ["pointer", "pointer", "usize", "i32"], result: "pointer" },
  /** int ibv_dereg_mr(struct ibv_mr *mr); */
  ibv_dereg_mr: { parameters: ["pointer"], result: "i32" },
  /** struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context); */
  ibv_create_comp_channel: { parameters: ["pointer"], result: "pointer" },
  /** int ibv_destroy_comp_channel(struct ibv_comp_channel *channel); */
  ibv_destroy_comp_channel: { parameters: ["pointer"], result: "i32" },
  /**
   * struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
   *                              struct ibv_comp_channel *channel, int comp_vector);
   */
  ibv_create_cq: {
    parameters: ["pointer", "i32", "pointer", "pointer", "i32"],
    result: "pointer",
  },
  /** int ibv_destroy_cq(struct ibv_cq *cq); */
  ibv_destroy_cq: { parameters: ["pointer"], result: "i32" },
  /** int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context); */
  ibv_get_cq_event: { parameters: ["pointer", "buffer", "buffer"], result: "i32" },
  /** void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents); */
  ibv_ack_cq_events: { parameters: ["pointer", "u32"], result: "void" },
  /** struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr); */
  ibv_create_qp: { parameters: ["pointer", "buffer"], result: "pointer" },
  /** int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask); */
  ibv_modify_qp: { parameters: ["pointer", "buffer", "i32"], result: "i32" },
  /**
   * int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
   *                  struct ibv_qp_init_attr *init_attr);
   */
  ibv_query_qp: { parameters: ["pointer", "buffer", "i32", "buffer"], result: "i32" },
  /** int ibv_destroy_qp(struct ibv_qp *qp); */
  ibv_destroy_qp: { parameters: ["pointer"], result: "i32" },
  /** const char *ibv_wc_status_str(enum ibv_wc_status status); */
  ibv_wc_status_str: { parameters: ["i32"], result: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The libibverbs symbols, opened on first use (EnvironmentError when rdma-core is missing). */
export const libibverbs: () => Symbols<typeof LIBIBVERBS_SYMBOLS> = lazy(
  () =>
    openLibrary({
      name: "libibverbs",
      soname: "libibverbs.so.1",
      env: "NVMEOF_LIBIBVERBS",
      install: "rdma-core's libibverbs1 and ibverbs-providers (apt-get install ibverbs-providers)",
    }, LIBIBVERBS_SYMBOLS),
);
