/**
 * Where the boot-persistence files live, below /etc by default, taken from the host's roots
 * (src/host_paths.ts: NVMEOF_ETC, NVMEOF_SYSTEMD_DIR, NVMEOF_ETC_NVME). Each root is a parameter
 * so tests point it at a temporary tree.
 */
import { type HostPaths, pickHostPaths } from "../host_paths.ts";

/** Roots of the files that make targets and connections survive a reboot. */
export type PersistPaths = Pick<HostPaths, "etc" | "systemd" | "etcNvme">;

/** The paths of the running host, with environment overrides applied. */
export function persistPaths(
  env: (name: string) => string | undefined = Deno.env.get,
): PersistPaths {
  return pickHostPaths(["etc", "systemd", "etcNvme"], env);
}

/** The saved-connections file under `etc`. */
export function connectionsFile(paths: PersistPaths): string {
  return `${paths.etc}/connections.yaml`;
}
