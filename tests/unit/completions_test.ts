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
import { tempDir } from "../helpers.ts";

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

async function bashComplete(words: string[], env: Record<string, string> = {}): Promise<string[]> {
  const script = bashCompletion(COMMANDS) + `
COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")})
COMP_CWORD=${words.length - 1}
_nvmeof
printf '%s\\n' "\${COMPREPLY[@]}"
`;
  const out = await new Deno.Command("bash", { args: ["-c", script], stdout: "piped", env })
    .output();
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

Deno.test("bash offers each flag's values: transports, modes, roles, and every -o format of the command", async () => {
  assert.deepEqual(await bashComplete(["nvmeof", "connect", "-t", ""]), ["rdma", "tcp"]);
  assert.deepEqual(await bashComplete(["nvmeof", "discover", "--transport", "t"]), ["tcp"]);
  assert.deepEqual(await bashComplete(["nvmeof", "target", "up", "--trtype", ""]), [
    "rdma",
    "tcp",
    "loop",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "disconnect-all", "-t", "l"]), ["loop"]);
  assert.deepEqual(await bashComplete(["nvmeof", "bench", "--rw", "rand"]), [
    "randread",
    "randwrite",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "doctor", "--role", ""]), [
    "initiator",
    "target",
    "both",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "target", "show", "-o", ""]), [
    "text",
    "json",
    "yaml",
    "nvmetcli",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "list", "-o", ""]), ["text", "json"]);
  assert.deepEqual(await bashComplete(["nvmeof", "target", "ana", "--state", "in"]), [
    "inaccessible",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "target", "ana", "-S", "non"]), [
    "non-optimized",
  ]);
});

Deno.test("bash completes help with command names, completions with shells", async () => {
  const top = COMMANDS.map((c) => c.name);
  assert.deepEqual(await bashComplete(["nvmeof", "help", ""]), top);
  assert.deepEqual(await bashComplete(["nvmeof", "help", "li"]), ["list", "list-subsys"]);
  assert.deepEqual(await bashComplete(["nvmeof", "help", "target", "s"]), ["show", "schema"]);
  assert.deepEqual(await bashComplete(["nvmeof", "completions", "z"]), ["zsh"]);
  assert.deepEqual((await bashComplete(["nvmeof", "completions", ""])).slice(0, 3), [
    "bash",
    "zsh",
    "fish",
  ]);
});

Deno.test("bash completes --file=VALUE as --file VALUE, split at '=' or not", async () => {
  // With '=' in COMP_WORDBREAKS (bash's default) the line 'target up --file=/etc/host' is these words.
  const split = await bashComplete(["nvmeof", "target", "up", "--file", "=", "/etc/host"]);
  assert.ok(split.includes("/etc/hosts") || split.includes("/etc/hostname"), split.join(" "));
  assert.ok(split.every((f) => f.startsWith("/etc/host")), split.join(" "));
  const atEq = await bashComplete(["nvmeof", "target", "up", "--file", "="]);
  assert.ok(atEq.length > 0, "right after '=' the files of the current directory");
  const whole = await bashComplete(["nvmeof", "target", "up", "--file=/etc/host"]);
  assert.ok(
    whole.length > 0 && whole.every((f) => f.startsWith("--file=/etc/host")),
    whole.join(" "),
  );
  assert.deepEqual(await bashComplete(["nvmeof", "connect", "--transport=r"]), [
    "--transport=rdma",
  ]);
});

Deno.test("bash completes disconnect -d with the controllers of /sys/class/nvme", async () => {
  await using dir = await tempDir();
  for (const c of ["nvme0", "nvme1", "nvme10"]) {
    await Deno.mkdir(`${dir.path}/class/nvme/${c}`, { recursive: true });
  }
  const env = { NVMEOF_SYSFS: dir.path };
  assert.deepEqual(await bashComplete(["nvmeof", "disconnect", "-d", ""], env), [
    "nvme0",
    "nvme1",
    "nvme10",
  ]);
  assert.deepEqual(await bashComplete(["nvmeof", "disconnect", "--device", "nvme1"], env), [
    "nvme1",
    "nvme10",
  ]);
  // Another command's value flag is not a controller.
  assert.deepEqual(await bashComplete(["nvmeof", "disconnect", "-n", ""], env), []);
  const none = { NVMEOF_SYSFS: `${dir.path}/absent` };
  assert.deepEqual(await bashComplete(["nvmeof", "disconnect", "-d", ""], none), []);
});

const hasFish = await new Deno.Command("fish", { args: ["-c", "true"] }).output().then(
  (o) => o.success,
  () => false,
);

// fish is one of the lab's packages: in CI (CI=true) this runs, and a missing fish fails it.
Deno.test({
  name: "fish completes flag values, help, completions, --flag=value and controllers",
  ignore: !hasFish && Deno.env.get("CI") !== "true",
  async fn() {
    await using dir = await tempDir();
    for (const c of ["nvme0", "nvme7"]) {
      await Deno.mkdir(`${dir.path}/class/nvme/${c}`, { recursive: true });
    }
    const fish = async (line: string) => {
      const out = await new Deno.Command("fish", {
        args: ["-c", `${fishCompletion(COMMANDS)}\ncomplete -C '${line}'`],
        env: { NVMEOF_SYSFS: dir.path },
        stdout: "piped",
      }).output();
      return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean)
        .map((l) => l.split("\t")[0]);
    };
    assert.deepEqual(await fish("nvmeof connect -t "), ["rdma", "tcp"]);
    assert.deepEqual(await fish("nvmeof target show -o "), ["json", "nvmetcli", "text", "yaml"]);
    assert.deepEqual(await fish("nvmeof help li"), ["list", "list-subsys"]);
    assert.deepEqual(await fish("nvmeof completions "), ["bash", "fish", "zsh"]);
    assert.deepEqual(await fish("nvmeof disconnect -d "), ["nvme0", "nvme7"]);
    assert.deepEqual(await fish("nvmeof bench --rw=rand"), ["--rw=randread", "--rw=randwrite"]);
  },
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
