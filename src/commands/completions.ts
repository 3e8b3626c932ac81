/**
 * `nvmeof completions bash|zsh|fish`: shell completion generated from the command table.
 */
import { type CommandDetails, type CommandEntry, loadCommands } from "../cli/command.ts";
import { UsageError } from "../errors.ts";

/** Each shell's generator in src/cli/completions.ts, imported when the command runs. */
const SHELLS: Record<string, "bashCompletion" | "zshCompletion" | "fishCompletion"> = {
  bash: "bashCompletion",
  zsh: "zshCompletion",
  fish: "fishCompletion",
};

/** Builds `nvmeof completions` over the given table. */
export function completionsCommand(table: CommandEntry[]): CommandDetails {
  return {
    args: "<bash|zsh|fish>",
    argChoices: Object.keys(SHELLS),
    description: `
Generated from nvmeof's own command table, so every command, subcommand and flag is offered,
and nothing else. After a flag its values: paths for a FILE (also as --file=PATH), the
command's formats for -o, the accepted values of -t/--transport, --trtype, --rw and --role,
and the controllers of /sys/class/nvme for disconnect -d. After 'help' the command names,
after 'completions' the shells.`,
    examples: [
      "nvmeof completions bash > /etc/bash_completion.d/nvmeof",
      "source <(nvmeof completions bash)   # this shell only",
      'nvmeof completions zsh > "${fpath[1]}/_nvmeof"',
      "nvmeof completions fish > ~/.config/fish/completions/nvmeof.fish",
    ],
    async run(ctx) {
      const shell = ctx.positionals[0];
      if (ctx.positionals.length !== 1 || !SHELLS[shell]) {
        throw new UsageError(
          shell === undefined
            ? "Name the shell."
            : `No completion for shell '${ctx.positionals.join(" ")}'.`,
          { hint: "Use: nvmeof completions bash|zsh|fish." },
        );
      }
      // Every command's flags are offered, so every command's module is loaded.
      const generate = (await import("../cli/completions.ts"))[SHELLS[shell]];
      const script = generate(await loadCommands(table));
      return { data: { shell, script }, text: () => script };
    },
  };
}
