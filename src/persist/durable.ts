/**
 * Writes that survive a power cut. A configuration file written and then lost with the page
 * cache (a unit that exists but is empty, a list of saved connections cut short) is worse than
 * no file: the boot that follows trusts it. Each write goes to a temporary file in the same
 * directory, is flushed to the disk, renamed over the old one, and the directory is flushed too,
 * so after a crash the path holds either the old content or the new, whole.
 */

/** Flushes directory DIR, so the names created or renamed in it are on the disk. */
export function syncDir(dir: string): void {
  using d = Deno.openSync(dir, { read: true });
  d.syncSync();
}

/** The directory part of PATH ("/" for a file at the root). */
export function dirOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/")) || "/";
}

/** Replaces PATH with TEXT (mode MODE), durably: temporary file, fsync, rename, fsync of the dir. */
export function writeDurableSync(path: string, text: string, mode: number): void {
  const tmp = `${path}.tmp-${Deno.pid}`;
  try {
    using f = Deno.openSync(tmp, { write: true, create: true, truncate: true, mode });
    Deno.chmodSync(tmp, mode); // the umask may have narrowed the mode open() gave
    const bytes = new TextEncoder().encode(text);
    for (let off = 0; off < bytes.length;) off += f.writeSync(bytes.subarray(off));
    f.syncSync();
  } catch (err) {
    try {
      Deno.removeSync(tmp);
    } catch { /* not made */ }
    throw err;
  }
  Deno.renameSync(tmp, path);
  syncDir(dirOf(path));
}
