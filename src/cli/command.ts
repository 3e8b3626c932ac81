/**
 * The shape of a command-table row. Every verb of nvmeof is one `Command`, listed in
 * src/commands/mod.ts; main.ts parses flags against the row, calls `run`, and renders the result.
 */

/** One flag of a command, in `node:util` parseArgs terms plus help text. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** Name of the value in help (`-a, --traddr ADDR`). */
  value?: string;
  description: string;
  /** A default shown in help and applied before `run` (strings only). */
  default?: string;
}

/** Flags every command accepts. */
export interface GlobalOptions {
  /** "text", "json", or one of the command's own `outputs`. */
  output: string;
  verbose: boolean;
  /** Where configfs is mounted (nvmet lives below it in `nvmet/`). */
  configfs: string;
}

/** Parsed flags: strings, booleans, or lists for `multiple` flags. */
export type OptionValues = Record<string, string | boolean | string[] | undefined>;

/** What `run` gets. */
export interface RunContext {
  values: OptionValues;
  positionals: string[];
  global: GlobalOptions;
  /** Writes a progress or diagnostic line to stderr (never stdout). */
  note(line: string): void;
}

/** What `run` returns: data for `-o json`, and how to show it as text. */
export interface CommandResult<T = unknown> {
  data: T;
  /** Text rendering; without it the text output is a generic listing of `data`. */
  text?(data: T): string;
  /** Renders one of the command's own extra `-o` formats (see `Command.outputs`). */
  format?(name: string, data: T): string | undefined;
  /** 0 unless the command completed with something failed (never 0 on partial failure). */
  exitCode?: number;
}

/** A row of the command table. */
export interface Command {
  name: string;
  /** One line for the listing in `nvmeof help`. */
  summary: string;
  /** Arguments after the flags, as shown in the usage line (`<nqn>`). */
  args?: string;
  /** Paragraphs after the usage line. */
  description?: string;
  options?: Record<string, OptionSpec>;
  /** `-o` values this command accepts besides text and json (e.g. "yaml"). */
  outputs?: string[];
  /** Worked examples, each a command line, optionally followed by `  # what it does`. */
  examples?: string[];
  subcommands?: Command[];
  /** Absent for a command that only groups subcommands. */
  run?: (ctx: RunContext) => Promise<CommandResult>;
}
