/**
 * `scripts/lab/lab run` from the host: the contract every e2e test and the demo rely on. Each test
 * boots a guest (about 10 s under TCG).
 */
import assert from "node:assert/strict";
import { ROOT } from "../helpers.ts";

async function lab(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(`${ROOT}/scripts/lab/lab`, {
    args: ["run", "-q", ...args],
    stdin: "null",
    cwd: `${ROOT}/tests`,
    env,
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("lab run: stdout and stderr come back separately and byte-exact, with CMD's exit code", async () => {
  const r = await lab([
    "--",
    "bash",
    "-c",
    "pwd; printf 'a\\r\\nb\\n'; echo to-stderr >&2; ibv_devices | grep -c rxe0; exit 7",
  ]);
  assert.equal(r.code, 7, r.stderr);
  assert.equal(r.stdout, `${ROOT}/tests\na\r\nb\n1\n`);
  assert.equal(r.stderr, "to-stderr\n");
});

Deno.test("lab run: a command that overruns --timeout is stopped with exit 124", async () => {
  const r = await lab([
    "--timeout",
    "3",
    "--",
    "bash",
    "-c",
    "echo started; sleep 3600; echo never",
  ]);
  assert.equal(r.code, 124);
  assert.equal(r.stdout, "started\n");
  // The guest stopped the command when this machine told it to; had it not, the watchdog would
  // have killed qemu and said "… and was stopped" instead.
  assert.match(r.stderr, /the command did not finish within 3 s/);
  assert.doesNotMatch(r.stderr, /was stopped/);
});

Deno.test("lab run: a first boot that does not start the command in time is cut and booted once more", async () => {
  // One second is too short for any boot: the first is cut before the command starts, and the
  // second, with the whole bound, runs it once.
  const r = await lab(["--", "bash", "-c", "echo ran >>/.lab/runs; cat /.lab/runs"], {
    LAB_FIRST_BOOT_S: "1",
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "ran\n");
  assert.match(r.stderr, /did not start the command within 1 s: booting it once more/);
  assert.doesNotMatch(r.stderr, /error/);
});

Deno.test("lab run: a usage mistake is exit 2 and boots nothing", async () => {
  const r = await lab(["--timeout", "soon", "--", "true"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--timeout takes whole seconds/);
  const first = await lab(["--", "true"], { LAB_FIRST_BOOT_S: "2m" });
  assert.equal(first.code, 2);
  assert.match(first.stderr, /LAB_FIRST_BOOT_S takes whole seconds, not '2m'/);
});

Deno.test("lab run: the guest's clock keeps this machine's time, and the guest gets this machine's TSC rate", async () => {
  // Files made on the job's share take this machine's clock; the guest reads its own around them.
  const r = await lab([
    "--",
    "bash",
    "-c",
    "g0=$(date +%s.%N); : >/.lab/t0; sleep 5; : >/.lab/t1; g1=$(date +%s.%N); " +
    'echo "$g0 $g1 $(stat -c %.9Y /.lab/t0) $(stat -c %.9Y /.lab/t1)"; cat /proc/cmdline',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const [times, cmdline] = r.stdout.split("\n");
  const [g0, g1, h0, h1] = times.split(" ").map(Number);
  const ratio = (g1 - g0) / (h1 - h0);
  assert.ok(ratio > 0.8 && ratio < 1.25, `guest seconds per host second: ${ratio} (${times})`);
  if (
    Deno.build.os === "linux" && /\bconstant_tsc\b/.test(await Deno.readTextFile("/proc/cpuinfo"))
  ) {
    assert.match(cmdline, /\btsc_early_khz=\d+/);
  }
});
