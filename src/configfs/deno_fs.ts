/**
 * The calls that build a configfs tree (mkdir, symlink, an attribute's write) through Deno's file
 * API; libc_fs.ts and host/kfs.ts do everything else through libc.
 *
 * Why: an apply makes these calls by the hundred, and a process's first call of a C function
 * through FFI binds it: in the lab guest, binding mkdir, write, close and symlink cost `target up`
 * from empty 22-32 ms, a third of its net at 1x, which Deno's file calls (bound at start-up) do
 * not pay.
 * Reads stay on libc: a miss is a thrown error in Deno's API, ten times dearer than a failed
 * open(2), and a big tree's read meets hundreds (docs/benchmarks.md, "libc or Deno's file API").
 *
 * Failures throw NativeError with the C function and errno through libc_fs.ts's `fail`, so a
 * refusal reads the same whichever way the call went.
 */
import { errnoOf } from "../errors.ts";
import { fail } from "./libc_fs.ts";

const encoder = new TextEncoder();

/** Rethrows Deno's error ERR of the call FN on PATH as libc_fs.ts would report it. */
function rethrow(fn: string, path: string, err: unknown): never {
  const e = errnoOf(err);
  if (e === undefined) throw err;
  fail(fn, path, e, err);
}

/** mkdir(2) with mode 0755 (less the umask, as libc's). */
export function makeDir(path: string): void {
  try {
    Deno.mkdirSync(path, { mode: 0o755 });
  } catch (err) {
    rethrow("mkdir", path, err);
  }
}

/** symlink(2): creates `linkPath` pointing at `target`. */
export function makeLink(target: string, linkPath: string): void {
  try {
    Deno.symlinkSync(target, linkPath);
  } catch (err) {
    rethrow("symlink", linkPath, err);
  }
}

/**
 * Writes `text` to an existing attribute with one write(2), as configfs and sysfs attributes need;
 * the file is opened with O_TRUNC, as a shell's `echo 1 >attr` and nvmetcli's writes open it.
 */
export function writeAttribute(path: string, text: string): void {
  try {
    Deno.writeFileSync(path, encoder.encode(text), { create: false });
  } catch (err) {
    rethrow("write", path, err);
  }
}
