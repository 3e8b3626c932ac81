/**
 * Prometheus' own check of an exposition: `promtool check metrics` (Debian's `prometheus` package;
 * scripts/setup installs it). Without promtool a test may skip with its reason, except under
 * CI=true, where it fails.
 */
import assert from "node:assert/strict";

/** The path of promtool, or undefined when it is not installed. */
export function promtoolPath(): string | undefined {
  const out = new Deno.Command("sh", { args: ["-c", "command -v promtool"], stdout: "piped" })
    .outputSync();
  const path = new TextDecoder().decode(out.stdout).trim();
  return out.code === 0 && path ? path : undefined;
}

/** Why the promtool checks cannot run here, or undefined when they can. Fails under CI=true. */
export function promtoolMissing(): string | undefined {
  if (promtoolPath()) return undefined;
  const why = "promtool is not installed (apt-get install prometheus, or scripts/setup as root)";
  if (Deno.env.get("CI") === "true") throw new Error(`CI=true and ${why}`);
  return why;
}

/** Runs `promtool check metrics` on `text` and asserts it finds nothing to say. */
export async function assertPromtoolAccepts(text: string): Promise<void> {
  const child = new Deno.Command(promtoolPath()!, {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(text));
  await w.close();
  const out = await child.output();
  const dec = new TextDecoder();
  const said = dec.decode(out.stdout) + dec.decode(out.stderr);
  assert.equal(out.code, 0, `promtool check metrics refused the exposition:\n${said}\n${text}`);
  assert.equal(said.trim(), "", `promtool check metrics warned:\n${said}`);
}
