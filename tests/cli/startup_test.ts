/**
 * Start-up loads only what a command needs: `--version` and `--help` load no command module (nor
 * npm packages or FFI), and a command's help loads that command's module only. Checked on the
 * module graph and on the table's loaders, never on timings.
 */
import assert from "node:assert/strict";
import { ROOT } from "../helpers.ts";

interface InfoModule {
  specifier: string;
  dependencies?: Array<{ code?: { specifier: string }; isDynamic?: boolean }>;
}

/** main.ts's module graph, as `deno info` reads it (dynamic imports included). */
async function moduleGraph(): Promise<{ roots: string[]; byName: Map<string, InfoModule> }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "main.ts"],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
  };
  return { roots: info.roots, byName: new Map(info.modules.map((m) => [m.specifier, m])) };
}

const rootUrl = new URL(`file://${ROOT}/`).href;
const short = (s: string) => s.startsWith(rootUrl) ? s.slice(rootUrl.length) : s;

/**
 * What loading ROOTS loads before anything runs, and the dynamic imports among those; with
 * FOLLOW_DYNAMIC, also what those imports load when they run (everything ROOTS can ever load).
 */
function staticClosure(
  byName: Map<string, InfoModule>,
  roots: string[],
  followDynamic = false,
): { modules: string[]; dynamic: Array<[string, string]> } {
  const seen = new Set<string>();
  const dynamic: Array<[string, string]> = [];
  const todo = [...roots];
  while (todo.length) {
    const s = todo.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    for (const d of byName.get(s)?.dependencies ?? []) {
      // Type-only imports have no `code`: they are erased.
      if (d.code && d.isDynamic) dynamic.push([short(s), short(d.code.specifier)]);
      if (d.code && (followDynamic || !d.isDynamic)) todo.push(d.code.specifier);
    }
  }
  return { modules: [...seen].map(short).sort(), dynamic };
}

/** main.ts's module graph: what it loads before it runs, and the dynamic imports among those. */
async function startupGraph(): Promise<{ modules: string[]; dynamic: Array<[string, string]> }> {
  const { roots, byName } = await moduleGraph();
  return staticClosure(byName, roots);
}

Deno.test("main.ts imports no command module, npm package or FFI table statically", async () => {
  const { modules } = await startupGraph();
  assert.ok(modules.includes("src/commands/mod.ts"), modules.join(" "));
  const heavy = modules.filter((m) =>
    (m.startsWith("src/commands/") && m !== "src/commands/mod.ts") ||
    m.startsWith("npm:") || m.startsWith("ffi/") || m.startsWith("src/rdma/") ||
    m.startsWith("src/target/")
  );
  assert.deepEqual(heavy, [], `loaded before any command runs: ${heavy.join(" ")}`);
});

Deno.test("only the command table's loaders import command modules at start-up", async () => {
  const { dynamic } = await startupGraph();
  const stray = dynamic.filter(([from, to]) =>
    to.startsWith("src/commands/") && from !== "src/commands/mod.ts"
  );
  assert.deepEqual(stray, []);
  assert.ok(dynamic.some(([from, to]) => from === "src/commands/mod.ts" && to.endsWith("list.ts")));
});

/** Runs main() with ARGS and returns the command paths whose modules the table loaded. */
async function loadedFor(args: string[]): Promise<{ code: number; loaded: string[] }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--cached-only",
      "--allow-all",
      `${ROOT}/tests/cli/load_spy.ts`,
      ...args,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stderr).trimEnd().split("\n");
  return { code: out.code, loaded: JSON.parse(lines.at(-1)!) };
}

Deno.test("--version and --help load no command module", async () => {
  const cases: Array<[string[], number]> = [
    [["--version"], 0],
    [["--help"], 0],
    [["-o", "json", "--version"], 0],
    [[], 2], // no command: the listing on stderr, a usage error
  ];
  for (const [args, code] of cases) {
    const r = await loadedFor(args);
    assert.equal(r.code, code, args.join(" "));
    assert.deepEqual(r.loaded, [], args.join(" "));
  }
});

