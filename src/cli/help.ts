import type { CommandListing, LoadedCommand, OptionSpec } from "./command.ts";
import { GLOBAL_OPTIONS } from "./global.ts";

function optionLines(options: Record<string, OptionSpec>): string[] {
  const rows = Object.entries(options).map(([name, o]) => {
    const flag = (o.short ? `-${o.short}, ` : "    ") + `--${name}` +
      (o.type === "string" ? ` ${o.value ?? "VALUE"}` : "");
    const extra = [
      o.multiple ? "repeatable" : "",
      o.default !== undefined ? `default: ${o.default}` : "",
    ].filter(Boolean).join("; ");
    return [flag, o.description + (extra ? ` (${extra})` : "")];
  });
  const width = Math.min(34, Math.max(...rows.map(([f]) => f.length)) + 2);
  return rows.map(([f, d]) =>
    f.length + 2 > width ? `  ${f}\n  ${" ".repeat(width)}${d}` : `  ${f.padEnd(width)}${d}`
  );
}

/** Help text of a command; `path` is its full name (`["target", "up"]`). */
export function commandHelp(cmd: LoadedCommand, path: string[]): string {
  const name = ["nvmeof", ...path].join(" ");
  const out: string[] = [];
  out.push(`${name}: ${cmd.summary}`, "");
  if (cmd.subcommands?.length) {
    out.push(`Usage: ${name} <subcommand> [flags]`, "");
  } else {
    out.push(`Usage: ${name} [flags]${cmd.args ? " " + cmd.args : ""}`, "");
  }
  if (cmd.description) out.push(cmd.description.trim(), "");
  if (cmd.subcommands?.length) {
    out.push("Subcommands:");
    const w = Math.max(...cmd.subcommands.map((s) => s.name.length)) + 2;
    for (const s of cmd.subcommands) out.push(`  ${s.name.padEnd(w)}${s.summary}`);
    out.push("");
  }
  if (cmd.options && Object.keys(cmd.options).length) {
    out.push("Flags:", ...optionLines(cmd.options), "");
  }
  out.push("Global flags:", ...optionLines(GLOBAL_OPTIONS), "");
  if (cmd.examples?.length) {
    out.push("Examples:", ...cmd.examples.map((e) => `  ${e}`), "");
  }
  if (cmd.subcommands?.length) {
    out.push(`Run '${name} <subcommand> --help' for a subcommand's flags.`);
  }
  return out.join("\n").trimEnd() + "\n";
}

/** The top-level help: every command of the table (names and summaries: no module is loaded). */
export function topHelp(commands: CommandListing[], version: string): string {
  const out = [
    `nvmeof ${version}: NVMe over Fabrics with RDMA, from one binary.`,
    "",
    "Usage: nvmeof <command> [subcommand] [flags]",
    "",
    "Commands:",
  ];
  const w = Math.max(...commands.map((c) => c.name.length)) + 2;
  for (const c of commands) {
    out.push(`  ${c.name.padEnd(w)}${c.summary}`);
    for (const s of c.subcommands ?? []) {
      out.push(`    ${s.name.padEnd(Math.max(w - 2, s.name.length + 2))}${s.summary}`);
    }
  }
  out.push(
    "",
    "Global flags:",
    ...optionLines({
      ...GLOBAL_OPTIONS,
      version: { type: "boolean", description: "Print the version and exit" },
    }),
    "",
    "Exit codes: 0 ok, 1 failure, 2 usage error, 3 environment (not root, module,",
    "configfs, RDMA device or library missing).",
    "",
    "Run 'nvmeof help <command>' or 'nvmeof <command> --help' for details and examples.",
  );
  return out.join("\n") + "\n";
}
