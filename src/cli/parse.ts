import {
  type CommandEntry,
  type GlobalOptions,
  loadCommand,
  type LoadedCommand,
  type OptionSpec,
  type OptionValues,
} from "./command.ts";
import { GLOBAL_OPTIONS } from "./global.ts";
import { UsageError } from "../errors.ts";

/** The result of matching argv against the command table. */
export interface Invocation {
  /** The matched command, or undefined for bare `nvmeof [--help|--version]`. */
  command?: LoadedCommand;
  /** Its full name, e.g. ["target", "up"]. */
  path: string[];
  values: OptionValues;
  positionals: string[];
  global: GlobalOptions;
  help: boolean;
  version: boolean;
}

const valueTaking = new Set(
  Object.entries(GLOBAL_OPTIONS).flatMap(([name, o]) =>
    o.type === "string" ? [`--${name}`, ...(o.short ? [`-${o.short}`] : [])] : []
  ),
);

/**
 * Finds the command (and subcommand) named in argv and loads its module (only that one), then
 * parses every flag strictly against that command's options plus the global ones. Unknown flags,
 * missing values and stray arguments are usage errors that name the command to ask for help.
 */
export async function parseInvocation(
  argv: string[],
  commands: CommandEntry[],
): Promise<Invocation> {
  const rest: string[] = [];
  const path: string[] = [];
  let entry: CommandEntry | undefined;
  let table: CommandEntry[] | undefined = commands;
  let version = false;
  /** The first word that named no subcommand of a command that has some. */
  let stray: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === "--version" && !entry) {
      version = true;
      continue;
    }
    if (arg.startsWith("-")) {
      rest.push(arg);
      // A global flag's separate value must not be taken for a command name.
      if (valueTaking.has(arg) && i + 1 < argv.length) rest.push(argv[++i]);
      continue;
    }
    if (table) {
      const found: CommandEntry | undefined = table.find((c) => c.name === arg);
      if (found) {
        entry = found;
        path.push(arg);
        table = found.subcommands;
        continue;
      }
      if (!entry) {
        throw new UsageError(`Unknown command '${arg}'.`, {
          hint: `Run 'nvmeof help' to list the commands.`,
        });
      }
      stray = arg;
    }
    table = undefined; // positionals of the command from here on
    rest.push(arg);
  }

  const command: LoadedCommand | undefined = entry && await loadCommand(entry);
  // A command with subcommands takes positionals only if it also runs on its own.
  if (command && stray !== undefined && !command.run) {
    throw new UsageError(`Unknown subcommand '${stray}' of 'nvmeof ${path.join(" ")}'.`, {
      hint: `Run 'nvmeof ${path.join(" ")} --help' to list its subcommands.`,
    });
  }
  const options: Record<string, OptionSpec> = { ...GLOBAL_OPTIONS, ...command?.options };
  const where = path.length ? `nvmeof ${path.join(" ")}` : "nvmeof";
  let parsed;
  try {
    parsed = await parseFlags(rest, options);
  } catch (err) {
    // node's message adds advice about '--' that only fits positionals; keep the first sentence.
    const first = (err as Error).message.split(". ")[0].replace(/\.?$/, ".");
    throw new UsageError(first, {
      cause: err,
      hint: `Run '${where} --help' for the flags it takes.`,
    });
  }
  const values = { ...parsed.values } as OptionValues;
  for (const [name, o] of Object.entries(options)) {
    if (values[name] === undefined && o.default !== undefined) values[name] = o.default;
  }
  // --output-format is nvme-cli's name for -o, and its 'normal' is nvmeof's text.
  const given = stringFlag(values, "output-format") ?? stringFlag(values, "output") ??
    String(GLOBAL_OPTIONS.output.default);
  const output = given === "normal" ? "text" : given;
  const formats = ["text", "json", ...(command?.outputs ?? [])];
  if (!formats.includes(output)) {
    throw new UsageError(
      `Invalid output format '${output}'${path.length ? ` for '${where}'` : ""}.`,
      {
        hint: `Use ${formats.map((f) => `-o ${f}`).join(", ")} (-o normal is text).`,
      },
    );
  }
  const global: GlobalOptions = {
    output,
    verbose: values.verbose === true,
    configfs: stringFlag(values, "configfs") ?? String(GLOBAL_OPTIONS.configfs.default),
  };
  const help = values.help === true;
  for (const name of Object.keys(GLOBAL_OPTIONS)) delete values[name];
  if (command && !command.run && !help && !version) {
    throw new UsageError(`'${where}' needs a subcommand.`, {
      hint: `Run '${where} --help' to list its subcommands.`,
    });
  }
  if (command && !command.args && parsed.positionals.length > 0 && !help) {
    throw new UsageError(`Unexpected argument '${parsed.positionals[0]}' for '${where}'.`, {
      hint: `Run '${where} --help' for its usage.`,
    });
  }
  return { command, path, values, positionals: parsed.positionals, global, help, version };
}

/** Parses flags: the common forms here (commonFlags), anything else with node's `parseArgs`. */
async function parseFlags(
  args: string[],
  options: Record<string, OptionSpec>,
): Promise<{ values: OptionValues; positionals: string[] }> {
  const joined = negativeValuesJoined(args, options);
  return commonFlags(joined, options) ?? await flagsByNode(joined, options);
}