Deno.test("a command's --help, or a run, loads that command's module only", async () => {
  assert.deepEqual((await loadedFor(["list", "--help"])).loaded, ["list"]);
  assert.deepEqual((await loadedFor(["target", "up", "--help"])).loaded, ["target up"]);
  assert.deepEqual((await loadedFor(["target", "--help"])).loaded, ["target"]);
  assert.deepEqual((await loadedFor(["help", "rdma", "ping"])).loaded, ["help", "rdma ping"]);
  assert.deepEqual((await loadedFor(["version"])).loaded, ["version"]);
});

/**
 * Besides main.ts's own modules, what a command's --help may load: the command's module, the
 * shared flag sets of src/cli/, and these definitions that flags and help text show, none of which
 * loads domain code.
 */
const HELP_MAY_LOAD = new Set([
  "src/fabrics/connect_table.ts", // the connect-option table: every fabrics flag derives from it
  "src/fabrics/connect_options.ts", // the transports and the default port and ctrl_loss_tmo
  "src/fabrics/nqn.ts", // the discovery NQN (probe's default)
  "src/host_paths.ts", // the host's roots: the default spec file is in NVMEOF_ETC
  "src/target/spec_file.ts", // the default spec file (-f)
  "src/nvme/bench_options.ts", // bench's --rw modes and --poll-ms default
  "src/persist/units.ts", // the boot units' names and --retry-for default
  "src/configfs/nvmet.ts", // the ANA states and port transports (target ana, target up)
  "src/metrics/defaults.ts", // the exporter's default address, port and intervals
  "src/version.ts", // the version (version, help), read from deno.json
  "deno.json",
  "src/output/render.ts", // the JSON renderer, a pure function (target schema prints with it)
]);

Deno.test("each command's --help loads no domain code: its module, src/cli/ and tables only", async () => {
  const { roots, byName } = await moduleGraph();
  const main = new Set(staticClosure(byName, roots).modules);
  const table = [...byName.values()].find((m) => short(m.specifier) === "src/commands/mod.ts")!;
  const commandModules = (table.dependencies ?? []).filter((d) => d.code && d.isDynamic)
    .map((d) => d.code!.specifier);
  assert.ok(commandModules.length >= 25, `${commandModules.length} command modules`);
  const heavy: string[] = [];
  for (const m of commandModules) {
    const loads = staticClosure(byName, [m]).modules.filter((x) =>
      !main.has(x) && x !== short(m) && !x.startsWith("src/cli/") && !HELP_MAY_LOAD.has(x)
    );
    if (loads.length) heavy.push(`${short(m)}: ${loads.join(" ")}`);
  }
  assert.deepEqual(heavy, [], `loaded for --help:\n${heavy.join("\n")}`);
});

Deno.test("every command's --help loads that command's module only", async () => {
  const { COMMANDS } = await import("../../src/commands/mod.ts");
  const paths = COMMANDS.flatMap((c) => [
    [c.name],
    ...(c.subcommands ?? []).map((s) => [c.name, s.name]),
  ]);
  const wrong: string[] = [];
  await Promise.all(paths.map(async (path) => {
    const r = await loadedFor([...path, "--help"]);
    if (r.code !== 0 || r.loaded.join() !== path.join(" ")) {
      wrong.push(`${path.join(" ")} --help: exit ${r.code}, loaded ${JSON.stringify(r.loaded)}`);
    }
  }));
  assert.deepEqual(wrong, []);
});

