/**
 * Struct layouts of the C library and the kernel's socket and netlink ABI on x86_64 Linux
 * (sockaddr_in/_in6, pollfd, timeval, sockaddr_nl, nlmsghdr, nlmsgerr, nlattr), as offset tables
 * like ffi/structs.ts (rdma-core's): one per struct, keyed by member, `$size` = sizeof, checked
 * against the installed headers by tests/unit/abi_conformance_test.ts.
 */

/**
 * struct sockaddr_in { sa_family_t sin_family; in_port_t sin_port (BE); struct in_addr sin_addr;
 *                      unsigned char sin_zero[8]; };  // 16
 */
export const SOCKADDR_IN = { $size: 16, sin_family: 0, sin_port: 2, sin_addr: 4 } as const;

/**
 * struct sockaddr_in6 { sa_family_t sin6_family; in_port_t sin6_port (BE); uint32_t sin6_flowinfo;
 *                       struct in6_addr sin6_addr; uint32_t sin6_scope_id; };  // 28
 */
export const SOCKADDR_IN6 = {
  $size: 28,
  sin6_family: 0,
  sin6_port: 2,
  sin6_flowinfo: 4,
  sin6_addr: 8,
  sin6_scope_id: 24,
} as const;

/** struct pollfd { int fd; short events; short revents; };  // 8 */
export const POLLFD = { $size: 8, fd: 0, events: 4, revents: 6 } as const;

/** struct timeval { time_t tv_sec; suseconds_t tv_usec; };  // 16 (SO_RCVTIMEO) */
export const TIMEVAL = { $size: 16, tv_sec: 0, tv_usec: 8 } as const;

/**
 * struct sockaddr_nl { __kernel_sa_family_t nl_family; unsigned short nl_pad; __u32 nl_pid;
 *                      __u32 nl_groups; };  // 12
 */
export const SOCKADDR_NL = { $size: 12, nl_family: 0, nl_pad: 2, nl_pid: 4, nl_groups: 8 } as const;

/**
 * struct nlmsghdr { __u32 nlmsg_len; __u16 nlmsg_type; __u16 nlmsg_flags; __u32 nlmsg_seq;
 *                   __u32 nlmsg_pid; };  // 16; messages and attributes are padded to 4 bytes
 */
export const NLMSGHDR = {
  $size: 16,
  nlmsg_len: 0,
  nlmsg_type: 4,
  nlmsg_flags: 6,
  nlmsg_seq: 8,
  nlmsg_pid: 12,
} as const;

/** struct nlmsgerr { int error; struct nlmsghdr msg; };  // 20 (payload of NLMSG_ERROR) */
export const NLMSGERR = { $size: 20, error: 0, msg: 4 } as const;

/** struct nlattr { __u16 nla_len; __u16 nla_type; };  // 4, followed by the payload */
export const NLATTR = { $size: 4, nla_len: 0, nla_type: 2 } as const;

/**
 * struct __kernel_sockaddr_storage { __kernel_sa_family_t ss_family; char __data[126]; };  // 128
 * (the payload of RDMA_NLDEV_ATTR_RES_SRC_ADDR/_DST_ADDR; a sockaddr_in or sockaddr_in6 inside)
 */
export const KERNEL_SOCKADDR_STORAGE = { $size: 128, ss_family: 0 } as const;

/** Every table above, by its C type, for the ABI conformance probe. */
export const LIBC_ABI_TABLES: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  "struct sockaddr_in": SOCKADDR_IN,
  "struct sockaddr_in6": SOCKADDR_IN6,
  "struct pollfd": POLLFD,
  "struct timeval": TIMEVAL,
  "struct sockaddr_nl": SOCKADDR_NL,
  "struct nlmsghdr": NLMSGHDR,
  "struct nlmsgerr": NLMSGERR,
  "struct nlattr": NLATTR,
  "struct __kernel_sockaddr_storage": KERNEL_SOCKADDR_STORAGE,
};