/** ARGS (after negativeValuesJoined) read by node's `parseArgs`, strictly, positionals allowed. */
export async function flagsByNode(
  args: string[],
  options: Record<string, OptionSpec>,
): Promise<{ values: OptionValues; positionals: string[] }> {
  // Loaded here, not at start-up: node:util brings up Deno's Node.js layer, which costs about as
  // much as starting Deno itself (docs/benchmarks.md, "node:util at start-up").
  const { parseArgs } = await import("node:util");
  const { values, positionals } = parseArgs({
    args,
    options: Object.fromEntries(
      Object.entries(options).map(([name, o]) => [name, {
        type: o.type,
        ...(o.short ? { short: o.short } : {}),
        multiple: o.multiple === true,
      }]),
    ),
    strict: true,
    allowPositionals: true,
  });
  return { values: values as OptionValues, positionals };
}

/** The name of the flag whose short form is LETTER (`o` → `output`), or undefined. */
function longName(options: Record<string, OptionSpec>, letter: string): string | undefined {
  return Object.keys(options).find((n) => options[n].short === letter);
}

/**
 * ARGS with a negative number after a flag that takes a value joined to it (`-l -1` →
 * `--ctrl-loss-tmo=-1`), as getopt reads it for nvme-cli: `parseArgs` would take `-1` for a flag
 * of its own and call the value missing. `-l=-1` is read as `--ctrl-loss-tmo=-1` too (parseArgs
 * would take "=-1" for the value).
 */
export function negativeValuesJoined(
  args: string[],
  options: Record<string, OptionSpec>,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--") return out.concat(args.slice(i));
    // `-l=-1`: a short flag with its value after '=' (what `--ctrl-loss-tmo=-1` says).
    const eq = /^-([A-Za-z])=(.*)$/s.exec(a);
    const short = eq ? longName(options, eq[1]) : undefined;
    if (eq && short !== undefined && options[short].type === "string") {
      out.push(`--${short}=${eq[2]}`);
      continue;
    }
    const name = a.startsWith("--")
      ? a.slice(2)
      : a.length === 2 && a[0] === "-"
      ? longName(options, a[1])
      : undefined;
    const next = args[i + 1];
    if (
      name !== undefined && Object.hasOwn(options, name) && options[name].type === "string" &&
      next !== undefined && /^-\d+$/.test(next)
    ) {
      out.push(`--${name}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * What `parseFlags` returns for ARGS (after negativeValuesJoined) in the forms commands are written
 * in, without loading node's parseArgs: known flags as `--name value`, `--name=value`, `-x value` or
 * a lone switch, `-` and other words as positionals, and everything after `--`. Undefined for
 * anything else (a short flag with its value attached or several short flags in one word, an
 * unknown flag, a missing or dash-led value, a value given to a switch): parseArgs then reads them
 * and words every error. tests/unit/parse_test.ts compares the two on generated argv.
 */
export function commonFlags(
  args: string[],
  options: Record<string, OptionSpec>,
): { values: OptionValues; positionals: string[] } | undefined {
  const values: OptionValues = {};
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      for (let j = i + 1; j < args.length; j++) positionals.push(args[j]);
      break;
    }
    if (arg.length < 2 || arg[0] !== "-") {
      positionals.push(arg);
      continue;
    }
    let name: string | undefined;
    let value: string | undefined;
    if (arg[1] === "-") {
      const eq = arg.indexOf("=");
      name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (eq >= 0) value = arg.slice(eq + 1);
    } else if (arg.length === 2) {
      name = longName(options, arg[1]);
    }
    if (name === undefined || !Object.hasOwn(options, name)) return undefined;
    const o = options[name];
    if (o.type === "string" && value === undefined) {
      value = args[++i];
      if (value === undefined || (value.length > 1 && value[0] === "-")) return undefined;
    }
    if (o.type === "boolean" && value !== undefined) return undefined;
    const v = value ?? true;
    // A repeatable switch collects `true`s, as parseArgs does (OptionValues types only strings).
    if (!o.multiple) values[name] = v;
    else ((values[name] ??= []) as unknown[]).push(v);
  }
  return { values, positionals };
}

/**
 * The value of string flag `name`, undefined when it was not given. A flag the table declares
 * as boolean or `multiple` is a bug in the caller (TypeError), not the user's mistake.
 */
export function stringFlag(
  values: Readonly<Record<string, unknown>>,
  name: string,
): string | undefined {
  const v = values[name];
  if (v === undefined || typeof v === "string") return v;
  throw new TypeError(`--${name} is not a single-valued string flag`);
}

/** The value of string flag `name`; a usage error saying `missing` when it was not given. */
export function requiredStringFlag(
  values: Readonly<Record<string, unknown>>,
  name: string,
  missing: string,
): string {
  const v = stringFlag(values, name);
  if (v === undefined) throw new UsageError(missing);
  return v;
}

/**
 * A non-negative integer flag: `def` when absent, else digits from `min` to `max` (a usage error
 * naming the flag otherwise).
 */
export function intFlag(
  v: Readonly<Record<string, unknown>>,
  name: string,
  def: number,
  min = 0,
  max = 2 ** 31 - 1,
): number {
  const raw = v[name];
  if (raw === undefined) return def;
  const text = String(raw);
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, not '${text}'.`);
  }
  return Number(text);
}

/** Like intFlag, but undefined when the flag is absent. */
export function optionalIntFlag(
  v: Readonly<Record<string, unknown>>,
  name: string,
  min: number,
  max: number,
): number | undefined {
  return v[name] === undefined ? undefined : intFlag(v, name, min, min, max);
}
