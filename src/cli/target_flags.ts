/** Flags the `target` subcommands share. */
import { DEFAULT_SPEC_FILE } from "../target/spec.ts";

/** -f FILE: the target spec. */
export const specFlag = {
  file: {
    type: "string" as const,
    short: "f",
    value: "FILE",
    description: `Target spec, YAML or JSON (default ${DEFAULT_SPEC_FILE})`,
  },
};

/** --dry-run: show the configfs steps only. */
export const dryRunFlag = {
  "dry-run": {
    type: "boolean" as const,
    description: "Print the configfs steps, in order, and change nothing",
  },
};
