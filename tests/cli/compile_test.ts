import assert from "node:assert/strict";
import { ROOT, tempDir } from "../helpers.ts";

async function compile(out: string, env: Record<string, string>) {
  const r = await new Deno.Command(`${ROOT}/scripts/compile`, {
    args: [out],
    env,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: r.code, stdout: dec.decode(r.stdout), stderr: dec.decode(r.stderr) };
}

Deno.test("compile with a DENORT_BIN that does not exist says so and exits 3", async () => {
  await using dir = await tempDir();
  const r = await compile(`${dir.path}/nvmeof`, { DENORT_BIN: "/nonexistent/denort" });
  assert.equal(r.code, 3);
  assert.match(r.stderr, /DENORT_BIN='\/nonexistent\/denort' does not exist/);
  await assert.rejects(Deno.stat(`${dir.path}/nvmeof`));
});

Deno.test("compile either builds a binary that runs, or explains how to supply DENORT_BIN", async () => {
  await using dir = await tempDir();
  const r = await compile(`${dir.path}/nvmeof`, {});
  if (r.code === 0) {
    const v = await new Deno.Command(`${dir.path}/nvmeof`, { args: ["--version"] }).output();
    assert.match(new TextDecoder().decode(v.stdout), /^nvmeof \d/);
  } else {
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /could not get the Deno runtime \(denort 2\.9\.6\)/);
    assert.match(r.stderr, /DENORT_BIN=\/path\/to\/denort scripts\/compile/);
  }
});

Deno.test("the launcher and compile grant the same permissions (one list in scripts/env.sh)", async () => {
  const launcher = await Deno.readTextFile(`${ROOT}/scripts/nvmeof`);
  const compileScript = await Deno.readTextFile(`${ROOT}/scripts/compile`);
  assert.match(launcher, /\$NVMEOF_RUN_WORDS \$NVMEOF_PERMS_WORDS "\$NVMEOF_ROOT\/main\.ts"/);
  assert.match(compileScript, /"\$\{NVMEOF_PERMS\[@\]\}"/);
  assert.doesNotMatch(launcher + compileScript, /--allow-(read|write|ffi|env|run|sys|net)\b/);
  // lib.sh's arrays (compile's, the benches') are env.sh's words, word for word.
  const r = await new Deno.Command("bash", {
    args: [
      "-c",
      `. "${ROOT}/scripts/lib.sh" && printf '%s\\n' "$NVMEOF_PERMS_WORDS" "\${NVMEOF_PERMS[*]}" "$NVMEOF_RUN_WORDS" "\${NVMEOF_RUN_FLAGS[*]}" "\${#NVMEOF_RUN_FLAGS[@]}"`,
    ],
  }).output();
  assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
  const [perms, permsArray, run, runArray, count] = new TextDecoder().decode(r.stdout).split("\n");
  assert.equal(permsArray, perms);
  assert.equal(runArray, run);
  assert.equal(Number(count), run.split(" ").length);
  assert.match(perms, /^--allow-all$/);
  assert.match(run, /--v8-flags=--single-threaded/);
});
