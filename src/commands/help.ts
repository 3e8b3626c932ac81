import type { Command } from "../cli/command.ts";
import { commandHelp, topHelp } from "../cli/help.ts";
import { UsageError } from "../errors.ts";
import { VERSION } from "../version.ts";

/** Builds `nvmeof help [command [subcommand]]` over the given table. */
export function helpCommand(table: () => Command[]): Command {
  return {
    name: "help",
    summary: "Show help for nvmeof or one of its commands",
    args: "[command [subcommand]]",
    examples: ["nvmeof help", "nvmeof help target up"],
    run(ctx) {
      let list = table();
      let cmd: Command | undefined;
      const path: string[] = [];
      for (const word of ctx.positionals) {
        const found = list.find((c) => c.name === word);
        if (!found) {
          const where = path.length ? ` of 'nvmeof ${path.join(" ")}'` : "";
          throw new UsageError(`No command '${word}'${where}.`, {
            hint: "Run 'nvmeof help' to list the commands.",
          });
        }
        cmd = found;
        path.push(word);
        list = found.subcommands ?? [];
      }
      const text = cmd ? commandHelp(cmd, path) : topHelp(table(), VERSION);
      return Promise.resolve({ data: { help: text }, text: () => text });
    },
  };
}
