import type { CommandDetails } from "../cli/command.ts";
import { versionInfo } from "../version.ts";

/** `nvmeof version`: the same as `nvmeof --version`. */
export const versionCommand: CommandDetails = {
  examples: ["nvmeof version", "nvmeof version -o json"],
  run() {
    const info = versionInfo();
    return Promise.resolve({
      data: info,
      text: (d: Record<string, string>) =>
        `nvmeof ${d.nvmeof} (deno ${d.deno}, v8 ${d.v8}, ${d.os})`,
    });
  },
};
