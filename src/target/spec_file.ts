/**
 * Where the target spec is read from by default. Apart from spec.ts so that the flags' help
 * (src/cli/target_flags.ts) shows it without loading the spec's parser and validators.
 */
import { hostPaths } from "../host_paths.ts";

/** Where `target up/down/check/enable` look without -f: target.yaml in NVMEOF_ETC (/etc/nvmeof). */
export function defaultSpecFile(env: (name: string) => string | undefined = Deno.env.get): string {
  return `${hostPaths(env).etc}/target.yaml`;
}
