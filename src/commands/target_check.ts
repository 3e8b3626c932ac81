/**
 * `nvmeof target check`: validate a spec without touching configfs (src/target/spec.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { specFlag } from "../cli/target_flags.ts";
import { specCounts, specWarnings } from "../target/report.ts";
import { DEFAULT_SPEC_FILE, loadSpecFile } from "../target/spec.ts";

async function checkRun(ctx: RunContext): Promise<CommandResult> {
  const file = (ctx.values.file as string | undefined) ?? DEFAULT_SPEC_FILE;
  const spec = await loadSpecFile(file);
  const warns = specWarnings(spec);
  for (const w of warns) ctx.note(w);
  const c = specCounts(spec);
  return {
    data: { file, valid: true, ...c, warnings: warns },
    text: () =>
      `Spec '${file}' is valid: ${c.hosts} host(s), ${c.subsystems} subsystem(s), ${c.namespaces} namespace(s), ${c.ports} port(s).`,
  };
}

/** `nvmeof target check`. */
export const targetCheckCommand: CommandDetails = {
  description: `
Runs every check 'target up' runs before its first write: syntax (with line and column), unknown
keys, NQN form and length, duplicates, devices, addresses, service ids, key files and their modes.
Each problem names its spec path and the fix. Exit 0 when valid, 1 when not.`,
  options: { ...specFlag },
  examples: [
    "nvmeof target check -f /etc/nvmeof/target.yaml",
    "nvmeof target check -f t.yaml -o json",
  ],
  run: checkRun,
};
