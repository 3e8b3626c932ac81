/**
 * `nvmeof top` on a real terminal: tmux gives it a pseudo-terminal of a chosen size. The tests
 * check that the live screen draws its header, enters raw mode, redraws when the window is
 * resized (with a long interval, so only SIGWINCH can cause it), and that `q` or SIGTERM ends it
 * with the terminal's mode (`stty -g`, read inside the session before and after) and main screen
 * as they were.
 *
 * tmux is one of the lab's packages (scripts/lab/lab PACKAGES). Without it the tests are skipped,
 * saying so, except in CI (CI=true), where a missing tmux fails them.
 */
import assert from "node:assert/strict";
import { ROOT, run, tempDir } from "../helpers.ts";
import { multipathTree } from "../sysfs_standin.ts";

const hasTmux = (await run("sh", ["-c", "command -v tmux"]).catch(() => ({ code: 1 }))).code ===
  0;
const skip = !hasTmux && Deno.env.get("CI") !== "true";
if (skip) {
  console.warn("tmux is missing: the top terminal tests are skipped (apt-get install tmux)");
}

const COLUMNS = 100;
const ROWS = 30;
const NARROW = 60;
/** How long nvmeof may take to start, draw or quit in the session (2 shared cores). */
const WAIT_MS = 30_000;
const HEADER = /nvmeof top {2}\S+ {2}\d\d:\d\d:\d\d UTC/;

/** Polls CHECK every 100 ms until it returns a value, or fails naming WHAT after WAIT_MS. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + WAIT_MS;
  while (Date.now() < end) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A detached tmux session running `nvmeof top` on the stand-in host, in a shell that records
 * `stty -g` before and after it, its pid, and its exit code, then stays (so the pane can be read).
 */
class TopSession implements AsyncDisposable {
  #socket = `nvmeof-top-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  constructor(readonly dir: string) {}

  tmux(...args: string[]) {
    return run("tmux", ["-L", this.#socket, "-f", "/dev/null", ...args]);
  }

  async pane(): Promise<string> {
    return (await this.tmux("capture-pane", "-p", "-t", "top")).stdout;
  }

  read(file: string): Promise<string | undefined> {
    return Deno.readTextFile(`${this.dir}/${file}`).catch(() => undefined);
  }

  async start(): Promise<string> {
    const env = await multipathTree(this.dir);
    const configfs = `${this.dir}/config`;
    await Deno.mkdir(`${configfs}/nvmet/ports`, { recursive: true });
    const exports = Object.entries({ ...env, NVMEOF_PROC: `${this.dir}/proc` })
      .map(([k, v]) => `export ${k}='${v}'`).join("\n");
    const tools = Deno.env.get("NVMEOF_TOOLS");
    const script = `${this.dir}/session.sh`;
    await Deno.writeTextFile(
      script,
      `${exports}
${tools ? `export NVMEOF_TOOLS='${tools}'` : ""}
unset NO_COLOR
cd '${this.dir}'
stty -g > before
(echo $BASHPID > pid; exec '${ROOT}/scripts/nvmeof' top --interval 3600 --configfs '${configfs}' 2> stderr)
echo $? > rc
stty -g > after
sleep 600
`,
    );
    const made = await this.tmux(
      "new-session",
      "-d",
      "-s",
      "top",
      "-x",
      String(COLUMNS),
      "-y",
      String(ROWS),
      `bash ${script}`,
    );
    assert.equal(made.code, 0, made.stderr);
    return await waitFor("the header", async () => {
      const p = await this.pane();
      return HEADER.test(p) ? p : undefined;
    });
  }

  /** Waits for top's exit code, and checks the terminal is back as it was. */
  async assertEndedRestored(): Promise<void> {
    const rc = await waitFor("top to end", () => this.read("rc"));
    assert.equal(rc.trim(), "0", await this.read("stderr"));
    const before = await this.read("before");
    const after = await waitFor("stty -g after", () => this.read("after"));
    assert.ok(before, "stty -g before");
    assert.equal(after, before, "the terminal's mode is as it was");
    assert.equal(await this.read("stderr"), "");
    assert.doesNotMatch(await this.pane(), HEADER, "the main screen is back");
  }

  async [Symbol.asyncDispose]() {
    await this.tmux("kill-server");
  }
}

/** A test of top in a fresh tmux session, skipped (saying so) where tmux is missing outside CI. */
function tmuxTest(name: string, fn: (s: TopSession) => Promise<void>): void {
  Deno.test({
    name: `top on a terminal: ${name}${skip ? " (skipped: no tmux)" : ""}`,
    ignore: skip,
    async fn() {
      await using dir = await tempDir();
      await using s = new TopSession(dir.path);
      await fn(s);
    },
  });
}

tmuxTest("draws, redraws on resize, q quits and the tty mode is restored", async (s) => {
  const first = await s.start();
  assert.match(first, /first sample/);
  assert.match(first, /nothing to show|SUBSYSTEMS/);

  // Keys arrive raw while top runs: the pane's tty is not in the mode it was started in.
  const tty = (await s.tmux("display-message", "-p", "-t", "top", "#{pane_tty}")).stdout.trim();
  const during = await run("stty", ["-g", "-F", tty]);
  assert.equal(during.code, 0, during.stderr);
  assert.notEqual(during.stdout, await s.read("before"), "raw mode while top runs");

  // Narrower than the 'nothing to show' line: a redraw cuts it with '…' at the new width.
  const resized = await s.tmux("resize-window", "-t", "top", "-x", String(NARROW));
  assert.equal(resized.code, 0, resized.stderr);
  const narrow = await waitFor("the redraw at the new width", async () => {
    const p = await s.pane();
    return p.split("\n").some((l) => l.endsWith("…") && [...l].length === NARROW) ? p : undefined;
  });
  for (const l of narrow.split("\n")) assert.ok([...l].length <= NARROW, l);

  const sent = await s.tmux("send-keys", "-t", "top", "q");
  assert.equal(sent.code, 0, sent.stderr);
  await s.assertEndedRestored();
});

tmuxTest("SIGTERM ends it with the tty mode and main screen restored", async (s) => {
  await s.start();
  const pid = Number((await waitFor("top's pid", () => s.read("pid"))).trim());
  Deno.kill(pid, "SIGTERM");
  await s.assertEndedRestored();
});
