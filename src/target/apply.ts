/**
 * Applies a plan one configfs step at a time. If a step fails, every step this run already made is
 * undone in reverse (a created directory removed, a written attribute given its old value, a link
 * removed or restored, a removed directory recreated with its attributes), and the error explains
 * the kernel's refusal by its errno (the store functions of drivers/nvme/target/configfs.c).
 */
import { softRoceCommand } from "../rdma/soft_roce.ts";
import type { ConfigfsIo } from "../configfs/io.ts";
import { errnoName, errnoOf, FailureError, NativeError } from "../errors.ts";
import { ATTRIBUTE_SINCE } from "../configfs/nvmet.ts";

/** The errno name of a filesystem error ("EADDRNOTAVAIL"), or "" when it has none. */
export function errnoCode(err: unknown): string {
  if (err instanceof NativeError) return errnoName(err.errno);
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && /^E[A-Z0-9]+$/.test(code)) return code;
  const n = errnoOf(err);
  return n === undefined ? "" : errnoName(n);
}
import { describeStep, type Step } from "./plan.ts";

/** A step failed; what the run changed was rolled back (or `rollbackFailures` says what was not). */
export class ApplyError extends FailureError {
  readonly step: Step;
  /** errno name of the refusal ("" when none). */
  readonly errno: string;
  readonly rollbackFailures: string[];

  constructor(
    message: string,
    details: {
      step: Step;
      errno: string;
      rollbackFailures: string[];
      cause: unknown;
      hint: string;
    },
  ) {
    super(message, { cause: details.cause, hint: details.hint });
    this.step = details.step;
    this.errno = details.errno;
    this.rollbackFailures = details.rollbackFailures;
  }
}

function runStep(io: ConfigfsIo, s: Step): void {
  switch (s.op) {
    case "mkdir":
      return io.mkdir(s.path);
    case "rmdir":
      return io.rmdir(s.path);
    case "write":
      return io.write(s.path, s.value);
    case "link":
      return io.link(s.path, s.target);
    case "unlink":
      return io.unlink(s.path);
  }
}

/** Attributes written first when a removed object is made again (trtype resets tsas). */
const RESTORE_FIRST = [
  "addr_trtype",
  "addr_adrfam",
  "addr_traddr",
  "addr_trsvcid",
  "addr_treq",
  "device_path",
];
/** Attributes written last (a namespace is enabled once its device is set). */
const RESTORE_LAST = ["enable"];

/** Whether an attribute holds a secret (DH-HMAC-CHAP keys, TLS keys): never shown. */
export function isSecretAttr(name: string): boolean {
  return /key/.test(name);
}

/**
 * Every readable attribute of a directory about to be removed, secrets included (held in memory
 * only, for the rollback), in the order they would be written back. Write-only attributes
 * (revalidate_size) hold no state and are skipped, and so are the directories below (a read of
 * one fails): one call per entry, not a look at its kind first, since `down` of a big tree does
 * this for every object it removes.
 */
export function readAttributes(io: ConfigfsIo, dir: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const name of io.list(dir)) {
    try {
      out.push([name, io.read(`${dir}/${name}`)]);
    } catch {
      // unreadable: a write-only trigger, or a directory (EISDIR)
    }
  }
  const rank = (n: string) => {
    const f = RESTORE_FIRST.indexOf(n);
    return f >= 0 ? f - RESTORE_FIRST.length : RESTORE_LAST.includes(n) ? 1 : 0;
  };
  return out.sort((a, b) => rank(a[0]) - rank(b[0]));
}

/**
 * Makes a removed directory again with the attributes read before its removal: writes each
 * that differs from what the fresh object shows, and retries once those the kernel refused (one
 * attribute may need another first: cntlid_min below cntlid_max). Returns what could not be
 * restored, as lines for the message (secret values never shown).
 */
