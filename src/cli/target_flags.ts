/** Flags the `target` subcommands share. */
import { defaultSpecFile } from "../target/spec_file.ts";

/** -f FILE: the target spec. */
export const specFlag = {
  file: {
    type: "string" as const,
    short: "f",
    value: "FILE",
    description: `Target spec, YAML or JSON (default ${defaultSpecFile()})`,
  },
};

/** --dry-run: show the configfs steps only. */
export const dryRunFlag = {
  "dry-run": {
    type: "boolean" as const,
    description:
      "Print the configfs steps, in order, and change nothing (over 40 summarised unless -v)",
  },
};
