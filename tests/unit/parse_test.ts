/**
 * The flag parser: argv in the common forms, which start-up reads without loading node's
 * parseArgs (commonFlags), gives what parseArgs gives, on every command's flags; the rest is left
 * to parseArgs.
 */
import assert from "node:assert/strict";
import {
  type Command,
  type CommandEntry,
  loadCommands,
  type OptionSpec,
} from "../../src/cli/command.ts";
import { GLOBAL_OPTIONS } from "../../src/cli/global.ts";
import {
  commonFlags,
  flagsByNode,
  negativeValuesJoined,
  parseInvocation,
  requiredStringFlag,
  stringFlag,
} from "../../src/cli/parse.ts";
import { COMMANDS } from "../../src/commands/mod.ts";
import { UsageError } from "../../src/errors.ts";
import { type Rng, rng } from "../helpers.ts";

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? 20261207);
const ROUNDS = Number(Deno.env.get("FUZZ_ROUNDS") ?? 4000);

const OPTIONS: Record<string, OptionSpec> = {
  force: { type: "boolean", short: "f", description: "a switch" },
  nqn: { type: "string", short: "n", description: "a value" },
  tag: { type: "boolean", multiple: true, description: "a repeatable switch" },
};

const TABLE: CommandEntry[] = [{
  name: "cmd",
  summary: "a command",
  load: () => Promise.resolve({ options: OPTIONS, run: () => Promise.resolve({ data: null }) }),
}];

/** What node's parseArgs makes of the flags after the command name. */
async function byNode(args: string[]): Promise<Record<string, unknown>> {
  return { ...(await flagsByNode(args, { ...GLOBAL_OPTIONS, ...OPTIONS })).values };
}

Deno.test("switches alone parse as node's parseArgs parses them", async () => {
  const cases = [
    [],
    ["--help"],
    ["-h"],
    ["--verbose", "--help"],
    ["-h", "-h"],
    ["-f"],
    ["--force", "-h"],
    ["--tag", "--tag"],
    ["-f", "-n", "nqn.x"],
    ["--nqn=nqn.x", "-h"],
    ["-fh"],
  ];
  for (const args of cases) {
    const inv = await parseInvocation(["cmd", ...args], TABLE);
    const node = await byNode(args);
    const { help, verbose, ...own } = node;
    assert.equal(inv.help, help === true, args.join(" "));
    assert.equal(inv.global.verbose, verbose === true, args.join(" "));
    delete own.output;
    delete own.configfs;
    assert.deepEqual(inv.values, own, args.join(" "));
  }
});

/** Every command's flags with the global ones, as the parser sees them. */
function flagTables(commands: Command[]): Record<string, OptionSpec>[] {
  return commands.flatMap((c) => [
    ...(c.run ? [{ ...GLOBAL_OPTIONS, ...c.options }] : []),
    ...flagTables(c.subcommands ?? []),
  ]);
}

/** A word of argv for OPTIONS: a flag in one of its forms, a value, or something else. */
function word(r: Rng, options: Record<string, OptionSpec>): string {
  const names = Object.keys(options);
  const shorts = names.flatMap((n) => options[n].short ?? []);
  const values = ["nqn.2014-08.org.nvmexpress:x", "10.0.0.1", "4420", "-", "", "-1", "-x", "x=y"];
  switch (r.int(10)) {
    case 0:
    case 1:
      return `--${r.pick(names)}`;
    case 2:
      return `--${r.pick(names)}=${r.pick(values)}`;
    case 3:
    case 4:
      return `-${r.pick(shorts)}`;
    case 5:
      return `-${r.pick(shorts)}${r.pick([r.pick(shorts), "x", "=1"])}`;
    case 6:
      return r.pick(["--", "--nope", "-Z", "---x", "--=x", "-", "--nope=1"]);
    default:
      return r.pick(values);
  }
}

