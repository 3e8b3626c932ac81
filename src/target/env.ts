/**
 * What the target's runs need from the host: who may change nvmet, how its tree is opened
 * (configfs mounted and modules loaded first when the run changes it), and where the hosts
 * connected to it are read. The product runs on the kernel's (kernelTargetEnv); the cli tier's
 * entry point passes a stand-in of its own through main.
 */
import { type ConfigfsIo, KernelConfigfs } from "../configfs/io.ts";
import { type LiveTree, readTree } from "../configfs/nvmet.ts";
import { ensureConfigfsMounted } from "../configfs/mount.ts";
import { fileKind } from "../configfs/libc_fs.ts";
import { EnvironmentError } from "../errors.ts";
import { hostPaths } from "../host_paths.ts";
import type { PeerSources } from "./connected.ts";
import { isRoot, loadNvmet, loadTransportModules } from "./modules.ts";

/** Options of TargetEnv.open. */
export interface OpenOptions {
  /** Load modules and mount configfs when missing (up); otherwise only look. */
  prepare: boolean;
  /** Transport types the spec uses, whose modules must be loaded. */
  transports?: string[];
  note?: (line: string) => void;
}

/** The host a target run reads and changes. */
export interface TargetEnv {
  /** Throws EnvironmentError (exit 3) unless this process may change nvmet. */
  requireWriter(): void;
  /**
   * Opens the nvmet tree below `configfs`. With `prepare`, makes it ready first (throws
   * EnvironmentError when it cannot); without, undefined when nvmet is not there.
   */
  open(configfs: string, options: OpenOptions): ConfigfsIo | undefined;
  /** Where the hosts connected to the target are read (its readers loaded on the first call). */
  peers(): Promise<PeerSources>;
}

/** Throws EnvironmentError (exit 3) unless the process may change nvmet configfs (root). */
export function requireRoot(): void {
  if (isRoot()) return;
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

/** The running kernel's: root to change, configfs and modules, connections from the kernel. */
export function kernelTargetEnv(): TargetEnv {
  return {
    requireWriter: requireRoot,
    open: openNvmet,
    peers: async () => {
      const { kernelSourceOptions, kernelSources } = await import("./peers.ts");
      return kernelSources(kernelSourceOptions());
    },
  };
}

/** The live tree of an opened nvmet, or the empty tree when nvmet is not there. */
export function readLive(io: ConfigfsIo | undefined): LiveTree {
  return io ? readTree(io) : { hosts: [], subsystems: [], ports: [] };
}

/** The live nvmet tree below `configfs` (empty when nvmet is not loaded), and whether it exists. */
export function readTarget(
  configfs: string,
  env: TargetEnv = kernelTargetEnv(),
): { live: LiveTree; loaded: boolean } {
  const io = env.open(configfs, { prepare: false });
  return { live: readLive(io), loaded: io !== undefined };
}
