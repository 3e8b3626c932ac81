import meta from "../deno.json" with { type: "json" };

/** The product version, from deno.json. */
export const VERSION: string = meta.version;

/** Version facts for `nvmeof --version` and bug reports. */
export function versionInfo(): Record<string, string> {
  return {
    nvmeof: VERSION,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    os: `${Deno.build.os} ${Deno.build.arch}`,
  };
}
