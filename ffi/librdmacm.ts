/**
 * librdmacm.so.1: the exported RDMA connection manager symbols nvmeof calls, keyed by their exact
 * C names, with each C declaration in a comment. Every call returns 0, or -1 with errno set
 * (constructors: NULL + errno); read errno() in the same synchronous tick. Event waits never use
 * the blocking rdma_get_cm_event: the channel fd is made non-blocking and polled (src/wait.ts).
 */
import { lazy, openLibrary, type Symbols } from "./loader.ts";

export const LIBRDMACM_SYMBOLS = {
  /** struct rdma_event_channel *rdma_create_event_channel(void); */
  rdma_create_event_channel: { parameters: [], result: "pointer" },
  /** void rdma_destroy_event_channel(struct rdma_event_channel *channel); */
  rdma_destroy_event_channel: { parameters: ["pointer"], result: "void" },
  /**
   * int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
   *                    enum rdma_port_space ps);
   */
  rdma_create_id: { parameters: ["pointer", "buffer", "pointer", "i32"], result: "i32" },
  /** int rdma_destroy_id(struct rdma_cm_id *id); */
  rdma_destroy_id: { parameters: ["pointer"], result: "i32" },
  /** int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr); */
  rdma_bind_addr: { parameters: ["pointer", "buffer"], result: "i32" },
  /**
   * int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
   *                       struct sockaddr *dst_addr, int timeout_ms);
   */
  rdma_resolve_addr: { parameters: ["pointer", "buffer", "buffer", "i32"], result: "i32" },
  /** int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms); */
  rdma_resolve_route: { parameters: ["pointer", "i32"], result: "i32" },
  /** int rdma_listen(struct rdma_cm_id *id, int backlog); */
  rdma_listen: { parameters: ["pointer", "i32"], result: "i32" },
  /** int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param); */
  rdma_connect: { parameters: ["pointer", "buffer"], result: "i32" },
  /** int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param); */
  rdma_accept: { parameters: ["pointer", "buffer"], result: "i32" },
  /** int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len); */
  rdma_reject: { parameters: ["pointer", "buffer", "u8"], result: "i32" },
  /** int rdma_establish(struct rdma_cm_id *id);  (RDMACM_1.2) */
  rdma_establish: { parameters: ["pointer"], result: "i32" },
  /** int rdma_disconnect(struct rdma_cm_id *id); */
  rdma_disconnect: { parameters: ["pointer"], result: "i32" },
  /** int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event); */
  rdma_get_cm_event: { parameters: ["pointer", "buffer"], result: "i32" },
  /** int rdma_ack_cm_event(struct rdma_cm_event *event); */
  rdma_ack_cm_event: { parameters: ["pointer"], result: "i32" },
  /**
   * int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
   *                       int *qp_attr_mask);  (RDMACM_1.2)
   */
  rdma_init_qp_attr: { parameters: ["pointer", "buffer", "buffer"], result: "i32" },
  /** const char *rdma_event_str(enum rdma_cm_event_type event); */
  rdma_event_str: { parameters: ["i32"], result: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The librdmacm symbols, opened on first use (EnvironmentError when rdma-core is missing). */
export const librdmacm: () => Symbols<typeof LIBRDMACM_SYMBOLS> = lazy(
  () =>
    openLibrary({
      name: "librdmacm",
      soname: "librdmacm.so.1",
      env: "NVMEOF_LIBRDMACM",
      install: "rdma-core's librdmacm1 (apt-get install librdmacm1)",
    }, LIBRDMACM_SYMBOLS),
);
