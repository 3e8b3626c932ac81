import type { OptionSpec } from "./command.ts";

/** Flags accepted by every command, before or after the command name. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  output: {
    type: "string",
    short: "o",
    value: "FORMAT",
    description: "Output format: text (nvme-cli's 'normal' is the same) or json",
    default: "text",
  },
  "output-format": {
    type: "string",
    value: "FORMAT",
    description: "Same as -o/--output (nvme-cli's long name)",
  },
  verbose: {
    type: "boolean",
    short: "v",
    description:
      "More detail on stderr: progress, the option string written (secrets hidden), the cause chain of errors",
  },
  configfs: {
    type: "string",
    value: "DIR",
    description: "Where configfs is mounted (nvmet lives in DIR/nvmet)",
    default: "/sys/kernel/config",
  },
  help: { type: "boolean", short: "h", description: "Show help for the command" },
};
