/**
 * Where the doctor reads the kernel: every root is a parameter so tests point it at temporary
 * trees. The environment overrides the defaults like the initiator's (NVMEOF_SYSFS, NVMEOF_DEV,
 * NVMEOF_ETC_NVME) plus NVMEOF_PROC and NVMEOF_LIB_MODULES; configfs comes from --configfs.
 */
import { type FabricsPaths, fabricsPaths } from "../fabrics/paths.ts";

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
  return {
    ...fabricsPaths(env),
    proc: env("NVMEOF_PROC") || "/proc",
    libModules: env("NVMEOF_LIB_MODULES") || "/lib/modules",
    configfs,
  };
}
