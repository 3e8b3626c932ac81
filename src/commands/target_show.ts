/**
 * `nvmeof target show`: the live nvmet tree as a spec (src/target/show.ts) or as nvmetcli's JSON
 * (src/target/nvmetcli.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";

async function showRun(ctx: RunContext): Promise<CommandResult> {
  const { readTarget } = await import("../target/env.ts");
  const { live, loaded } = readTarget(ctx.global.configfs, ctx.env?.target);
  if (!loaded) {
    ctx.note(
      `nvmet is not loaded ('${ctx.global.configfs}/nvmet' does not exist): nothing is configured.`,
    );
  }
  if (ctx.values.nvmetcli === true || ctx.global.output === "nvmetcli") {
    const { treeToNvmetcli } = await import("../target/nvmetcli.ts");
    const data = treeToNvmetcli(live);
    const json = (d: unknown) => JSON.stringify(d, null, 2);
    return { data, text: json, format: (name, d) => name === "nvmetcli" ? json(d) : undefined };
  }
  const { treeToSpec } = await import("../target/show.ts");
  const data = treeToSpec(live);
  if (ctx.global.output === "json") return { data };
  const { specYamlText } = await import("../target/spec_yaml.ts");
  const yaml = await specYamlText(data);
  return { data, text: () => yaml, format: (name) => name === "yaml" ? yaml : undefined };
}

/** `nvmeof target show`. */
export const targetShowCommand: CommandDetails = {
  description: `
Reads configfs into the spec's shape: 'nvmeof target show > t.yaml' then 'nvmeof target up -f t.yaml'
changes nothing. DH-HMAC-CHAP keys are never printed. -o nvmetcli (or --nvmetcli) prints
nvmetcli's saved-config JSON instead: what 'nvmetcli save' writes for this tree (ANA groups,
ana_grpid, referrals, every attribute, sorted keys), without the DH-HMAC-CHAP keys.
-o text and -o yaml are the same.`,
  options: {
    nvmetcli: { type: "boolean", description: "Print nvmetcli's JSON format instead of the spec" },
  },
  outputs: ["yaml", "nvmetcli"],
  examples: [
    "nvmeof target show",
    "nvmeof target show -o json",
    "nvmeof target show > /etc/nvmeof/target.yaml   # adopt a hand-made configuration",
    "nvmeof target show -o nvmetcli > /etc/nvmet/config.json",
  ],
  run: showRun,
};
