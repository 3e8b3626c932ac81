/**
 * Path operations on kernel pseudo file systems (configfs, sysfs, /dev) through libc; the calls
 * that build a configfs tree are in deno_fs.ts.
 *
 * Deno refuses every path under /sys, /dev and /proc without --allow-all, whatever
 * --allow-read/--allow-write say; nvmeof has the FFI permission, so these calls go to libc, where
 * a miss is a return value and not a thrown error (deno_fs.ts says why the building calls do not).
 * On ordinary files they behave the same. Failures throw NativeError with the C function and errno.
 */
import {
  cString,
  errno,
  libc,
  S_IFBLK,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  STAT,
} from "../../ffi/libc.ts";
import { errnoName, NativeError } from "../errors.ts";

/** Throws the NativeError of C function FN failing on PATH with errno E (CAUSE: what reported it). */
export function fail(fn: string, path: string, e: number, cause?: unknown): never {
  throw new NativeError(fn, e, {
    message: `${fn}('${path}') failed: ${errnoName(e)} (${e}).`,
    cause,
  });
}

/** The kind of file at a path, without following a final symlink (`lstat`), or undefined. */
export function fileKind(
  path: string,
  options: { follow?: boolean } = {},
): "file" | "dir" | "block" | "link" | "other" | undefined {
  const buf = new Uint8Array(STAT.size);
  const c = libc();
  const r = options.follow ? c.stat(cString(path), buf) : c.lstat(cString(path), buf);
  if (r !== 0) return undefined;
  const mode = new DataView(buf.buffer).getUint32(STAT.st_mode, true) & S_IFMT;
  if (mode === S_IFREG) return "file";
  if (mode === S_IFDIR) return "dir";
  if (mode === S_IFBLK) return "block";
  if (mode === S_IFLNK) return "link";
  return "other";
}

/** rmdir(2). */
export function removeDir(path: string): void {
  if (libc().rmdir(cString(path)) !== 0) fail("rmdir", path, errno());
}

/** unlink(2). */
export function removeLink(path: string): void {
  if (libc().unlink(cString(path)) !== 0) fail("unlink", path, errno());
}

/** readlink(2). */
export function readLinkText(path: string): string {
  const buf = new Uint8Array(4096);
  const n = Number(libc().readlink(cString(path), buf, BigInt(buf.length)));
  if (n < 0) fail("readlink", path, errno());
  return new TextDecoder().decode(buf.subarray(0, n));
}
