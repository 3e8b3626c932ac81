/**
 * The absolute path of the program a systemd unit must run to be this nvmeof.
 */
import { EnvironmentError } from "../errors.ts";

/** How nvmeof was started, for the unit's ExecStart and its comment. */
export interface SelfPath {
  path: string;
  /** "compiled binary" or "source launcher (scripts/nvmeof)". */
  how: string;
}

/**
 * The compiled binary is `Deno.execPath()` itself. Run from source, the process is `deno`, which
 * cannot be put in a unit on its own; scripts/nvmeof exports its own absolute path as
 * NVMEOF_LAUNCHER and that launcher is what the unit runs.
 */
export function selfPath(
  env: (name: string) => string | undefined = Deno.env.get,
  standalone: boolean = Deno.build.standalone,
): SelfPath {
  if (standalone) return { path: Deno.execPath(), how: "compiled binary" };
  const launcher = env("NVMEOF_LAUNCHER");
  if (launcher && launcher.startsWith("/")) {
    return { path: launcher, how: "source launcher (scripts/nvmeof)" };
  }
  throw new EnvironmentError(
    "Cannot tell which program the unit should run: nvmeof runs from source without its launcher.",
    {
      hint: "Run it as the compiled binary (scripts/compile → dist/nvmeof) or through " +
        "scripts/nvmeof, which exports NVMEOF_LAUNCHER.",
    },
  );
}
