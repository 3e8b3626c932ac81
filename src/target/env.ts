/**
 * What the target side needs from the host before it touches configfs: configfs mounted, the
 * nvmet module (and the transport's) loaded, and one writer at a time (a lock).
 */
import { type ConfigfsIo, KernelConfigfs } from "../configfs/io.ts";
import { fileKind } from "../configfs/native.ts";
import { readText } from "../fabrics/kfs.ts";
import { parseFailures, StandinConfigfs } from "../configfs/standin.ts";
import { EnvironmentError } from "../errors.ts";

/** The kernel module that serves each transport type. */
export const TRANSPORT_MODULES: Record<string, string> = {
  rdma: "nvmet-rdma",
  tcp: "nvmet-tcp",
  loop: "nvme-loop",
};

function exists(path: string): boolean {
  return fileKind(path, { follow: true }) !== undefined;
}

function isRoot(): boolean {
  return Deno.uid() === 0;
}

function run(cmd: string, args: string[]): { ok: boolean; stderr: string } {
  try {
    const out = new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).outputSync();
    return { ok: out.success, stderr: new TextDecoder().decode(out.stderr).trim() };
  } catch (err) {
    return { ok: false, stderr: (err as Error).message };
  }
}

function isConfigfsMounted(dir: string): boolean {
  try {
    return readText("/proc/mounts", 1 << 20).split("\n").some((l) => {
      const f = l.split(" ");
      return f[1] === dir && f[2] === "configfs";
    });
  } catch {
    return false;
  }
}

/** Whether the process uses the stand-in configfs of the test tiers (NVMEOF_CONFIGFS_STANDIN=1). */
export function standinMode(): boolean {
  return Deno.env.get("NVMEOF_CONFIGFS_STANDIN") === "1";
}

/** Throws EnvironmentError (exit 3) unless the process may change nvmet configfs (root, or the stand-in). */
export function requireRoot(): void {
  if (standinMode() || isRoot()) return;
  throw new EnvironmentError("Changing nvmet configfs needs root.", {
    hint: "Run it as root (sudo nvmeof target …); --dry-run shows the plan without root.",
  });
}

/** Options of openNvmet. */
export interface OpenOptions {
  /** Load modules and mount configfs when missing (up); otherwise only look. */
  prepare: boolean;
  /** Transport types the spec uses, whose modules must be loaded. */
  transports?: string[];
  note?: (line: string) => void;
}

/**
 * Opens the nvmet tree below `configfs`. With `prepare`, mounts configfs and loads nvmet and the
 * transports' modules when missing; throws EnvironmentError (exit 3) when it cannot. Without it,
 * returns undefined when nvmet is not there (nothing is configured).
 */
export function openNvmet(configfs: string, options: OpenOptions): ConfigfsIo | undefined {
  const root = `${configfs}/nvmet`;
  if (standinMode()) {
    const failures = parseFailures(Deno.env.get("NVMEOF_CONFIGFS_FAIL") ?? "");
    if (!options.prepare && !exists(root)) return undefined;
    return new StandinConfigfs(root, { failures });
  }
  if (options.prepare) requireRoot();
  if (!exists(root)) {
    if (!options.prepare) return undefined;
    if (!isRoot()) {
      throw new EnvironmentError(
        `nvmet is not loaded ('${root}' does not exist) and loading it needs root.`,
        {
          hint: "Run as root (sudo nvmeof target up …), or load it first: modprobe nvmet.",
        },
      );
    }
    if (!isConfigfsMounted(configfs)) {
      if (!exists(configfs)) {
        throw new EnvironmentError(`Configfs mount point '${configfs}' does not exist.`, {
          hint: "Use --configfs DIR to name where configfs is mounted.",
        });
      }
      const m = run("mount", ["-t", "configfs", "none", configfs]);
      if (!m.ok) {
        throw new EnvironmentError(
          `Cannot mount configfs on '${configfs}': ${m.stderr || "mount failed"}.`,
          {
            hint:
              "Check that the kernel has CONFIG_CONFIGFS_FS, then: mount -t configfs none /sys/kernel/config.",
          },
        );
      }
      options.note?.(`Mounted configfs on ${configfs}.`);
    }
    if (!exists(root)) {
      const m = run("modprobe", ["nvmet"]);
      if (!m.ok || !exists(root)) {
        throw new EnvironmentError(
          `Cannot load the nvmet module: ${m.stderr || `'${root}' did not appear`}.`,
          {
            hint:
              "Install the kernel's extra modules (linux-modules-extra-$(uname -r) or similar) and retry.",
          },
        );
      }
      options.note?.("Loaded module nvmet.");
    }
  }
  if (options.prepare) {
    for (const t of new Set(options.transports ?? [])) {
      const mod = TRANSPORT_MODULES[t];
      if (!mod || exists(`/sys/module/${mod.replaceAll("-", "_")}`)) continue;
      if (!isRoot()) {
        throw new EnvironmentError(
          `Module ${mod} (for ${t} ports) is not loaded and loading it needs root.`,
          {
            hint: `Run as root, or load it first: modprobe ${mod}.`,
          },
        );
      }
      const m = run("modprobe", [mod]);
      if (!m.ok) {
        throw new EnvironmentError(
          `Cannot load module ${mod} for ${t} ports: ${m.stderr || "modprobe failed"}.`,
          {
            hint: `Check that the kernel has it (modinfo ${mod}).`,
          },
        );
      }
      options.note?.(`Loaded module ${mod}.`);
    }
  }
  return new KernelConfigfs(root);
}

/** An exclusive lock held while a run reads and changes one nvmet tree. */
export interface TargetLock extends Disposable {
  readonly path: string;
}

/**
 * Takes the lock for the nvmet tree below `configfs`, waiting (with a note) while another
 * `nvmeof target` holds it. The lock is a file in NVMEOF_LOCK_DIR (default /run/lock).
 */
export function lockTarget(configfs: string, note?: (line: string) => void): TargetLock {
  let dir = Deno.env.get("NVMEOF_LOCK_DIR") ?? "/run/lock";
  if (!exists(dir)) dir = "/tmp";
  let h = 0;
  for (const c of configfs) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const path = configfs === "/sys/kernel/config"
    ? `${dir}/nvmeof-target.lock`
    : `${dir}/nvmeof-target-${h.toString(16)}.lock`;
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { create: true, write: true, mode: 0o600 });
  } catch (err) {
    throw new EnvironmentError(`Cannot open the lock file '${path}': ${(err as Error).message}.`, {
      cause: err,
      hint: "Run as root, or set NVMEOF_LOCK_DIR to a writable directory.",
    });
  }
  if (!file.tryLockSync(true)) {
    note?.(`Waiting for another 'nvmeof target' run to finish (lock ${path})…`);
    file.lockSync(true);
  }
  return {
    path,
    [Symbol.dispose]() {
      try {
        file.unlockSync();
      } finally {
        file.close();
      }
    },
  };
}
