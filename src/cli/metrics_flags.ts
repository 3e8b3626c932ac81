/** Flags the commands that collect the metric families share (`metrics`, `top`, `exporter`). */
import { DEFAULT_COLLECTOR_TIMEOUT_MS } from "../metrics/defaults.ts";
import { UsageError } from "../errors.ts";
import { stringFlag } from "./parse.ts";

/** --collector-timeout-ms MS: each collector's time limit. */
export const collectorTimeoutFlag = {
  "collector-timeout-ms": {
    type: "string" as const,
    value: "MS",
    description: `Each collector's time limit (default ${DEFAULT_COLLECTOR_TIMEOUT_MS}); a late ` +
      "one is reported failed and its families left out",
  },
};

/** A flag of whole milliseconds, FALLBACK when not given; a UsageError when it is none. */
export function msFlag(values: Record<string, unknown>, name: string, fallback: number): number {
  const text = stringFlag(values, name) ?? String(fallback);
  if (!/^\d+$/.test(text)) {
    throw new UsageError(`Invalid --${name} '${text}': expected milliseconds (a whole number).`);
  }
  return Number(text);
}

/** The --collector-timeout-ms value. */
export function collectorTimeoutMs(values: Record<string, unknown>): number {
  return msFlag(values, "collector-timeout-ms", DEFAULT_COLLECTOR_TIMEOUT_MS);
}
