/**
 * Where the boot-persistence files live. Each root is a parameter so tests point it at a
 * temporary tree; the environment overrides the defaults (NVMEOF_ETC, NVMEOF_SYSTEMD_DIR,
 * NVMEOF_ETC_NVME).
 */

/** Roots of the files that make targets and connections survive a reboot. */
export interface PersistPaths {
  /** nvmeof's own configuration, default `/etc/nvmeof` (`target.yaml`, `connections.yaml`). */
  etc: string;
  /** Where units are installed, default `/etc/systemd/system`. */
  systemd: string;
  /** nvme-cli's files, default `/etc/nvme` (`discovery.conf`, `config.json`). */
  etcNvme: string;
}

/** The paths of the running host, with environment overrides applied. */
export function persistPaths(
  env: (name: string) => string | undefined = Deno.env.get,
): PersistPaths {
  return {
    etc: env("NVMEOF_ETC") || "/etc/nvmeof",
    systemd: env("NVMEOF_SYSTEMD_DIR") || "/etc/systemd/system",
    etcNvme: env("NVMEOF_ETC_NVME") || "/etc/nvme",
  };
}

/** The saved-connections file under `etc`. */
export function connectionsFile(paths: PersistPaths): string {
  return `${paths.etc}/connections.yaml`;
}
