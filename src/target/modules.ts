/**
 * The kernel modules the target needs: nvmet itself, and the module serving each transport of
 * the spec's ports. Loading one needs root.
 */
import { fileKind } from "../configfs/libc_fs.ts";
import { EnvironmentError } from "../errors.ts";
import { modprobe } from "../host/kernel.ts";

/** The kernel module that serves each transport type. */
export const TRANSPORT_MODULES: Record<string, string> = {
  rdma: "nvmet-rdma",
  tcp: "nvmet-tcp",
  loop: "nvme-loop",
};

function exists(path: string): boolean {
  return fileKind(path, { follow: true }) !== undefined;
}

/** Whether this process runs as root. */
export function isRoot(): boolean {
  return Deno.uid() === 0;
}

/** Loads nvmet unless `root` (`<configfs>/nvmet`) exists; throws EnvironmentError when it cannot. */
export function loadNvmet(root: string, note?: (line: string) => void): void {
  if (exists(root)) return;
  const m = modprobe("nvmet");
  if (!m.ok || !exists(root)) {
    throw new EnvironmentError(
      `Cannot load the nvmet module: ${m.stderr || `'${root}' did not appear`}.`,
      {
        hint:
          "Install the kernel's extra modules (linux-modules-extra-$(uname -r) or similar) and retry.",
      },
    );
  }
  note?.("Loaded module nvmet.");
}

/**
 * Loads the module of each transport not loaded yet (`<sysfs>/module/<name>`); throws
 * EnvironmentError naming the module when that needs root or fails.
 */
export function loadTransportModules(
  transports: string[],
  options: { sysfs: string; note?: (line: string) => void },
): void {
  for (const t of new Set(transports)) {
    const mod = TRANSPORT_MODULES[t];
    if (!mod || exists(`${options.sysfs}/module/${mod.replaceAll("-", "_")}`)) continue;
    if (!isRoot()) {
      throw new EnvironmentError(
        `Module ${mod} (for ${t} ports) is not loaded and loading it needs root.`,
        {
          hint: `Run as root, or load it first: modprobe ${mod}.`,
        },
      );
    }
    const m = modprobe(mod);
    if (!m.ok) {
      throw new EnvironmentError(
        `Cannot load module ${mod} for ${t} ports: ${m.stderr || "modprobe failed"}.`,
        {
          hint: `Check that the kernel has it (modinfo ${mod}).`,
        },
      );
    }
    options.note?.(`Loaded module ${mod}.`);
  }
}