Deno.test(`argv in the common forms parses as node's parseArgs parses it, on every command's flags (seed ${SEED}, ${ROUNDS} rounds)`, async () => {
  const tables = flagTables(await loadCommands(COMMANDS));
  assert.ok(tables.length > 30, `${tables.length} commands`);
  const r = rng(SEED);
  let taken = 0, refused = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const options = r.pick(tables);
    const args = Array.from({ length: r.int(7) }, () => word(r, options));
    const joined = negativeValuesJoined(args, options);
    const own = commonFlags(joined, options);
    let node: { values: unknown; positionals: string[] } | Error;
    try {
      const parsed = await flagsByNode(joined, options);
      node = { values: { ...parsed.values }, positionals: parsed.positionals };
    } catch (err) {
      node = err as Error;
    }
    if (node instanceof Error) refused++;
    if (own === undefined) continue;
    taken++;
    assert.ok(
      !(node instanceof Error),
      `parseArgs refused what commonFlags read: ${JSON.stringify(args)}`,
    );
    assert.equal(JSON.stringify(own), JSON.stringify(node), JSON.stringify(args));
  }
  console.log(`commonFlags read ${taken} of ${ROUNDS} argv; parseArgs refused ${refused}`);
  assert.ok(taken > ROUNDS / 4, `commonFlags read ${taken} of ${ROUNDS} argv`);
  assert.ok(refused > ROUNDS / 4, `parseArgs refused ${refused} of ${ROUNDS} argv`);
});

Deno.test("a command line as the docs write it is read without parseArgs", () => {
  const options: Record<string, OptionSpec> = {
    ...GLOBAL_OPTIONS,
    transport: { type: "string", short: "t", description: "" },
    traddr: { type: "string", short: "a", description: "" },
    "ctrl-loss-tmo": { type: "string", short: "l", description: "" },
    host: { type: "string", multiple: true, description: "" },
    "dry-run": { type: "boolean", description: "" },
  };
  const args = [
    "-t",
    "rdma",
    "--traddr=10.0.0.1",
    "-l",
    "-1",
    "--host",
    "a",
    "--host=b",
    "-o",
    "json",
    "--dry-run",
    "x",
    "--",
    "-v",
  ];
  assert.deepEqual(commonFlags(negativeValuesJoined(args, options), options), {
    values: {
      transport: "rdma",
      traddr: "10.0.0.1",
      "ctrl-loss-tmo": "-1",
      host: ["a", "b"],
      output: "json",
      "dry-run": true,
    },
    positionals: ["x", "-v"],
  });
  // Left to parseArgs: attached and grouped short flags, a dash-led value, an unknown flag, a value
  // given to a switch, a missing value.
  for (const bad of [["-tRDMA"], ["-vh"], ["-t", "-x"], ["--nope"], ["--dry-run=1"], ["-t"]]) {
    assert.equal(commonFlags(bad, options), undefined, bad.join(" "));
  }
});

Deno.test("an unknown switch is still a usage error naming it", async () => {
  await assert.rejects(parseInvocation(["cmd", "--nope"], TABLE), /Unknown option '--nope'/);
  await assert.rejects(parseInvocation(["cmd", "-x"], TABLE), /Unknown option '-x'/);
});

Deno.test("a negative number after a flag that takes a value is its value, as getopt reads nvme-cli's -l -1", () => {
  const opts = {
    "ctrl-loss-tmo": { type: "string", short: "l", description: "" },
    "dry-run": { type: "boolean", description: "" },
  } as const;
  assert.deepEqual(negativeValuesJoined(["-l", "-1", "--dry-run"], opts), [
    "--ctrl-loss-tmo=-1",
    "--dry-run",
  ]);
  assert.deepEqual(negativeValuesJoined(["--ctrl-loss-tmo", "-1"], opts), ["--ctrl-loss-tmo=-1"]);
  // Not a number, a boolean flag, or after "--": left for the parser to judge.
  assert.deepEqual(negativeValuesJoined(["-l", "-x"], opts), ["-l", "-x"]);
  assert.deepEqual(negativeValuesJoined(["--dry-run", "-1"], opts), ["--dry-run", "-1"]);
  assert.deepEqual(negativeValuesJoined(["--", "-l", "-1"], opts), ["--", "-l", "-1"]);
});

Deno.test("stringFlag reads a string flag, undefined when absent; a boolean is a caller's bug", () => {
  const values = { traddr: "10.0.0.1", verbose: true };
  assert.equal(stringFlag(values, "traddr"), "10.0.0.1");
  assert.equal(stringFlag(values, "trsvcid"), undefined);
  assert.throws(() => stringFlag(values, "verbose"), TypeError);
});

Deno.test("requiredStringFlag is a usage error with the caller's words when the flag is absent", () => {
  assert.equal(requiredStringFlag({ nqn: "nqn.x" }, "nqn", "needs -n NQN."), "nqn.x");
  assert.throws(
    () => requiredStringFlag({}, "nqn", "bench needs the subsystem: -n NQN."),
    (e) => e instanceof UsageError && e.message === "bench needs the subsystem: -n NQN.",
  );
});