function recreate(io: ConfigfsIo, dir: string, attrs: Array<[string, string]>): string[] {
  io.mkdir(dir);
  let pending = attrs.filter(([name, value]) => {
    try {
      return io.read(`${dir}/${name}`) !== value;
    } catch {
      return true;
    }
  });
  const failures: string[] = [];
  for (let pass = 0; pass < 2 && pending.length; pass++) {
    const again: Array<[string, string]> = [];
    failures.length = 0;
    for (const [name, value] of pending) {
      try {
        io.write(`${dir}/${name}`, value);
      } catch (err) {
        again.push([name, value]);
        const shown = isSecretAttr(name) ? "(secret)" : `'${value}'`;
        failures.push(
          `write  ${dir}/${name} = ${shown}: ${errnoCode(err) || (err as Error).message}`,
        );
      }
    }
    pending = again;
  }
  return failures;
}

/** The steps that undo `s` (empty when nothing can or needs to be undone). */
function inverse(s: Step): Step[] {
  switch (s.op) {
    case "mkdir":
      return [{ op: "rmdir", path: s.path }];
    case "rmdir":
      // applyPlan makes a removed directory again from what it read there before (recreate);
      // without that, only the empty directory.
      return [{ op: "mkdir", path: s.path }];
    case "write":
      return s.old === undefined
        ? []
        : [{ op: "write", path: s.path, value: s.old, secret: s.secret }];
    case "link":
      return [{ op: "unlink", path: s.path, target: s.target }];
    case "unlink":
      return [{ op: "link", path: s.path, target: s.target }];
  }
}

/** Explains why the kernel refused a step, from the errno and what the step was (drivers/nvme/target/configfs.c). */
export function explainRefusal(s: Step, e: string): string {
  const name = s.path.split("/").pop() ?? "";
  if (s.op === "link" && s.path.startsWith("ports/")) {
    const port = s.path.split("/")[1];
    if (e === "EADDRNOTAVAIL") {
      return `Port ${port}'s traddr is not an address configured on this host. Assign it to an interface (ip addr add ADDR/24 dev DEV) or fix the port's traddr.`;
    }
    if (e === "ENODEV") {
      return `Port ${port}'s traddr is on an interface without an RDMA device. Add one (${softRoceCommand()}), or use trtype tcp.`;
    }
    if (e === "EADDRINUSE") {
      return `Another listener already uses port ${port}'s address and service id. Choose another trsvcid.`;
    }
    if (e === "EINVAL") {
      return `The kernel refused port ${port}'s transport settings (trtype, adrfam, traddr). Check them, and that the transport's module is there (nvmet-rdma, nvmet-tcp, or nvme-loop for a loop port: modprobe it).`;
    }
    if (e === "EPROTONOSUPPORT" || e === "ENOENT") {
      return `The transport module for port ${port} is missing. Run: modprobe nvmet-rdma (or nvmet-tcp; nvme-loop for a loop port).`;
    }
  }
  if (s.op === "link" && s.path.includes("/allowed_hosts/") && e === "EINVAL") {
    return "The subsystem allows any host; the kernel refuses a host list then. Set allow_any_host: false.";
  }
  if (s.op === "write") {
    if (e === "ENOENT") {
      const since = ATTRIBUTE_SINCE[name];
      return `This kernel has no attribute '${name}'. ${
        name.startsWith("dhchap")
          ? `It was built without DH-HMAC-CHAP: the dhchap settings need ${since}; remove them or use a kernel that has it.`
          : since
          ? `'${name}' needs ${since}; remove it from the spec or use a newer kernel.`
          : "It is newer than this kernel or needs a kernel option; remove it from the spec."
      }`;
    }
    if (name === "enable") {
      if (e === "ENOENT" || e === "ENODEV" || e === "ENXIO") {
        return "The namespace's device does not exist any more. Check the device path.";
      }
      if (e === "EBUSY") {
        return "The namespace's device is in use (mounted, or held by another namespace or program). Free it or choose another device.";
      }
      if (e === "EINVAL") {
        return "The kernel refused the namespace's device. A file on a file system without O_DIRECT (tmpfs, some FUSE) needs buffered_io: true on the namespace; otherwise check the device.";
      }
    }
    if (/^(addr|param)_/.test(name) && e === "EACCES") {
      return "The port is enabled (it has subsystem links); the kernel refuses changes then. Another program may have linked it meanwhile: run 'nvmeof target up' again.";
    }
    if (/^device_/.test(name) && e === "EBUSY") {
      return "The namespace is enabled; the kernel refuses device changes then. Run 'nvmeof target up' again.";
    }
    if (e === "EINVAL") {
      return `The kernel refused the value for '${name}' (EINVAL). Check it against the attribute's rules; some subsystem attributes are fixed once a host has connected.`;
    }
  }
  if (s.op === "mkdir" && e === "EEXIST") {
    return "It exists already: another program changed configfs meanwhile. Run 'nvmeof target up' again.";
  }
  if (s.op === "rmdir" && (e === "ENOTEMPTY" || e === "EBUSY")) {
    return "It still has children or links: another program changed configfs meanwhile. Run 'nvmeof target show' and retry.";
  }
  if (e === "EACCES" || e === "EPERM") return "Permission denied: run as root.";
  return "Check the kernel log (dmesg) for nvmet's reason.";
}

