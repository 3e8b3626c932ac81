/**
 * For tests/cli/startup_test.ts: runs nvmeof's main() with the given arguments, with every loader
 * of the command table wrapped to record its command path, then prints the paths loaded, as JSON,
 * as the last line of stderr.
 */
import type { CommandEntry } from "../../src/cli/command.ts";
import { COMMANDS } from "../../src/commands/mod.ts";

const loaded: string[] = [];

function spy(entries: CommandEntry[], prefix: string[]): void {
  for (const entry of entries) {
    const path = [...prefix, entry.name];
    const load = entry.load;
    entry.load = () => {
      loaded.push(path.join(" "));
      return load();
    };
    spy(entry.subcommands ?? [], path);
  }
}

spy(COMMANDS, []);
// Imported after the spy is in place, so that a load while main.ts is evaluated is seen too.
const { main } = await import("../../main.ts");
const code = await main(Deno.args);
console.error(JSON.stringify(loaded));
Deno.exit(code);
