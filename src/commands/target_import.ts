/**
 * `nvmeof target import`: nvmetcli's saved JSON as a spec (src/target/nvmetcli.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { UsageError } from "../errors.ts";

async function importRun(ctx: RunContext): Promise<CommandResult> {
  const { persistPaths } = await import("../persist/etc_paths.ts");
  const { importNvmetcliFile } = await import("../target/nvmetcli.ts");
  const file = ctx.values["from-nvmetcli"] as string | undefined;
  if (!file) {
    throw new UsageError("Name the nvmetcli file: --from-nvmetcli FILE.json.", {
      hint: "nvmetcli keeps it in /etc/nvmet/config.json.",
    });
  }
  const { spec } = await importNvmetcliFile(file, {
    note: ctx.note,
    keyDir: `${persistPaths().etc}/keys`,
    dryRun: ctx.values["dry-run"] === true,
  });
  if (ctx.global.output === "json") return { data: spec };
  const { specYamlText } = await import("../target/spec_yaml.ts");
  const yaml = await specYamlText(spec);
  return { data: spec, text: () => yaml };
}

/** `nvmeof target import`. */
export const targetImportCommand: CommandDetails = {
  description: `
Reads nvmetcli's saved configuration (nvmetcli save, /etc/nvmet/config.json) and prints the
equivalent spec (YAML, or JSON with -o json). Every field is carried: ANA groups and their states,
each namespace's ana_grpid, referrals, the cntlid range, qid_max, pi_enable, resv, firmware,
ieee_oui, hosts' DH-HMAC-CHAP settings. Inline DH-HMAC-CHAP keys are written to key files under
/etc/nvmeof/keys (mode 0600), which the spec names; the keys themselves are never printed. What the
spec cannot carry (passthru subsystems, a discovery NQN of its own, keys nvmetcli does not write)
is named in a warning on stderr. Left out as defaults: an all-zero NGUID, group 1 optimized, a
loop port's empty addresses, hash and DH group of a host without a key.`,
  options: {
    "from-nvmetcli": { type: "string", value: "FILE", description: "nvmetcli's JSON file" },
    "dry-run": { type: "boolean", description: "Print the spec; write no key files" },
  },
  examples: [
    "nvmeof target import --from-nvmetcli /etc/nvmet/config.json > /etc/nvmeof/target.yaml",
    "nvmeof target import --from-nvmetcli config.json --dry-run -o json",
  ],
  run: importRun,
};
