/**
 * Where the fabrics code finds the kernel: sysfs, /dev and the host identity files. Each is a
 * parameter so tests can point it at a temporary tree; the environment can override the
 * defaults (NVMEOF_SYSFS, NVMEOF_DEV, NVMEOF_ETC_NVME).
 */

/** Roots of the kernel and host files the initiator reads and writes. */
export interface FabricsPaths {
  /** sysfs mount, default `/sys` (`class/nvme`, `class/nvme-subsystem`, `module`). */
  sysfs: string;
  /** device directory, default `/dev` (`nvme-fabrics`, `nvmeN`, `kmsg`, block devices). */
  dev: string;
  /** nvme-cli's host files, default `/etc/nvme` (`hostnqn`, `hostid`). */
  etcNvme: string;
}

/** The paths of the running host, with environment overrides applied. */
export function fabricsPaths(
  env: (name: string) => string | undefined = Deno.env.get,
): FabricsPaths {
  return {
    sysfs: env("NVMEOF_SYSFS") || "/sys",
    dev: env("NVMEOF_DEV") || "/dev",
    etcNvme: env("NVMEOF_ETC_NVME") || "/etc/nvme",
  };
}

/** True when the paths are the real kernel's (so loading modules makes sense). */
export function isRealHost(paths: FabricsPaths): boolean {
  return paths.sysfs === "/sys" && paths.dev === "/dev";
}