/** Most rollback failures an ApplyError's message lists (all are in `rollbackFailures`). */
export const ROLLBACK_LINES = 20;

/** Options of applyPlan. */
export interface ApplyOptions {
  /** Called before each step (for --verbose progress). */
  onStep?: (s: Step) => void;
}

/**
 * Runs the steps in order. On the first failure undoes the steps already made, in reverse, and
 * throws ApplyError naming the step, the errno and the fix.
 */
export function applyPlan(io: ConfigfsIo, steps: Step[], options: ApplyOptions = {}): void {
  const done: Step[] = [];
  // What each removed directory held, read just before its removal, to make it again exactly.
  const removed = new Map<Step, Array<[string, string]>>();
  for (const s of steps) {
    try {
      options.onStep?.(s);
      const attrs = s.op === "rmdir" ? readAttributes(io, s.path) : undefined;
      runStep(io, s);
      if (attrs) removed.set(s, attrs);
      done.push(s);
    } catch (err) {
      const rollbackFailures: string[] = [];
      // Attribute writes inside a directory this run made need no undoing: the rmdir takes them.
      const made = new Set(done.filter((d) => d.op === "mkdir").map((d) => d.path));
      // Inside a directory this run made (its removal takes the write with it): the path's
      // ancestors looked up, not every made directory scanned per step.
      const inMade = (path: string) => {
        for (let i = path.lastIndexOf("/"); i > 0; i = path.lastIndexOf("/", i - 1)) {
          if (made.has(path.slice(0, i))) return true;
        }
        return false;
      };
      for (const d of done.reverse()) {
        if (d.op === "write" && inMade(d.path)) continue;
        const attrs = removed.get(d);
        if (attrs) {
          try {
            rollbackFailures.push(...recreate(io, d.path, attrs));
          } catch (uerr) {
            rollbackFailures.push(
              `mkdir  ${d.path}: ${errnoCode(uerr) || (uerr as Error).message}`,
            );
          }
          continue;
        }
        for (const u of inverse(d)) {
          try {
            runStep(io, u);
          } catch (uerr) {
            rollbackFailures.push(
              `${describeStep(u)}: ${errnoCode(uerr) || (uerr as Error).message}`,
            );
          }
        }
      }
      const errno = errnoCode(err);
      const num = err instanceof NativeError ? err.errno : errnoOf(err);
      const what = errno
        ? (num !== undefined ? `${errno} (${num})` : errno)
        : (err as Error).message;
      // At most ROLLBACK_LINES of them in the message (a big plan can leave thousands).
      const listed = rollbackFailures.slice(0, ROLLBACK_LINES);
      if (rollbackFailures.length > listed.length) {
        listed.push(`… and ${rollbackFailures.length - listed.length} more`);
      }
      const undone = rollbackFailures.length
        ? `Rolling back the ${done.length} earlier step(s) left ${rollbackFailures.length} not undone:\n  ${
          listed.join("\n  ")
        }`
        : done.length
        ? `The ${done.length} earlier step(s) of this run were rolled back; configfs is as before.`
        : "Nothing had been changed yet; configfs is as before.";
      throw new ApplyError(
        `The kernel refused '${describeStep(s).replace(/\s+/, " ")}': ${what}. ${undone}`,
        { step: s, errno, rollbackFailures, cause: err, hint: explainRefusal(s, errno) },
      );
    }
  }
}
