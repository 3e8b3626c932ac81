/**
 * `nvmeof target import`: nvmetcli's saved JSON as a spec (src/target/nvmetcli.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import { importNvmetcliFile } from "../target/nvmetcli.ts";

async function importRun(ctx: RunContext): Promise<CommandResult> {
  const file = ctx.values["from-nvmetcli"] as string | undefined;
  if (!file) {
    throw new UsageError("Name the nvmetcli file: --from-nvmetcli FILE.json.", {
      hint: "nvmetcli keeps it in /etc/nvmet/config.json.",
    });
  }
  const { stringify } = await import("yaml");
  const spec = await importNvmetcliFile(file, { note: ctx.note });
  return { data: spec, text: (d: unknown) => stringify(d, { lineWidth: 0 }) };
}

/** `nvmeof target import`. */
export const targetImportCommand: CommandDetails = {
  description: `
Reads nvmetcli's saved configuration (nvmetcli save, /etc/nvmet/config.json) and prints the
equivalent spec (YAML, or JSON with -o json). Referrals and passthru subsystems are not managed by
nvmeof and are left out with a note; DH-HMAC-CHAP keys must be moved to key files.`,
  options: {
    "from-nvmetcli": { type: "string", value: "FILE", description: "nvmetcli's JSON file" },
  },
  examples: [
    "nvmeof target import --from-nvmetcli /etc/nvmet/config.json > /etc/nvmeof/target.yaml",
  ],
  run: importRun,
};
