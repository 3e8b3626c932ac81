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

/** Runs `cmd args…` (no shell) and collects its output; never throws for a non-zero exit. */
export async function run(cmd: string, args: string[]): Promise<RunResult> {
  const out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" })
    .output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** How a background process ended, and after how long (ms since it was started). */
export interface Finished extends RunResult {
  ms: number;
}

/**
 * A background process (a server, a long bench) whose stdout and stderr are collected as they
 * come, so a test can wait for a line, signal it, and bound its exit. Disposal kills it.
 */
export class Spawned implements AsyncDisposable {
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  /** performance.now() when it was started. */
  readonly t0: number;
  stdout = "";
  stderr = "";
  /** Settles when the process has exited and both pipes are drained. */
  readonly done: Promise<Finished>;
  #exited = false;

  constructor(cmd: string, args: string[], options: { env?: Record<string, string> } = {}) {
    this.child = new Deno.Command(cmd, {
      args,
      cwd: ROOT,
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.pid = this.child.pid;
    this.t0 = performance.now();
    const dec = new TextDecoder();
    const pump = async (s: ReadableStream<Uint8Array>, key: "stderr" | "stdout") => {
      for await (const chunk of s) this[key] += dec.decode(chunk, { stream: true });
    };
    const pumps = Promise.all([
      pump(this.child.stderr, "stderr"),
      pump(this.child.stdout, "stdout"),
    ]);
    this.done = pumps.then(() => this.child.status).then((st) => {
      this.#exited = true;
      return {
        code: st.code,
        stdout: this.stdout,
        stderr: this.stderr,
        ms: performance.now() - this.t0,
      };
    });
  }

  /** Whether it has exited (and its output is all read). */
  get exited(): boolean {
    return this.#exited;
  }

  /** Waits until stderr matches `re`; fails after `ms` or when the process exits first. */
  async waitFor(re: RegExp, ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (!re.test(this.stderr)) {
      if (this.#exited) throw new Error(`process exited before ${re}: ${this.stderr}`);
      if (Date.now() > end) throw new Error(`no ${re} within ${ms} ms; stderr: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Sends `sig` and waits for the exit (SIGKILL after `ms`). */
  async stop(sig: Deno.Signal = "SIGTERM", ms = 15000): Promise<Finished> {
    this.#kill(sig);
    return await this.#within(ms) ?? (this.#kill("SIGKILL"), await this.done);
  }

  /** Its result if it exits within `ms`; otherwise kills it and fails naming `what`. */
  async exitWithin(ms: number, what: string): Promise<Finished> {
    const out = await this.#within(ms);
    if (out !== undefined) return out;
    this.#kill("SIGKILL");
    const o = await this.done;
    throw new Error(`${what}: still running after ${ms} ms (killed). stderr: ${o.stderr}`);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop("SIGKILL", 5000);
  }

  #kill(sig: Deno.Signal): void {
    try {
      this.child.kill(sig);
    } catch { /* already gone */ }
  }

  async #within(ms: number): Promise<Finished | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), ms));
    const out = await Promise.race([this.done, late]);
    clearTimeout(timer);
    return out;
  }
}

/** Starts `scripts/nvmeof ARGS…` in the background (it execs Deno: the pid owns what it opens). */
export function spawnNvmeof(
  args: string[],
  options: { env?: Record<string, string> } = {},
): Spawned {
  return new Spawned(`${ROOT}/scripts/nvmeof`, args, options);
}

/** A seeded random source for generated inputs. */
export interface Rng {
  /** In [0, 1). */
  next(): number;
  /** In [0, n). */
  int(n: number): number;
  pick<T>(a: readonly T[]): T;
}

/** xorshift32: the same sequence for the same seed. */
export function rng(seed: number): Rng {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(a: readonly T[]): T => a[int(a.length)];
  return { next, int, pick };
}
