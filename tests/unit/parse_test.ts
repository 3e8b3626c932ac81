/**
 * The flag parser: argv made only of switches (`--help`, `-h`, `--verbose`), which start-up reads
 * without loading node's parseArgs, gives what parseArgs gives.
 */
import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import type { CommandEntry, OptionSpec } from "../../src/cli/command.ts";
import { GLOBAL_OPTIONS } from "../../src/cli/global.ts";
import {
  negativeValuesJoined,
  parseInvocation,
  requiredStringFlag,
  stringFlag,
} from "../../src/cli/parse.ts";
import { UsageError } from "../../src/errors.ts";

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
function byNode(args: string[]): Record<string, unknown> {
  const options = { ...GLOBAL_OPTIONS, ...OPTIONS };
  const { values } = parseArgs({
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
  return { ...values };
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
    const node = byNode(args);
    const { help, verbose, ...own } = node;
    assert.equal(inv.help, help === true, args.join(" "));
    assert.equal(inv.global.verbose, verbose === true, args.join(" "));
    delete own.output;
    delete own.configfs;
    assert.deepEqual(inv.values, own, args.join(" "));
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
