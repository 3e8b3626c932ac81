/**
 * errno values of x86_64 Linux (<asm-generic/errno-base.h>, <asm-generic/errno.h>, and the
 * kernel-internal ENOTSUPP of include/linux/errno.h that configfs can return), by name: code
 * compares `e === EACCES`, never `e === 13`. ERRNO_NAMES is derived from the same list, so a
 * name and its number are written once. It lives in src/ rather than ffi/ because start-up loads
 * it (src/errors.ts names errnos) and start-up loads nothing from ffi/.
 */
export const EPERM = 1;
export const ENOENT = 2;
export const EINTR = 4;
export const EIO = 5;
export const ENXIO = 6;
export const EAGAIN = 11;
export const ENOMEM = 12;
export const EACCES = 13;
export const EFAULT = 14;
export const EBUSY = 16;
export const EEXIST = 17;
export const ENODEV = 19;
export const ENOTDIR = 20;
export const EISDIR = 21;
export const EINVAL = 22;
export const ENOTTY = 25;
export const ENOSPC = 28;
export const EROFS = 30;
export const EPIPE = 32;
export const ENOSYS = 38;
export const ENOTEMPTY = 39;
export const ENODATA = 61;
export const EMSGSIZE = 90;
export const EPROTONOSUPPORT = 93;
export const EOPNOTSUPP = 95;
/** A netlink socket's receive queue overflowed: messages were dropped. */
export const ENOBUFS = 105;
export const EADDRINUSE = 98;
export const EADDRNOTAVAIL = 99;
export const ENETUNREACH = 101;
export const ECONNRESET = 104;
export const ETIMEDOUT = 110;
export const ECONNREFUSED = 111;
export const EHOSTUNREACH = 113;
export const EALREADY = 114;
export const EINPROGRESS = 115;
/** Kernel-internal "operation not supported" (not in the uapi headers); configfs stores return it. */
export const ENOTSUPP = 524;

const BY_NAME = {
  EPERM,
  ENOENT,
  EINTR,
  EIO,
  ENXIO,
  EAGAIN,
  ENOMEM,
  EACCES,
  EFAULT,
  EBUSY,
  EEXIST,
  ENODEV,
  ENOTDIR,
  EISDIR,
  EINVAL,
  ENOTTY,
  ENOSPC,
  EROFS,
  EPIPE,
  ENOSYS,
  ENOTEMPTY,
  ENODATA,
  EMSGSIZE,
  EPROTONOSUPPORT,
  EOPNOTSUPP,
  ENOBUFS,
  EADDRINUSE,
  EADDRNOTAVAIL,
  ENETUNREACH,
  ECONNRESET,
  ETIMEDOUT,
  ECONNREFUSED,
  EHOSTUNREACH,
  EALREADY,
  EINPROGRESS,
  ENOTSUPP,
} as const;

/** errno names by number, for the values above. */
export const ERRNO_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(BY_NAME).map(([name, value]) => [value, name]),
);
