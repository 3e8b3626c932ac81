/**
 * Help over the whole command table: `nvmeof help` lists every command and subcommand, and each
 * command's help ends with worked examples that use it.
 */
import assert from "node:assert/strict";
import { type Command, loadCommands } from "../../src/cli/command.ts";
import { commandHelp, topHelp } from "../../src/cli/help.ts";
import { COMMANDS as ENTRIES } from "../../src/commands/mod.ts";

/** The whole table, every module loaded. */
const COMMANDS = await loadCommands(ENTRIES);

function walk(commands: Command[], prefix: string[] = []): Array<[string[], Command]> {
  return commands.flatMap((c) => {
    const path = [...prefix, c.name];
    return [[path, c] as [string[], Command], ...walk(c.subcommands ?? [], path)];
  });
}

Deno.test("nvmeof help lists every command and subcommand of the table with its summary", () => {
  const top = topHelp(COMMANDS, "0");
  for (const [path, c] of walk(COMMANDS)) {
    assert.match(
      top,
      new RegExp(`^ +${path.at(-1)} +${RegExp.escape(c.summary)}$`, "m"),
      path.join(" "),
    );
  }
});

Deno.test("every command's help has worked examples that run that command", () => {
  for (const [path, c] of walk(COMMANDS)) {
    const name = `nvmeof ${path.join(" ")}`;
    assert.ok((c.examples ?? []).length > 0, `${name} has no examples`);
    assert.ok(
      c.examples!.some((e) => e.includes(name)),
      `no example of ${name} uses it: ${c.examples!.join(" | ")}`,
    );
    const help = commandHelp(c, path);
    assert.match(help, /\nExamples:\n {2}\S/, name);
  }
});
