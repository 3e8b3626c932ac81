/**
 * `nvmeof top` as scripts use it: one view as text (--once, or stdout not a terminal) and JSON
 * lines (-o json --count N), against the stand-in host trees. The view's content is the unit
 * tier's (tests/unit/metrics_top_view_test.ts): here, that each mode runs, its shape and exit code.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";
import { multipathTree } from "../sysfs_standin.ts";

/** The stand-in host, and an empty nvmet configfs. */
async function host(path: string): Promise<{ env: Record<string, string>; configfs: string }> {
  const env = await multipathTree(path);
  const configfs = `${path}/config`;
  await Deno.mkdir(`${configfs}/nvmet/ports`, { recursive: true });
  return { env: { ...env, NVMEOF_PROC: `${path}/proc` }, configfs };
}

Deno.test("top --once prints one view as text, its header first, and exits 0", async () => {
  await using dir = await tempDir();
  const { env, configfs } = await host(dir.path);
  const r = await nvmeof(["top", "--once", "--interval", "0.2", "--configfs", configfs], { env });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split("\n");
  assert.match(lines[0], /^nvmeof top {2}\S+ {2}\d\d:\d\d:\d\d UTC {2}interval 0\.\d+ s/);
  assert.ok(lines.length >= 2, r.stdout);
  assert.ok(!r.stdout.includes("\x1b"), "no escapes when stdout is not a terminal");
  assert.equal(r.stderr, "");
});

Deno.test("top on a pipe without --once prints one view too, never a live screen", async () => {
  await using dir = await tempDir();
  const { env, configfs } = await host(dir.path);
  const r = await nvmeof(["top", "--interval", "0.1", "--configfs", configfs], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.match(/^nvmeof top /gm)?.length, 1, r.stdout);
  assert.ok(!r.stdout.includes("\x1b[?1049h"), "no alternate screen");
});

Deno.test("top -o json --count 2 prints two JSON lines in the contract's shape", async () => {
  await using dir = await tempDir();
  const { env, configfs } = await host(dir.path);
  const t0 = Date.now();
  const r = await nvmeof(
    ["top", "-o", "json", "--count", "2", "--interval", "0.2", "--configfs", configfs],
    { env },
  );
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split("\n");
  assert.equal(lines.length, 2, r.stdout);
  for (const line of lines) {
    const v = JSON.parse(line);
    assert.equal(Object.keys(v)[0], "nvmeof_json");
    assert.equal(v.nvmeof_json, 1);
    assert.equal(typeof v.time, "string");
    assert.equal(typeof v.host, "string");
    assert.ok(v.interval_seconds >= 0.15 && v.interval_seconds < 5, line);
    for (const k of ["subsystems", "rdma_errors", "failed_collectors"]) {
      assert.ok(Array.isArray(v[k]), `${k}: ${line}`);
    }
    assert.ok(Array.isArray(v.target.ports) && Array.isArray(v.target.namespaces), line);
  }
  assert.ok(Date.now() - t0 >= 400, "three collections 0.2 s apart");
});

Deno.test("top refuses an interval it cannot keep, as a usage error", async () => {
  for (const bad of ["0", "-1", "fast", "99999"]) {
    const r = await nvmeof(["top", "--once", "--interval", bad]);
    assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, /--interval must be seconds from 0\.1 to 3600/);
  }
  const c = await nvmeof(["top", "-o", "json", "--count", "0"]);
  assert.equal(c.code, 2, c.stderr);
});
