/**
 * Where the initiator finds the kernel: sysfs, /dev and the host identity files, taken from
 * the host's roots (src/host_paths.ts: NVMEOF_SYSFS, NVMEOF_DEV, NVMEOF_ETC_NVME). Each is a
 * parameter so tests can point it at a temporary tree.
 */
import { type HostPaths, pickHostPaths } from "../host_paths.ts";

/** Roots of the kernel and host files the initiator reads and writes. */
export type FabricsPaths = Pick<HostPaths, "sysfs" | "dev" | "etcNvme">;

/** The paths of the running host, with environment overrides applied. */
export function fabricsPaths(
  env: (name: string) => string | undefined = Deno.env.get,
): FabricsPaths {
  return pickHostPaths(["sysfs", "dev", "etcNvme"], env);
}

/** True when the paths are the real kernel's (so loading modules makes sense). */
export function isRealHost(paths: FabricsPaths): boolean {
  return paths.sysfs === "/sys" && paths.dev === "/dev";
}