Deno.test("flags in the common forms are read without node's parseArgs; other forms load it", async () => {
  // node:util brings up Deno's Node.js layer: 0.12 s of every command's start-up in the lab guest
  // (docs/benchmarks.md, "node:util at start-up"). Here it is mapped to a module that throws.
  const dir = await Deno.makeTempDir();
  try {
    const { imports } = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`));
    await Deno.writeTextFile(`${dir}/node_util.ts`, 'throw new Error("node:util was loaded");\n');
    await Deno.writeTextFile(
      `${dir}/map.json`,
      JSON.stringify({ imports: { ...imports, "node:util": `file://${dir}/node_util.ts` } }),
    );
    const run = async (args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "--cached-only", "--allow-all", `--import-map=${dir}/map.json`]
          .concat(`${ROOT}/main.ts`, args),
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).output();
      return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
    };
    for (
      const args of [
        ["connect", "-t", "rdma", "--traddr=10.0.0.1", "-l", "-1", "-o", "json", "--help"],
        ["target", "up", "-f", "spec.yaml", "--dry-run", "-v", "--help"],
        ["list", "--output-format", "json", "-v", "--help"],
      ]
    ) {
      const r = await run(args);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }
    for (const args of [["connect", "-trdma", "--help"], ["list", "--nope"]]) {
      const r = await run(args);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.match(r.stderr, /node:util was loaded/, args.join(" "));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("node:timers is loaded by the commands whose loops spin, and no other", async () => {
  // 80 ms of start-up in the lab guest (docs/benchmarks.md, "node:util at start-up").
  const { byName } = await moduleGraph();
  const reaches = (root: string, target: string) =>
    staticClosure(byName, [root], true).modules.includes(target);
  const commands = [...byName.keys()].filter((s) =>
    short(s).startsWith("src/commands/") && short(s) !== "src/commands/mod.ts"
  );
  assert.ok(commands.length >= 25, `${commands.length} command modules`);
  const timers = commands.filter((c) => reaches(c, "node:timers")).map(short).sort();
  assert.deepEqual(timers, [
    "src/commands/bench.ts",
    "src/commands/rdma_bw.ts",
    "src/commands/rdma_ping.ts",
  ]);
});

Deno.test("the target's domain code loads no Node module or npm package before it needs one", async () => {
  // In the lab guest, the first Node module costs 0.3 s of start-up and node:crypto 0.4 s more
  // (docs/benchmarks.md, "Start-up of the target commands"); the YAML library is loaded only for
  // what the plain reader leaves to it, and nvmetcli's converter only for its format.
  const { byName } = await moduleGraph();
  const target = [...byName.keys()].filter((s) => short(s).startsWith("src/target/"));
  assert.ok(target.length >= 30, `${target.length} modules under src/target/`);
  const loads = target.flatMap((m) =>
    staticClosure(byName, [m]).modules.filter((x) => x.startsWith("node:") || x.startsWith("npm:"))
      .map((x) => `${short(m)}: ${x}`)
  );
  assert.deepEqual(loads, []);
});

Deno.test("target show loads no planner; target up loads the connection check only to remove", async () => {
  const { byName } = await moduleGraph();
  const closure = (m: string) => staticClosure(byName, [`${rootUrl}${m}`]).modules;
  const show = closure("src/target/env.ts");
  const notForShow = show.filter((m) =>
    /^src\/target\/(plan|apply|connected|peers|spec)\.ts$/.test(m) || m.startsWith("src/net/") ||
    m.startsWith("src/rdma/")
  );
  assert.deepEqual(notForShow, [], "what readTarget loads");
  // Each module costs 6-10 ms of start-up in the lab guest (docs/benchmarks.md): an up that only
  // creates or changes loads neither the check of who is connected to what goes, nor its readers,
  // nor the one-line form's module when given a file.
  const up = closure("src/target/up.ts");
  assert.ok(up.includes("src/target/plan.ts") && up.includes("src/target/apply.ts"));
  const later = up.filter((m) =>
    m === "src/target/connected.ts" || m === "src/configfs/port_match.ts" ||
    m === "src/target/one_line.ts" || m === "src/target/peers.ts" ||
    m === "src/rdma/restrack.ts" || m === "src/net/proc_tcp.ts" || m === "src/net/netlink.ts"
  );
  assert.deepEqual(later, [], "loaded by every target up");
});
