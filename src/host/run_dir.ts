/**
 * nvmeof's runtime directory, /run/nvmeof (NVMEOF_LOCK_DIR moves it): the target's locks and the
 * agent's state. Made by root with mode 0700 and refused when another user could write it, so no
 * one else can create, hold or forge what is kept there.
 */
import { EnvironmentError } from "../errors.ts";

/** The runtime directory's default. */
export const DEFAULT_RUN_DIR = "/run/nvmeof";

/** The runtime directory's path (not made). */
export function runDirPath(): string {
  return Deno.env.get("NVMEOF_LOCK_DIR") || DEFAULT_RUN_DIR;
}

/**
 * The runtime directory, made when missing (mode 0700) and refused unless it is a real directory
 * owned by this user (root) that no group or other user can write. WHAT names it in messages
 * ("lock directory").
 */
export function privateRunDir(what: string): string {
  const dir = runDirPath();
  try {
    Deno.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) {
      throw new EnvironmentError(
        `Cannot create the ${what} '${dir}': ${(err as Error).message}.`,
        { cause: err, hint: "Run as root (or point NVMEOF_LOCK_DIR at a directory of yours)." },
      );
    }
  }
  const st = Deno.lstatSync(dir);
  const uid = Deno.uid();
  const why = !st.isDirectory
    ? "it is not a directory (a symlink?)"
    : st.uid !== uid
    ? `it belongs to uid ${st.uid}, not ${uid}`
    : st.mode !== null && (st.mode & 0o022) !== 0
    ? `group or others may write to it (mode ${(st.mode & 0o777).toString(8)})`
    : undefined;
  if (why) {
    throw new EnvironmentError(
      `Refusing the ${what} '${dir}': ${why}, so another user could block, take or forge ` +
        "what nvmeof keeps there.",
      { hint: `Remove it (nvmeof makes it again, mode 0700): rm -r '${dir}'.` },
    );
  }
  return dir;
}

/**
 * Marks `file`, whose lock this process has just taken (`tryLockSync`), as held: `holder` (a line
 * naming this process) replaces its contents. Disposing empties it, unlocks it and closes it.
 */
export function heldLock(file: Deno.FsFile, holder: string): Disposable {
  file.truncateSync(0);
  file.writeSync(new TextEncoder().encode(holder));
  return {
    [Symbol.dispose]() {
      try {
        file.truncateSync(0);
        file.unlockSync();
      } finally {
        file.close();
      }
    },
  };
}

/** The holder line of the lock file at `path` (as heldLock wrote it); "" when unreadable or empty. */
export function lockHolder(path: string): string {
  try {
    return Deno.readTextFileSync(path).trim();
  } catch {
    return "";
  }
}
