/**
 * The completion scripts against the command table they are generated from: every command,
 * subcommand and flag appears in each, and bash (which is on every host) completes with them.
 */
import assert from "node:assert/strict";
import { type Command, loadCommands } from "../../src/cli/command.ts";
import {
  bashCompletion,
  completionNodes,
  fishCompletion,
  zshCompletion,
} from "../../src/cli/completions.ts";
import { GLOBAL_OPTIONS } from "../../src/cli/global.ts";
import { COMMANDS as ENTRIES } from "../../src/commands/mod.ts";

/** The whole table, every module loaded. */
const COMMANDS = await loadCommands(ENTRIES);

/** Every [command path, flags] of the table, walked independently of the generator. */
function walk(commands: Command[], prefix: string[] = []): Array<[string[], string[]]> {
  return commands.flatMap((c) => {
    const path = [...prefix, c.name];
    const flags = Object.entries({ ...c.options, ...GLOBAL_OPTIONS }).flatMap(([n, o]) => [
      `--${n}`,
      ...(o.short ? [`-${o.short}`] : []),
    ]);
    return [[path, flags] as [string[], string[]], ...walk(c.subcommands ?? [], path)];
  });
}

const TABLE = walk(COMMANDS);

Deno.test("the table walk sees the commands of this issue", () => {
  const paths = TABLE.map(([p]) => p.join(" "));
  for (const p of ["connections remove", "enable-autoconnect", "target enable", "completions"]) {
    assert.ok(paths.includes(p), p);
  }
  assert.equal(completionNodes(COMMANDS).length, TABLE.length + 1, "one node per path + top");
});

for (
  const [shell, gen] of [["bash", bashCompletion], ["zsh", zshCompletion], [
    "fish",
    fishCompletion,
  ]] as const
) {
  Deno.test(`the ${shell} completion names every command, subcommand and flag of the table`, () => {
    const script = gen(COMMANDS);
    for (const [path, flags] of TABLE) {
      const name = path.join(" ");
      if (shell === "fish") {
        assert.ok(script.includes(`-a '${path.at(-1)}'`), `${shell}: command ${name}`);
        assert.ok(script.includes(`"nvmeof ${name}"`), `${shell}: path ${name}`);
      } else {
        assert.ok(script.includes(`" ${name}"`), `${shell}: path ${name}`);
      }
      for (const f of flags) {
        const found = shell === "fish"
          ? script.includes(f.startsWith("--") ? `-l ${f.slice(2)}` : `-s ${f.slice(1)}`)
          : new RegExp(`['( ]${f.replace(/[-]/g, "\\-")}[ ':]`).test(script);
        assert.ok(found, `${shell}: ${name} ${f}`);
      }
    }
  });
}

async function bashComplete(words: string[]): Promise<string[]> {
  const script = bashCompletion(COMMANDS) + `
COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")})
COMP_CWORD=${words.length - 1}
_nvmeof
printf '%s\\n' "\${COMPREPLY[@]}"
`;
  const out = await new Deno.Command("bash", { args: ["-c", script], stdout: "piped" }).output();
  assert.equal(out.code, 0);
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean);
}

Deno.test("bash completes commands, subcommands, flags and -o values from the table", async () => {
  assert.deepEqual(await bashComplete(["nvmeof", "con"]), [
    "connect",
    "connect-all",
    "connections",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "target", "e"]), ["enable"]);
  assert.deepEqual(await bashComplete(["nvmeof", "connections", "re"]), ["remove"]);
  assert.deepEqual(await bashComplete(["nvmeof", "connect", "-a", "10.0.0.2", "--per"]), [
    "--persist",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "-o", "j"]), ["json"]);
  assert.deepEqual(await bashComplete(["nvmeof", "connect", "--traddr", ""]), []);
  const files = await bashComplete(["nvmeof", "target", "enable", "-f", "/etc/host"]);
  assert.ok(files.includes("/etc/hostname") || files.includes("/etc/hosts"), files.join(" "));
});

Deno.test("the generated scripts are valid bash, and zsh/fish when those shells exist", async () => {
  const check = async (shell: string, script: string) => {
    let out;
    try {
      out = await new Deno.Command(shell, { args: ["-n", "-c", script], stderr: "piped" }).output();
    } catch (err) {
      if (err instanceof Deno.errors.NotFound && shell !== "bash") return `${shell} not installed`;
      throw err;
    }
    assert.equal(out.code, 0, `${shell}: ${new TextDecoder().decode(out.stderr)}`);
    return "ok";
  };
  assert.equal(await check("bash", bashCompletion(COMMANDS)), "ok");
  const zsh = await check("zsh", zshCompletion(COMMANDS));
  const fish = await check("fish", fishCompletion(COMMANDS));
  if (zsh !== "ok" || fish !== "ok") console.log(`syntax not checked: ${zsh}; ${fish}`);
  if (fish === "ok") {
    const out = await new Deno.Command("fish", {
      args: ["-c", `${fishCompletion(COMMANDS)}\ncomplete -C 'nvmeof target e'`],
      stdout: "piped",
    }).output();
    assert.equal(
      new TextDecoder().decode(out.stdout),
      "enable\tInstall the systemd unit that brings the target up at every boot\n",
    );
  }
});
