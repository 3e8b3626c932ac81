/**
 * The libc symbols nvmeof calls through FFI, keyed by their exact C names, and the lazy loader.
 *
 * libc is opened on first use, never at import, so `--help` and every command that needs no
 * native call work anywhere. The path comes from `NVMEOF_LIBC` when set, then the absolute
 * Debian/Ubuntu x86_64 path, then the soname (resolved by the dynamic loader).
 *
 * errno: after a failing synchronous call, read `errno()` in the very next statement, before any
 * allocation or `await` (a GC or another call on the main thread can overwrite it).
 */
import { lazy, openLibrary, type Symbols } from "./loader.ts";

export const LIBC_SYMBOLS = {
  /** int open(const char *pathname, int flags, ... mode_t mode); */
  open: { parameters: ["buffer", "i32", "u32"], result: "i32" },
  /** int close(int fd); */
  close: { parameters: ["i32"], result: "i32" },
  /** ssize_t read(int fd, void *buf, size_t count); */
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  /** ssize_t write(int fd, const void *buf, size_t count); */
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  /** off_t lseek(int fd, off_t offset, int whence); */
  lseek: { parameters: ["i32", "i64", "i32"], result: "i64" },
  /** int ioctl(int fd, unsigned long request, ... void *argp); */
  ioctl: { parameters: ["i32", "u64", "buffer"], result: "i32" },
  /** int access(const char *pathname, int mode); */
  access: { parameters: ["buffer", "i32"], result: "i32" },
  /** DIR *opendir(const char *name); */
  opendir: { parameters: ["buffer"], result: "pointer" },
  /** struct dirent *readdir(DIR *dirp); */
  readdir: { parameters: ["pointer"], result: "pointer" },
  /** int closedir(DIR *dirp); */
  closedir: { parameters: ["pointer"], result: "i32" },
  /** int rmdir(const char *pathname); */
  rmdir: { parameters: ["buffer"], result: "i32" },
  /** int unlink(const char *pathname); */
  unlink: { parameters: ["buffer"], result: "i32" },
  /** ssize_t readlink(const char *pathname, char *buf, size_t bufsiz); */
  readlink: { parameters: ["buffer", "buffer", "usize"], result: "isize" },
  /** int stat(const char *pathname, struct stat *statbuf); (exported since glibc 2.33) */
  stat: { parameters: ["buffer", "buffer"], result: "i32" },
  /** int lstat(const char *pathname, struct stat *statbuf); (exported since glibc 2.33) */
  lstat: { parameters: ["buffer", "buffer"], result: "i32" },
  /** int fcntl(int fd, int cmd, ... int arg); */
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  /**
   * int poll(struct pollfd *fds, nfds_t nfds, int timeout); bound nonblocking: it runs on a
   * worker thread and returns a Promise, so a wait never freezes the event loop.
   */
  poll_async: {
    name: "poll",
    parameters: ["buffer", "u64", "i32"],
    result: "i32",
    nonblocking: true,
  },
  /** int poll(struct pollfd *fds, nfds_t nfds, int timeout); (for timeout 0 only) */
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32" },
  /** int eventfd(unsigned int initval, int flags); */
  eventfd: { parameters: ["u32", "i32"], result: "i32" },
  /** int posix_memalign(void **memptr, size_t alignment, size_t size); */
  posix_memalign: { parameters: ["buffer", "usize", "usize"], result: "i32" },
  /** void free(void *ptr); */
  free: { parameters: ["pointer"], result: "void" },
  /** char *if_indextoname(unsigned int ifindex, char *ifname); */
  if_indextoname: { parameters: ["u32", "buffer"], result: "pointer" },
  /** int socket(int domain, int type, int protocol); */
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  /** int bind(int sockfd, const struct sockaddr *addr, socklen_t addrlen); */
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  /** int connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen); */
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  /** int setsockopt(int sockfd, int level, int optname, const void *optval, socklen_t optlen); */
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  /** ssize_t send(int sockfd, const void *buf, size_t len, int flags); */
  send: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  /** ssize_t recv(int sockfd, void *buf, size_t len, int flags); */
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  /** int *__errno_location(void); */
  __errno_location: { parameters: [], result: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Flags and constants of <fcntl.h>/<unistd.h> on x86_64 Linux. */
export const O_RDONLY = 0;
export const O_RDWR = 2;
export const O_NONBLOCK = 0o4000;
export const O_CLOEXEC = 0o2000000;
export const SEEK_END = 2;
export const O_WRONLY = 1;
export const F_OK = 0;
/** fcntl commands, poll events and eventfd flags (x86_64 Linux). */
export const F_GETFL = 3;
export const F_SETFL = 4;
export const POLLIN = 1;
export const EFD_NONBLOCK = 0o4000;
export const EFD_CLOEXEC = 0o2000000;
/** Socket domains, types, protocols and options of <sys/socket.h>/<netinet/in.h> (x86_64 Linux). */
export const AF_INET = 2;
export const AF_INET6 = 10;
export const SOCK_DGRAM = 2;
export const SOCK_RAW = 3;
export const SOCK_NONBLOCK = 0o4000;
export const SOCK_CLOEXEC = 0o2000000;
export const IPPROTO_ICMP = 1;
export const IPPROTO_ICMPV6 = 58;
export const SOL_IP = 0;
export const SOL_IPV6 = 41;
export const IP_MTU_DISCOVER = 10;
export const IPV6_MTU_DISCOVER = 23;
/** Never fragment, set DF (IPv4); the same value for IPV6_MTU_DISCOVER. */
export const IP_PMTUDISC_DO = 2;
/** Netlink and socket-option constants of <linux/netlink.h> and <sys/socket.h> (x86_64 Linux). */
export const AF_NETLINK = 16;
export const SOL_SOCKET = 1;
export const SO_RCVTIMEO = 20;
export const SO_RCVBUF = 8;
/** SO_RCVBUF past net.core.rmem_max (needs CAP_NET_ADMIN). */
export const SO_RCVBUFFORCE = 33;
/** The netlink protocol of the RDMA subsystem (<linux/netlink.h>). */
export const NETLINK_RDMA = 20;
/** The netlink protocol of the kernel's uevents (<linux/netlink.h>); group 1 is the kernel's. */
export const NETLINK_KOBJECT_UEVENT = 15;
/** Offset of d_name in glibc's struct dirent on x86_64 (d_ino 8, d_off 8, d_reclen 2, d_type 1). */
export const DIRENT_D_NAME = 19;

/**
 * struct stat on x86_64 glibc (sizeof 144):
 *   dev_t st_dev @0 (8); ino_t st_ino @8 (8); nlink_t st_nlink @16 (8); mode_t st_mode @24 (4);
 *   uid_t st_uid @28; gid_t st_gid @32; int __pad0 @36; dev_t st_rdev @40; off_t st_size @48 …
 */
export const STAT = { size: 144, st_mode: 24, st_size: 48 } as const;
/** File type bits of st_mode (<sys/stat.h>). */
export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFDIR = 0o040000;
export const S_IFBLK = 0o060000;
export const S_IFLNK = 0o120000;

type Libc = Symbols<typeof LIBC_SYMBOLS>;

const load = lazy(() => {
  let errnoAt: Deno.PointerValue = null;
  const symbols = openLibrary(
    { name: "libc", soname: "libc.so.6", env: "NVMEOF_LIBC", install: "the C library (glibc)" },
    LIBC_SYMBOLS,
    (l) => {
      errnoAt = l.__errno_location();
      if (errnoAt === null) throw new Error("__errno_location() returned NULL");
    },
  );
  return { symbols, errnoView: new Deno.UnsafePointerView(errnoAt!) };
});

/** The libc symbols, opening the library on first use. Throws LibraryLoadError naming every path tried. */
export function libc(): Libc {
  return load().symbols;
}

/** The calling thread's errno (the main thread's; read it right after the failing call). */
export function errno(): number {
  return load().errnoView.getInt32(0);
}

const encoder = new TextEncoder();

/** A NUL-terminated C string in a buffer, for `buffer` parameters. */
export function cString(s: string): Uint8Array {
  return encoder.encode(s + "\0");
}
