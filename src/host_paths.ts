/**
 * Where nvmeof finds the host: the kernel's trees and the configuration directories. One
 * definition of each root, its default and the environment variable that moves it (for tests, and
 * for hosts laid out differently); every room takes the roots it needs from here.
 *
 * configfs is not here: it is the global --configfs flag.
 */

/** The roots of the host. */
export interface HostPaths {
  /** sysfs mount, default `/sys` (`class/nvme`, `module`, `kernel/debug`): NVMEOF_SYSFS. */
  sysfs: string;
  /** procfs mount, default `/proc` (`mounts`, `net/tcp`): NVMEOF_PROC. */
  proc: string;
  /** device directory, default `/dev` (`nvme-fabrics`, block devices): NVMEOF_DEV. */
  dev: string;
  /** Module tree, default `/lib/modules`: NVMEOF_LIB_MODULES. */
  libModules: string;
  /** nvme-cli's files, default `/etc/nvme` (`hostnqn`, `discovery.conf`): NVMEOF_ETC_NVME. */
  etcNvme: string;
  /** nvmeof's own configuration, default `/etc/nvmeof` (`target.yaml`, `connections.yaml`): NVMEOF_ETC. */
  etc: string;
  /** Where systemd units are installed, default `/etc/systemd/system`: NVMEOF_SYSTEMD_DIR. */
  systemd: string;
}

/** Each root's default and the variable that overrides it. */
export const HOST_PATH_DEFAULTS: Record<keyof HostPaths, { env: string; default: string }> = {
  sysfs: { env: "NVMEOF_SYSFS", default: "/sys" },
  proc: { env: "NVMEOF_PROC", default: "/proc" },
  dev: { env: "NVMEOF_DEV", default: "/dev" },
  libModules: { env: "NVMEOF_LIB_MODULES", default: "/lib/modules" },
  etcNvme: { env: "NVMEOF_ETC_NVME", default: "/etc/nvme" },
  etc: { env: "NVMEOF_ETC", default: "/etc/nvmeof" },
  systemd: { env: "NVMEOF_SYSTEMD_DIR", default: "/etc/systemd/system" },
};

/** The roots of the running host, with environment overrides applied (an empty value is unset). */
export function hostPaths(env: (name: string) => string | undefined = Deno.env.get): HostPaths {
  const out = {} as HostPaths;
  for (const k of Object.keys(HOST_PATH_DEFAULTS) as Array<keyof HostPaths>) {
    const d = HOST_PATH_DEFAULTS[k];
    out[k] = env(d.env) || d.default;
  }
  return out;
}

/**
 * The roots a room needs, `keys` of the running host's (hostPaths, environment overrides applied):
 * each room says which roots it reads and takes them from the one definition.
 */
export function pickHostPaths<K extends keyof HostPaths>(
  keys: readonly K[],
  env: (name: string) => string | undefined = Deno.env.get,
): Pick<HostPaths, K> {
  const all = hostPaths(env);
  const out = {} as Pick<HostPaths, K>;
  for (const k of keys) out[k] = all[k];
  return out;
}
