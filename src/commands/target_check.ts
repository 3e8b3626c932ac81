/**
 * `nvmeof target check`: validate a spec without touching configfs (src/target/spec.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { specFlag } from "../cli/target_flags.ts";
import { defaultSpecFile } from "../target/spec_file.ts";

async function checkRun(ctx: RunContext): Promise<CommandResult> {
  const { specCounts, specWarnings } = await import("../target/report.ts");
  const { loadSpecFile } = await import("../target/spec.ts");
  const file = (ctx.values.file as string | undefined) ?? defaultSpecFile();
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
keys, NQNs (length, the discovery NQN, characters nvmet refuses), duplicates, devices, addresses,
service ids, key files and their modes. Each problem names its spec path and the fix. Exit 0 when
valid, 1 when not. Warns, without failing, of allow_any_host and of NQNs nvmet accepts that are
not of the nqn.<yyyy-mm>.<reverse-domain>[:<name>] form (nvmetcli's 'testnqn').`,
  options: { ...specFlag },
  examples: [
    "nvmeof target check -f /etc/nvmeof/target.yaml",
    "nvmeof target check -f t.yaml -o json",
  ],
  run: checkRun,
};
