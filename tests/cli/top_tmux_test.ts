/**
 * `nvmeof top` on a real terminal: tmux gives it a pseudo-terminal of a chosen size. The test
 * checks that the live screen draws its header, redraws when the window is resized (with a long
 * interval, so only SIGWINCH can cause it), and that `q` ends it with the terminal's mode
 * (`stty -g`, read inside the session before and after) exactly as it was.
 *
 * tmux is one of the lab's packages (scripts/lab/lab PACKAGES). Without it the test is skipped,
 * saying so, except in CI (CI=true), where a missing tmux fails it.
 */
import assert from "node:assert/strict";
import { ROOT, run, tempDir } from "../helpers.ts";
import { multipathTree } from "../sysfs_standin.ts";

const hasTmux = (await run("sh", ["-c", "command -v tmux"]).catch(() => ({ code: 1 }))).code ===
  0;
const skip = !hasTmux && Deno.env.get("CI") !== "true";
if (skip) console.warn("tmux is missing: the top terminal test is skipped (apt-get install tmux)");

const COLUMNS = 100;
const ROWS = 30;
const NARROW = 60;
/** How long nvmeof may take to start, draw or quit in the session (2 shared cores). */
const WAIT_MS = 30_000;

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

Deno.test({
  name: "top on a terminal: draws, redraws on resize, q quits and the tty mode is restored" +
    (skip ? " (skipped: no tmux)" : ""),
  ignore: skip,
  async fn() {
    await using dir = await tempDir();
    const env = await multipathTree(dir.path);
    const configfs = `${dir.path}/config`;
    await Deno.mkdir(`${configfs}/nvmet/ports`, { recursive: true });
    const exports = Object.entries({ ...env, NVMEOF_PROC: `${dir.path}/proc` })
      .map(([k, v]) => `export ${k}='${v}'`).join("\n");
    const tools = Deno.env.get("NVMEOF_TOOLS");
    const script = `${dir.path}/session.sh`;
    await Deno.writeTextFile(
      script,
      `${exports}
${tools ? `export NVMEOF_TOOLS='${tools}'` : ""}
unset NO_COLOR
cd '${dir.path}'
stty -g > before
'${ROOT}/scripts/nvmeof' top --interval 3600 --configfs '${configfs}' 2> stderr
echo $? > rc
stty -g > after
sleep 600
`,
    );
    const socket = `nvmeof-top-${Deno.pid}`;
    const tmux = (...args: string[]) => run("tmux", ["-L", socket, "-f", "/dev/null", ...args]);
    const pane = async () => (await tmux("capture-pane", "-p", "-t", "top")).stdout;
    const read = (f: string) => Deno.readTextFile(`${dir.path}/${f}`).catch(() => undefined);
    try {
      const made = await tmux(
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
      const first = await waitFor("the header", async () => {
        const p = await pane();
        return /nvmeof top {2}\S+ {2}\d\d:\d\d:\d\d UTC/.test(p) ? p : undefined;
      });
      assert.match(first, /first sample/);
      assert.match(first, /nothing to show|SUBSYSTEMS/);

      // Keys arrive raw while top runs: the pane's tty is not in the mode it was started in.
      const tty = (await tmux("display-message", "-p", "-t", "top", "#{pane_tty}")).stdout.trim();
      const during = await run("stty", ["-g", "-F", tty]);
      assert.equal(during.code, 0, during.stderr);
      assert.notEqual(during.stdout, await read("before"), "raw mode while top runs");

      // Narrower than the 'nothing to show' line: a redraw cuts it with '…' at the new width.
      const resized = await tmux("resize-window", "-t", "top", "-x", String(NARROW));
      assert.equal(resized.code, 0, resized.stderr);
      const narrow = await waitFor("the redraw at the new width", async () => {
        const p = await pane();
        return p.split("\n").some((l) => l.endsWith("…") && [...l].length === NARROW)
          ? p
          : undefined;
      });
      for (const l of narrow.split("\n")) assert.ok([...l].length <= NARROW, l);

      const sent = await tmux("send-keys", "-t", "top", "q");
      assert.equal(sent.code, 0, sent.stderr);
      const rc = await waitFor("top to end after q", () => read("rc"));
      assert.equal(rc.trim(), "0", await read("stderr"));
      const before = await read("before");
      const after = await waitFor("stty -g after", () => read("after"));
      assert.ok(before, "stty -g before");
      assert.equal(after, before, "the terminal's mode is as it was");
      assert.equal(await read("stderr"), "");
      const back = await pane();
      assert.doesNotMatch(back, /nvmeof top {2}/, "the main screen is back");
    } finally {
      await tmux("kill-server");
    }
  },
});
