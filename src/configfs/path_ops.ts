/**
 * Path operations on kernel pseudo file systems (configfs, sysfs, /dev) through Deno's file API
 * (see src/host/kfs.ts for why not libc). On ordinary files they behave the same. Failures throw
 * NativeError with the C function's name and errno.
 */
import { errnoName, errnoOf, NativeError } from "../errors.ts";

function fail(fn: string, path: string, err: unknown): never {
  const e = errnoOf(err);
  if (e === undefined) throw err;
  throw new NativeError(fn, e, { message: `${fn}('${path}') failed: ${errnoName(e)} (${e}).` });
}

/** The kind of file at a path, without following a final symlink (`lstat`), or undefined. */
export function fileKind(
  path: string,
  options: { follow?: boolean } = {},
): "file" | "dir" | "block" | "link" | "other" | undefined {
  let info: Deno.FileInfo;
  try {
    info = options.follow ? Deno.statSync(path) : Deno.lstatSync(path);
  } catch {
    return undefined;
  }
  if (info.isFile) return "file";
  if (info.isDirectory) return "dir";
  if (info.isBlockDevice) return "block";
  if (info.isSymlink) return "link";
  return "other";
}

/** mkdir(2) with mode 0755. */
export function makeDir(path: string): void {
  try {
    Deno.mkdirSync(path, { mode: 0o755 });
  } catch (err) {
    fail("mkdir", path, err);
  }
}

/** rmdir(2). */
export function removeDir(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (err) {
    fail("rmdir", path, err);
  }
}

/** symlink(2): creates `linkPath` pointing at `target`. */
export function makeLink(target: string, linkPath: string): void {
  try {
    Deno.symlinkSync(target, linkPath);
  } catch (err) {
    fail("symlink", linkPath, err);
  }
}

/** unlink(2). */
export function removeLink(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (err) {
    fail("unlink", path, err);
  }
}

/** readlink(2). */
export function readLinkText(path: string): string {
  try {
    return Deno.readLinkSync(path);
  } catch (err) {
    fail("readlink", path, err);
  }
}
