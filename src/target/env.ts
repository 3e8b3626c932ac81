/**
 * What the target side needs from the host before it touches configfs: root, and the nvmet tree
 * opened with configfs mounted and the modules loaded when the run changes it.
 */
import { type ConfigfsIo, KernelConfigfs } from "../configfs/io.ts";
import { ensureConfigfsMounted } from "../configfs/mount.ts";
import { fileKind } from "../configfs/native.ts";
import { EnvironmentError } from "../errors.ts";
import { hostPaths } from "../paths.ts";
import { isRoot, loadNvmet, loadTransportModules } from "./modules.ts";

/**
 * Where the target room finds nvmet when it is not the kernel's: the seam through which the cli
 * tier's entry point (tests/standin/main.ts) puts a plain directory in place of configfs. The
 * product never sets it, and nothing outside the process (no variable, no flag) can.
 */
export interface NvmetStandin {
  /** Opens the tree at `root` (`<configfs>/nvmet`); undefined when it is absent and not to be made. */
  open(root: string, options: { prepare: boolean }): ConfigfsIo | undefined;
}

let standin: NvmetStandin | undefined;

/**
 * Puts `s` in place of the kernel's configfs for the rest of the process: no root needed, no module
 * loaded, and connected hosts are looked for only in the files under NVMEOF_SYSFS/NVMEOF_PROC (not
 * through the running kernel's RDMA netlink). For test entry points only.
 */
export function useNvmetStandin(s: NvmetStandin): void {
  standin = s;
}

/** Whether a stand-in replaces the kernel's configfs (see useNvmetStandin). */
export function standinMode(): boolean {
  return standin !== undefined;
}

/** Options of openNvmet. */
export interface OpenOptions {
  /** Load modules and mount configfs when missing (up); otherwise only look. */
  prepare: boolean;
  /** Transport types the spec uses, whose modules must be loaded. */
  transports?: string[];
  note?: (line: string) => void;
}

/** Throws EnvironmentError (exit 3) unless the process may change nvmet configfs (root, or the stand-in). */
export function requireRoot(): void {
  if (standinMode() || isRoot()) return;
  throw new EnvironmentError("Changing nvmet configfs needs root.", {
    hint: "Run it as root (sudo nvmeof target …); --dry-run shows the plan without root.",
  });
}

/**
 * Opens the kernel's nvmet tree below `configfs`. With `prepare`, mounts configfs and loads nvmet
 * and the transports' modules when missing; throws EnvironmentError (exit 3) when it cannot.
 * Without it, returns undefined when nvmet is not there (nothing is configured).
 */
export function openNvmet(configfs: string, options: OpenOptions): ConfigfsIo | undefined {
  const root = `${configfs}/nvmet`;
  if (standin) return standin.open(root, options);
  if (options.prepare) requireRoot();
  if (fileKind(root, { follow: true }) === undefined) {
    if (!options.prepare) return undefined;
    if (!isRoot()) {
      throw new EnvironmentError(
        `nvmet is not loaded ('${root}' does not exist) and loading it needs root.`,
        {
          hint: "Run as root (sudo nvmeof target up …), or load it first: modprobe nvmet.",
        },
      );
    }
    ensureConfigfsMounted(configfs, { proc: hostPaths().proc, note: options.note });
    loadNvmet(root, options.note);
  }
  if (options.prepare) {
    loadTransportModules(options.transports ?? [], {
      sysfs: hostPaths().sysfs,
      note: options.note,
    });
  }
  return new KernelConfigfs(root);
}
