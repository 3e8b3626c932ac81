/**
 * nvmeof: argv → command table → result → renderer → exit code.
 * This is the only place the process exits.
 */
import type { RunEnv } from "./src/cli/command.ts";
import { COMMANDS } from "./src/commands/mod.ts";
import { parseInvocation } from "./src/cli/parse.ts";
import { commandHelp, topHelp } from "./src/cli/help.ts";
import { errorRecord, EXIT, exitCodeOf, formatError, UsageError } from "./src/errors.ts";
import { writeAll } from "./src/output/write.ts";

function write(fd: typeof Deno.stdout, text: string): void {
  writeAll(fd, text); // a reader that closed the pipe early is not an error (see write.ts)
}

/**
 * Runs one invocation and returns the exit code. ENV replaces parts of this host for the commands
 * (the cli tier's stand-ins); the product gives none.
 */
export async function main(argv: string[], env: RunEnv = {}): Promise<number> {
  const verbose = argv.includes("--verbose") || argv.includes("-v");
  try {
    const inv = await parseInvocation(argv, COMMANDS);
    if (inv.version && !inv.command) {
      const { versionInfo } = await import("./src/version.ts");
      const { toJson } = await import("./src/output/render.ts");
      const info = versionInfo();
      write(
        Deno.stdout,
        inv.global.output === "json"
          ? toJson(info) + "\n"
          : `nvmeof ${info.nvmeof} (deno ${info.deno}, v8 ${info.v8}, ${info.os})\n`,
      );
      return EXIT.ok;
    }
    if (!inv.command) {
      // The version is read only here and by --version: a command's --help loads neither module.
      const { VERSION } = await import("./src/version.ts");
      if (inv.help) {
        write(Deno.stdout, topHelp(COMMANDS, VERSION));
        return EXIT.ok;
      }
      write(Deno.stderr, topHelp(COMMANDS, VERSION));
      throw new UsageError("No command given.", { hint: "Run 'nvmeof help <command>'." });
    }
    if (inv.help) {
      write(Deno.stdout, commandHelp(inv.command, inv.path));
      return EXIT.ok;
    }
    const result = await inv.command.run!({
      values: inv.values,
      positionals: inv.positionals,
      global: inv.global,
      note: (line) => write(Deno.stderr, line.endsWith("\n") ? line : line + "\n"),
      env,
    });
    const { render } = await import("./src/output/render.ts");
    write(Deno.stdout, render(result, inv.global.output));
    return result.exitCode ?? EXIT.ok;
  } catch (err) {
    write(Deno.stderr, formatError(err, verbose) + "\n");
    // Scripts asking for JSON get the error as JSON too (on stdout, where they read the result).
    if (wantsJson(argv)) {
      const { toJson } = await import("./src/output/render.ts");
      write(Deno.stdout, toJson({ error: errorRecord(err) }) + "\n");
    }
    return exitCodeOf(err);
  }
}

/** Whether argv asks for -o json (read from argv itself: the parse may be what failed). */
function wantsJson(argv: string[]): boolean {
  for (let i = 0; i < argv.length && argv[i] !== "--"; i++) {
    const a = argv[i];
    const flag = a === "-o" || a === "--output" || a === "--output-format";
    if (flag && argv[i + 1] === "json") return true;
    if (a === "-ojson" || a === "--output=json" || a === "--output-format=json") return true;
  }
  return false;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
