import type { OptionSpec } from "./command.ts";

/** Flags accepted by every command, before or after the command name. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  output: {
    type: "string",
    short: "o",
    value: "FORMAT",
    description: "Output format: text or json",
    default: "text",
  },
  verbose: {
    type: "boolean",
    description: "Show the cause chain of errors and progress details",
  },
  configfs: {
    type: "string",
    value: "DIR",
    description: "Where configfs is mounted (nvmet lives in DIR/nvmet)",
    default: "/sys/kernel/config",
  },
  help: { type: "boolean", short: "h", description: "Show help for the command" },
};
