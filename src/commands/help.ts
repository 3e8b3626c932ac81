import { type CommandDetails, type CommandEntry, loadCommand } from "../cli/command.ts";
import { commandHelp, topHelp } from "../cli/help.ts";
import { UsageError } from "../errors.ts";
import { VERSION } from "../version.ts";

/** Builds `nvmeof help [command [subcommand]]` over the given table. */
export function helpCommand(table: CommandEntry[]): CommandDetails {
  return {
    args: "[command [subcommand]]",
    argChoices: "commands",
    examples: ["nvmeof help", "nvmeof help target up"],
    async run(ctx) {
      let list = table;
      let entry: CommandEntry | undefined;
      const path: string[] = [];
      for (const word of ctx.positionals) {
        const found = list.find((c) => c.name === word);
        if (!found) {
          const where = path.length ? ` of 'nvmeof ${path.join(" ")}'` : "";
          throw new UsageError(`No command '${word}'${where}.`, {
            hint: "Run 'nvmeof help' to list the commands.",
          });
        }
        entry = found;
        path.push(word);
        list = found.subcommands ?? [];
      }
      // Only the command asked about is loaded; the listing needs no module.
      const text = entry ? commandHelp(await loadCommand(entry), path) : topHelp(table, VERSION);
      return { data: { help: text }, text: () => text };
    },
  };
}
