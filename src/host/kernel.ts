/**
 * What this host's kernel is, has mounted and loaded, and the two system tools that change it
 * (`mount`, `modprobe`): one runner, one mount check and one release reader for the target, the
 * host's connect and the doctor.
 */
import { hostPaths } from "../host_paths.ts";
import { readText } from "./kfs.ts";

/** How a system tool ended: `stderr` is its message (or why it could not start). */
export interface ToolResult {
  ok: boolean;
  stderr: string;
}

/** Runs `cmd args…` to the end with no stdin or stdout; never throws. */
export function runTool(cmd: string, args: string[]): ToolResult {
  try {
    const out = new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).outputSync();
    const stderr = new TextDecoder().decode(out.stderr).trim();
    return { ok: out.success, stderr: stderr || (out.success ? "" : `exit ${out.code}`) };
  } catch (err) {
    return { ok: false, stderr: (err as Error).message };
  }
}

/** `modprobe name`; never throws. */
export function modprobe(name: string): ToolResult {
  return runTool("modprobe", [name]);
}

/**
 * Whether a configfs is mounted at `dir`, from `<proc>/mounts` (proc defaults to /proc);
 * undefined when that cannot be read.
 */
export function isConfigfsMounted(dir: string, proc = "/proc"): boolean | undefined {
  let text: string;
  try {
    text = readText(`${proc}/mounts`, 1 << 20);
  } catch {
    return undefined;
  }
  return text.split("\n").some((l) => {
    const f = l.split(" ");
    return f[1] === dir && f[2] === "configfs";
  });
}

/** The running kernel's release, from `<proc>/sys/kernel/osrelease` (NVMEOF_PROC moves /proc). */
export function runningKernelRelease(
  proc: string = hostPaths().proc,
): string | undefined {
  try {
    return Deno.readTextFileSync(`${proc}/sys/kernel/osrelease`).trim() || undefined;
  } catch {
    return undefined;
  }
}
