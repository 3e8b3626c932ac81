/**
 * One writer at a time per nvmet tree: an exclusive lock file in /run/nvmeof, waited for with a
 * bound (NVMEOF_LOCK_TIMEOUT), naming its holder when the wait runs out.
 */
import { EnvironmentError } from "../errors.ts";
import { heldLock, lockHolder, privateRunDir } from "../host/run_dir.ts";

/** An exclusive lock held while a run reads and changes one nvmet tree. */
export interface TargetLock extends Disposable {
  readonly path: string;
}

/** How long a run waits for another run's lock before it gives up (NVMEOF_LOCK_TIMEOUT, s). */
export const DEFAULT_LOCK_TIMEOUT_S = 30;
/** How often a waiting run tries the lock again. */
const LOCK_POLL_MS = 100;

/** Options of lockTarget. */
export interface LockOptions {
  /** Shown while waiting. */
  note?: (line: string) => void;
  /** Give up after this long (default: NVMEOF_LOCK_TIMEOUT seconds, else 30 s). */
  timeoutMs?: number;
}

/**
 * The tree a `--configfs` spelling names, so that `T`, `T/`, `T//` and `T/./` take one lock: its
 * real path when it exists, else the path with `.`, `..` and repeated slashes resolved.
 */
export function canonicalTree(configfs: string): string {
  try {
    return Deno.realPathSync(configfs);
  } catch {
    const abs = configfs.startsWith("/") ? configfs : `${Deno.cwd()}/${configfs}`;
    const parts: string[] = [];
    for (const seg of abs.split("/")) {
      if (seg === "" || seg === ".") continue;
      if (seg === "..") parts.pop();
      else parts.push(seg);
    }
    return "/" + parts.join("/");
  }
}

function lockTimeoutMs(): number {
  const text = Deno.env.get("NVMEOF_LOCK_TIMEOUT");
  if (text === undefined || text === "") return DEFAULT_LOCK_TIMEOUT_S * 1000;
  const s = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(s)) {
    throw new EnvironmentError(`NVMEOF_LOCK_TIMEOUT '${text}' is not a number of seconds.`, {
      hint: `Set it to the seconds to wait for another run (default ${DEFAULT_LOCK_TIMEOUT_S}).`,
    });
  }
  return s * 1000;
}

/** The holder's line in the lock file: "pid 1234: nvmeof target up -f t.yaml". */
function holderLine(): string {
  const cmd = ["nvmeof", ...Deno.args].join(" ");
  return `pid ${Deno.pid}: ${cmd.length > 200 ? cmd.slice(0, 200) + "…" : cmd}\n`;
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Takes the lock for the nvmet tree below `configfs` (named by its canonical path), waiting
 * while another `nvmeof target` run holds it: with a note, and at most the timeout, after which it
 * fails naming the holder. The lock is a file in /run/nvmeof (NVMEOF_LOCK_DIR), which only root
 * can write; it holds the holder's pid and command line.
 */
export function lockTarget(configfs: string, options: LockOptions = {}): TargetLock {
  const dir = privateRunDir("lock directory");
  const tree = canonicalTree(configfs);
  let h = 0;
  for (const c of tree) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const path = tree === "/sys/kernel/config"
    ? `${dir}/target.lock`
    : `${dir}/target-${h.toString(16)}.lock`;
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { create: true, read: true, write: true, mode: 0o600 });
  } catch (err) {
    throw new EnvironmentError(`Cannot open the lock file '${path}': ${(err as Error).message}.`, {
      cause: err,
      hint: "Run as root, or set NVMEOF_LOCK_DIR to a directory of yours.",
    });
  }
  if (!file.tryLockSync(true)) {
    const timeout = options.timeoutMs ?? lockTimeoutMs();
    const holder = () => lockHolder(path) || "pid unknown";
    options.note?.(
      `Waiting up to ${timeout / 1000} s for another 'nvmeof target' run on '${tree}' ` +
        `(${holder()}) to finish…`,
    );
    const deadline = Date.now() + timeout;
    let locked = false;
    while (!locked && Date.now() < deadline) {
      sleepMs(Math.min(LOCK_POLL_MS, Math.max(1, deadline - Date.now())));
      locked = file.tryLockSync(true);
    }
    if (!locked) {
      const who = holder();
      file.close();
      throw new EnvironmentError(
        `Another 'nvmeof target' run (${who}) still holds the lock of '${tree}' after ${
          timeout / 1000
        } s; nothing was changed.`,
        {
          hint: `Let it finish and retry, or stop it if it hangs${
            /^pid (\d+)/.test(who) ? ` (kill ${/^pid (\d+)/.exec(who)![1]})` : ""
          }. NVMEOF_LOCK_TIMEOUT sets the wait in seconds.`,
        },
      );
    }
  }
  return { path, ...heldLock(file, holderLine()) };
}
