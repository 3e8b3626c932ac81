/**
 * Mounting configfs where it is missing (what the target needs before nvmet's tree can appear).
 */
import { EnvironmentError } from "../errors.ts";
import { isConfigfsMounted, runTool } from "../host/kernel.ts";
import { fileKind } from "./libc_fs.ts";

/**
 * Mounts configfs on `configfs` unless `<proc>/mounts` shows it there; throws EnvironmentError
 * (exit 3) when the mount point is missing or the mount fails.
 */
export function ensureConfigfsMounted(
  configfs: string,
  options: { proc: string; note?: (line: string) => void },
): void {
  if (isConfigfsMounted(configfs, options.proc)) return;
  if (fileKind(configfs, { follow: true }) === undefined) {
    throw new EnvironmentError(`Configfs mount point '${configfs}' does not exist.`, {
      hint: "Use --configfs DIR to name where configfs is mounted.",
    });
  }
  const m = runTool("mount", ["-t", "configfs", "none", configfs]);
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
