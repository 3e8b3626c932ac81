/**
 * `nvmeof target schema`: the JSON Schema of the target spec, for editors.
 */
import type { CommandDetails } from "../cli/command.ts";
import { toJson } from "../output/render.ts";

/** `nvmeof target schema`. */
export const targetSchemaCommand: CommandDetails = {
  description: `
Prints the JSON Schema (draft 2020-12) of the spec that 'target up', 'target check' and
'target enable' read. It comes from the same definitions as the validator: the keys, types,
ranges and allowed values. Save it and point your editor's YAML language server at it, e.g. with
a first line '# yaml-language-server: $schema=/etc/nvmeof/target.schema.json' in the spec.
'nvmeof target check' still checks what a schema cannot: devices, key file modes, references.
The output is JSON with or without -o json.`,
  examples: [
    "nvmeof target schema > /etc/nvmeof/target.schema.json",
    "nvmeof target schema | jq '.[\"$defs\"].port.properties | keys'",
  ],
  async run() {
    const { targetSpecSchema } = await import("../target/schema.ts");
    const schema = targetSpecSchema();
    return { data: schema, text: () => toJson(schema) };
  },
};
