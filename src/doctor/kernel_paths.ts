/**
 * Where the doctor reads the kernel: every root is a parameter so tests point it at temporary
 * trees. The host's roots come from src/host_paths.ts (NVMEOF_SYSFS, NVMEOF_DEV, NVMEOF_ETC_NVME,
 * NVMEOF_PROC, NVMEOF_LIB_MODULES); configfs comes from --configfs.
 */
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { pickHostPaths } from "../host_paths.ts";

/** The roots the checks read. */
export interface DoctorPaths extends FabricsPaths {
  /** procfs mount, default `/proc` (`mounts`, `sys/kernel/osrelease`). */
  proc: string;
  /** Module tree, default `/lib/modules` (`<release>/modules.dep`, `modules.builtin`). */
  libModules: string;
  /** configfs mount, default `/sys/kernel/config` (nvmet below it). */
  configfs: string;
}

/** The paths of the running host with environment overrides applied. */
export function doctorPaths(
  configfs: string,
  env: (name: string) => string | undefined = Deno.env.get,
): DoctorPaths {
  return { ...pickHostPaths(["sysfs", "dev", "etcNvme", "proc", "libModules"], env), configfs };
}
