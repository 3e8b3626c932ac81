/**
 * nvme-cli's spellings of the global flags: --output-format for -o, 'normal' for text, -v for
 * --verbose.
 */
import assert from "node:assert/strict";
import { parseInvocation } from "../../src/cli/parse.ts";
import { COMMANDS } from "../../src/commands/mod.ts";
import { UsageError } from "../../src/errors.ts";

Deno.test("--output-format is -o under nvme-cli's name, before or after the command", async () => {
  for (
    const argv of [
      ["list", "--output-format", "json"],
      ["list", "--output-format=json"],
      ["--output-format", "json", "list"],
      ["list", "-o", "json"],
    ]
  ) {
    const inv = await parseInvocation(argv, COMMANDS);
    assert.equal(inv.global.output, "json", argv.join(" "));
    assert.equal(inv.values["output-format"], undefined, "not passed to the command");
  }
});

Deno.test("-o normal and --output-format normal are text, as nvme-cli's 'normal'", async () => {
  assert.equal((await parseInvocation(["list", "-o", "normal"], COMMANDS)).global.output, "text");
  assert.equal(
    (await parseInvocation(["list", "--output-format=normal"], COMMANDS)).global.output,
    "text",
  );
  await assert.rejects(
    () => parseInvocation(["list", "-o", "binary"], COMMANDS),
    (e: Error) => e instanceof UsageError && /-o normal is text/.test(e.hint ?? ""),
  );
});

Deno.test("-v is --verbose", async () => {
  assert.equal((await parseInvocation(["list", "-v"], COMMANDS)).global.verbose, true);
  assert.equal((await parseInvocation(["-v", "list"], COMMANDS)).global.verbose, true);
  assert.equal((await parseInvocation(["list"], COMMANDS)).global.verbose, false);
});
