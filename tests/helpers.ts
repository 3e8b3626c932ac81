/**
 * Test helpers shared by the tiers: run the launcher like a user would, make temporary trees.
 */

/** The checkout's root. */
export const ROOT: string = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** What a finished nvmeof process left behind. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `scripts/nvmeof ARGS…` (the same launcher users and the lab use) and collects its output. */
export async function nvmeof(
  args: string[],
  options: {
    env?: Record<string, string>;
    stdin?: string;
    cwd?: string;
    /** Run with a plain directory standing in for nvmet configfs (tests/standin/nvmeof). */
    standin?: boolean;
  } = {},
): Promise<RunResult> {
  const launcher = options.standin ? "tests/standin/nvmeof" : "scripts/nvmeof";
  const cmd = new Deno.Command(`${ROOT}/${launcher}`, {
    args,
    env: options.env,
    cwd: options.cwd,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(options.stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A temporary directory removed when disposed: `await using dir = await tempDir()`. */
export async function tempDir(
  prefix = "nvmeof-test-",
): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  };
}

/** Runs a shell script (`sh -c`, or another shell) and collects its output; never throws. */
export async function sh(script: string, shell: "sh" | "bash" = "sh"): Promise<RunResult> {
  const out = await new Deno.Command(shell, {
    args: ["-c", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** `bash -c script`, for scripts that need bash. */
export function bash(script: string): Promise<RunResult> {
  return sh(script, "bash");
}

/** `bash -c script`; throws with the script, exit code and stderr unless it exits 0. */
export async function must(script: string): Promise<string> {
  const r = await bash(script);
  if (r.code !== 0) throw new Error(`${script}: exit ${r.code}: ${r.stderr}`);
  return r.stdout;
}
