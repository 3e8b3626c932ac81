/**
 * The shape of a command-table row. Every verb of nvmeof is one `CommandEntry`, listed in
 * src/commands/mod.ts; main.ts finds the row named in argv, loads it into a `Command`, parses flags
 * against it, calls `run`, and renders the result.
 */
import type { TargetEnv } from "../target/env.ts";

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
  /** The values shell completion offers for it (the values the command accepts). */
  choices?: readonly string[];
  /** Values completion reads from the host when asked: "controllers" (nvmeN of /sys/class/nvme). */
  complete?: "controllers";
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

/**
 * What main is given in place of this host's own: the cli tier's entry point passes stand-ins
 * here (tests/standin/main.ts); the product passes nothing, and each command uses the kernel's.
 */
export interface RunEnv {
  /** The nvmet configfs and connection sources of the target commands. */
  target?: TargetEnv;
}

/** What `run` gets. */
export interface RunContext {
  values: OptionValues;
  positionals: string[];
  global: GlobalOptions;
  /** Writes a progress or diagnostic line to stderr (never stdout). */
  note(line: string): void;
  /** Stand-ins for this host's own (absent: the kernel's). */
  env?: RunEnv;
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
  /**
   * The command wrote its output to stdout itself as it went (a live view, JSON lines one per
   * refresh), so main renders nothing more, in any format.
   */
  streamed?: boolean;
}

/** What a command's module defines: its flags, help and `run`. Its name and summary are the table's. */
export interface CommandDetails {
  /** Arguments after the flags, as shown in the usage line (`<nqn>`). */
  args?: string;
  /** Paragraphs after the usage line. */
  description?: string;
  options?: Record<string, OptionSpec>;
  /** `-o` values this command accepts besides text and json (e.g. "yaml"). */
  outputs?: string[];
  /** What shell completion offers for the arguments: fixed words, or the command table's names. */
  argChoices?: readonly string[] | "commands";
  /** Worked examples, each a command line, optionally followed by `  # what it does`. */
  examples?: string[];
  /** Absent for a command that only groups subcommands. */
  run?: (ctx: RunContext) => Promise<CommandResult>;
}

/** What the table says of a command without loading its module: enough for `nvmeof help`. */
export interface CommandListing {
  name: string;
  /** One line for the listing in `nvmeof help`. */
  summary: string;
  subcommands?: CommandListing[];
}

/**
 * A row of the command table (src/commands/mod.ts): name, summary, subcommands, and `load`, which
 * imports the command's module only when the command runs or its help is asked for, so that
 * `nvmeof --version` loads no command module and `nvmeof list` loads only list's.
 */
export interface CommandEntry extends CommandListing {
  subcommands?: CommandEntry[];
  load(): Promise<CommandDetails>;
}

/**
 * A row with its own module loaded, its subcommands listed by name and summary only: what main,
 * the parser and help use, so that `nvmeof target --help` loads no subcommand's module.
 */
export interface LoadedCommand extends CommandListing, CommandDetails {}

/** A row with its module loaded and its subcommands' too: what completions use. */
export interface Command extends LoadedCommand {
  subcommands?: Command[];
}

/** Loads a row's own module; its subcommands stay listings (loaded when one of them is named). */
export async function loadCommand(entry: CommandEntry): Promise<LoadedCommand> {
  return { ...await entry.load(), ...listing(entry) };
}

/** A row's name, summary and subcommands' listings: what the table says without loading. */
function listing(entry: CommandListing): CommandListing {
  const out: CommandListing = { name: entry.name, summary: entry.summary };
  if (entry.subcommands) out.subcommands = entry.subcommands.map(listing);
  return out;
}

/** Loads every row of a table with its subcommands (for completions, and tests over the table). */
export function loadCommands(entries: CommandEntry[]): Promise<Command[]> {
  return Promise.all(entries.map(async (entry) => {
    const [details, subcommands] = await Promise.all([
      entry.load(),
      entry.subcommands ? loadCommands(entry.subcommands) : undefined,
    ]);
    return {
      ...details,
      name: entry.name,
      summary: entry.summary,
      ...(subcommands ? { subcommands } : {}),
    };
  }));
}
