/**
 * File access to the kernel's pseudo file systems (sysfs, configfs, /dev, /proc) through Deno's
 * file API.
 *
 * Deno refuses every path under /sys, /dev and /proc unless the process runs with --allow-all,
 * whatever --allow-read/--allow-write say ("Requires all access"); nvmeof always runs with it,
 * from source and compiled alike (scripts/env.sh). These calls once went to libc through FFI, but
 * a process binds each C function it calls on first use: in the lab guest the first calls of a
 * target command cost 80-110 ms that way against 27-30 ms here (docs/benchmarks.md, "Files over
 * 9p, and libc"). One cost is the other way round: a missing file is a thrown error, 0.4 ms each
 * in the guest against 0.04 ms for a failed open(2), so a path that often misses is looked for
 * in its directory's listing rather than opened (src/configfs/io.ts).
 */
import { ENOENT, ENOTDIR } from "../errno.ts";
import { errnoName, errnoOf, NativeError } from "../errors.ts";

/** A failed kernel-file operation; `errno` says why (2 = ENOENT). */
export class KfsError extends NativeError {}

function fail(fn: string, path: string, e: number): never {
  throw new KfsError(fn, e, { message: `${fn}('${path}') failed: ${errnoName(e)} (${e}).` });
}

/** Rethrows the error of Deno's `fn` on `path` as KfsError (as it is when it carries no errno). */
function failWith(fn: string, path: string, err: unknown): never {
  const e = errnoOf(err);
  if (e === undefined) throw err;
  fail(fn, path, e);
}

/** Whether a failure means the path is not there (ENOENT, or ENOTDIR: a part is not a directory). */
function missing(err: unknown): boolean {
  const e = errnoOf(err);
  return e === ENOENT || e === ENOTDIR;
}

/** Opens `path` for reading or writing (never creating nor truncating), or throws KfsError. */
function openFile(path: string, write = false): Deno.FsFile {
  try {
    return Deno.openSync(path, write ? { write: true } : { read: true });
  } catch (err) {
    failWith("open", path, err);
  }
}

/** One read(2) into `buf`: the bytes read, 0 at the end of the file. */
function readOnce(f: Deno.FsFile, buf: Uint8Array, path: string): number {
  try {
    return f.readSync(buf) ?? 0;
  } catch (err) {
    failWith("read", path, err);
  }
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
  const f = openFile(path);
  try {
    let len = 0;
    while (len < max) {
      if (len === readBuf.length) {
        const grown = new Uint8Array(Math.min(max, 2 * len));
        grown.set(readBuf);
        readBuf = grown;
      }
      const room = Math.min(max, readBuf.length) - len;
      const n = readOnce(f, readBuf.subarray(len, len + room), path);
      if (n === 0) break;
      len += n;
    }
    return decoder.decode(readBuf.subarray(0, len));
  } finally {
    f.close();
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
 * it). A miss is a thrown error inside; a path that misses often is better looked for in a listing.
 */
export function readAttributeIf(path: string): string | undefined {
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { read: true });
  } catch (err) {
    if (missing(err)) return undefined;
    failWith("open", path, err);
  }
  try {
    return decoder.decode(
      readBuf.subarray(0, readOnce(f, readBuf.subarray(0, ATTRIBUTE_PAGE), path)),
    );
  } finally {
    f.close();
  }
}

/** Writes `text` to an existing file in one write (sysfs attributes need exactly that). */
export function writeText(path: string, text: string): void {
  const f = openFile(path, true);
  try {
    f.writeSync(encoder.encode(text));
  } catch (err) {
    failWith("write", path, err);
  } finally {
    f.close();
  }
}

/** The names in a directory (without . and ..); [] when it does not exist. */
export function listDir(path: string): string[] {
  const out: string[] = [];
  try {
    for (const e of Deno.readDirSync(path)) out.push(e.name);
  } catch (err) {
    if (missing(err)) return [];
    failWith("opendir", path, err);
  }
  return out;
}

/** True when the path exists (follows symlinks). */
export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
