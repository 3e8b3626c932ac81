/**
 * File access to the kernel's pseudo file systems (sysfs, /dev) through libc.
 *
 * Deno refuses every path under /sys, /dev and /proc unless the process runs with
 * --allow-all, whatever --allow-read/--allow-write say ("Requires all access"). The FFI
 * permission is granted anyway, so these few calls go straight to libc; on ordinary files (the
 * temporary trees of tests) they behave the same.
 */
import { ENOENT, ENOTDIR } from "../errno.ts";
import {
  cString,
  DIRENT_D_NAME,
  errno,
  F_OK,
  libc,
  O_CLOEXEC,
  O_RDONLY,
  O_WRONLY,
} from "../../ffi/libc.ts";
import { errnoName, NativeError } from "../errors.ts";

/** A failed kernel-file operation; `errno` says why (2 = ENOENT). */
export class KfsError extends NativeError {}

function fail(fn: string, path: string, e: number): never {
  throw new KfsError(fn, e, { message: `${fn}('${path}') failed: ${errnoName(e)} (${e}).` });
}

/**
 * The buffer every readText reads into, grown as a file needs (up to a read's `max`): a read
 * allocates nothing. A fresh 64 KiB buffer per call cost more than the read itself (0.5 ms of a
 * 1.3 ms sysfs read in the lab guest).
 */
let readBuf = new Uint8Array(4096);
const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** Reads a whole (small) file, e.g. a sysfs attribute; at most `max` bytes of it. */
export function readText(path: string, max = 65536): string {
  const c = libc();
  const fd = c.open(cString(path), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) fail("open", path, errno());
  try {
    let len = 0;
    while (len < max) {
      if (len === readBuf.length) {
        const grown = new Uint8Array(Math.min(max, 2 * len));
        grown.set(readBuf);
        readBuf = grown;
      }
      const room = Math.min(max, readBuf.length) - len;
      const n = Number(c.read(fd, readBuf.subarray(len, len + room), BigInt(room)));
      if (n < 0) fail("read", path, errno());
      if (n === 0) break;
      len += n;
    }
    return decoder.decode(readBuf.subarray(0, len));
  } finally {
    c.close(fd);
  }
}

/** The size of the page the kernel shows a configfs or sysfs attribute in. */
export const ATTRIBUTE_PAGE = 4096;

/**
 * Reads a configfs or sysfs attribute, at most a page of it: the kernel fills the page at the first
 * read(2) (fs/configfs/file.c fill_read_buffer, kernfs likewise), so one read of a page returns it
 * all and readText's second read, which only finds the end, is left out. `target show` and a
 * no-op `up` of a big tree read thousands of attributes. A read that fills the page is the whole
 * page too (an attribute is never longer); on an ordinary file (the stand-in trees of tests) one
 * read of a page returns up to a page as well.
 */
export function readAttribute(path: string): string {
  return readAttributeIf(path) ?? fail("open", path, ENOENT);
}

/**
 * readAttribute, or undefined when the attribute is not there (ENOENT, ENOTDIR: a kernel without
 * it), without the cost of an error: a big tree's read asks for hundreds of attributes an older
 * kernel lacks.
 */
export function readAttributeIf(path: string): string | undefined {
  const c = libc();
  const fd = c.open(cString(path), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    const e = errno();
    if (e === ENOENT || e === ENOTDIR) return undefined;
    fail("open", path, e);
  }
  try {
    const n = Number(c.read(fd, readBuf.subarray(0, ATTRIBUTE_PAGE), BigInt(ATTRIBUTE_PAGE)));
    if (n < 0) fail("read", path, errno());
    return decoder.decode(readBuf.subarray(0, n));
  } finally {
    c.close(fd);
  }
}

/** Writes `text` to an existing file in one write (sysfs attributes need exactly that). */
export function writeText(path: string, text: string): void {
  const c = libc();
  const fd = c.open(cString(path), O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) fail("open", path, errno());
  try {
    const bytes = encoder.encode(text);
    const r = c.write(fd, bytes, BigInt(bytes.length));
    const e = errno();
    if (Number(r) < 0) fail("write", path, e);
  } finally {
    c.close(fd);
  }
}

/** The names in a directory (without . and ..); [] when it does not exist. */
export function listDir(path: string): string[] {
  const c = libc();
  const dir = c.opendir(cString(path));
  if (dir === null) {
    const e = errno();
    if (e === ENOENT || e === ENOTDIR) return [];
    fail("opendir", path, e);
  }
  const out: string[] = [];
  try {
    for (let ent = c.readdir(dir); ent !== null; ent = c.readdir(dir)) {
      const name = Deno.UnsafePointerView.getCString(ent, DIRENT_D_NAME);
      if (name !== "." && name !== "..") out.push(name);
    }
  } finally {
    c.closedir(dir);
  }
  return out;
}

/** True when the path exists (follows symlinks). */
export function exists(path: string): boolean {
  return libc().access(cString(path), F_OK) === 0;
}
