/**
 * The rooms of the code and which rooms each may import from: commands → domain rooms (target,
 * doctor, persist, initiator, metrics) → rdma/configfs/fabrics/net/nvme/host → ffi, with src/cli/ and
 * src/output/ between the commands and the rooms they serve. Every static import, `import type`,
 * `export … from` and dynamic `import("…")` of src/, ffi/ and main.ts is checked against the table.
 *
 * A room is a top-level folder of src/, "src" (the files at the top of src/: errors, errno, fd,
 * input, host_paths, version), "ffi" or "main.ts". A rule lists rooms, or single files of a room.
 */
import assert from "node:assert/strict";
import { ROOT } from "../helpers.ts";

/** The rooms below the domain rooms, each of which may import the ones listed after it. */
const LOWER = ["nvme", "rdma", "fabrics", "configfs", "net", "host", "src"];
/** The domain rooms: side by side, none imports another unless its rule says so. */
const DOMAIN = ["target", "doctor", "persist", "initiator", "metrics", "agent"];

const RULES: Record<string, readonly string[]> = {
  "main.ts": ["src/commands/mod.ts", "cli", "output", "src"],
  commands: ["cli", "output", ...DOMAIN, ...LOWER],
  output: ["cli", ...DOMAIN, ...LOWER],
  cli: [...DOMAIN, ...LOWER],
  target: LOWER,
  doctor: LOWER,
  persist: LOWER,
  metrics: [
    "target",
    "src/agent/status.ts", // the agent's state, read for its families
    ...LOWER,
  ],
  agent: [
    "initiator", // connect-all's walk, for each log it reads
    "src/persist/durable.ts", // the status file, written whole
    "src/persist/exclusions_conf.ts", // what it never connects
    ...LOWER,
  ], // the target's live tree and connected hosts, read-only
  initiator: [
    "persist", // connect --persist saves what it connected
    ...LOWER,
    // connect's reports: the JSON contract's version stamp and humanSize, pure functions of output/
    "src/output/contract.ts",
    "src/output/render.ts",
  ],
  nvme: ["rdma", "fabrics", "net", "host", "src", "ffi"],
  rdma: ["net", "host", "src", "ffi"],
  fabrics: ["net", "host", "src", "ffi"],
  configfs: ["net", "host", "src", "ffi"], // which port serves an address compares it canonically
  net: ["host", "src", "ffi"],
  host: ["src", "ffi"],
  src: ["ffi", "deno.json"],
  ffi: [],
};

/**
 * The one file of src/commands/ that imports the others: the command table. Every other command
 * module stands alone; flag sets they share live in src/cli/.
 */
const COMMAND_TABLE = "src/commands/mod.ts";

/**
 * Edges that break the rules today, each "file -> imported file". Fix one, then delete its line:
 * an edge listed here that no longer occurs fails the test too.
 */
const KNOWN: readonly string[] = [];

/** The room of a path relative to the checkout. */
function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] === "src") return parts.length > 2 ? parts[1] : "src";
  if (parts[0] === "ffi") return "ffi";
  return path;
}

/** The .ts files of the checked rooms, relative to the checkout. */
async function sourceFiles(): Promise<string[]> {
  const out = ["main.ts"];
  async function walk(dir: string): Promise<void> {
    for await (const e of Deno.readDir(`${ROOT}/${dir}`)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".ts")) out.push(path);
    }
  }
  await walk("src");
  await walk("ffi");
  return out.sort();
}

/** Comments blanked (newlines kept, for line numbers), so that an import in prose is not one. */
function withoutComments(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  return text.replace(/\/\*[\s\S]*?\*\//g, blank).replace(/^\s*\/\/.*$/gm, blank);
}

/** The clause of a static import or re-export: default, `{ … }`, `* as x`, or a mix. */
const CLAUSE = String.raw`(?:type\s+)?(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?`;
const IMPORT_PATTERNS = [
  new RegExp(String.raw`\b(?:import|export)\s+${CLAUSE}\s*from\s*["']([^"']+)["']`, "g"),
  /\bimport\s*["']([^"']+)["']/g, // import "x" (for its effects)
  /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, // import("x"), typeof import("x")
];

interface Edge {
  file: string;
  line: number;
  specifier: string;
  /** The imported file, relative to the checkout. */
  target: string;
}

/** Every relative import of FILE (packages such as npm: and node: are no room's). */
function importsOf(file: string, text: string): Edge[] {
  const code = withoutComments(text);
  const edges: Edge[] = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const m of code.matchAll(pattern)) {
      const specifier = m[1];
      if (!specifier.startsWith(".")) continue;
      const url = new URL(specifier, `file://${ROOT}/${file}`);
      const target = decodeURIComponent(url.pathname).slice(ROOT.length + 1);
      const line = code.slice(0, m.index).split("\n").length;
      edges.push({ file, line, specifier, target });
    }
  }
  return edges;
}

/** The rule an edge breaks, or undefined when it keeps them all. */
function brokenRule(e: Edge): string | undefined {
  const from = roomOf(e.file);
  const to = roomOf(e.target);
  if (from === to) {
    if (from === "commands" && e.file !== COMMAND_TABLE) {
      return "a command module imports no other (shared flags live in src/cli/)";
    }
    return undefined;
  }
  const allowed = RULES[from] ?? [];
  if (allowed.includes(to) || allowed.includes(e.target)) return undefined;
  return `${from} may import only ${allowed.length ? allowed.join(", ") : "nothing"}`;
}

Deno.test("every import of src/, ffi/ and main.ts keeps the rooms' rules", async () => {
  const broken: string[] = [];
  const seen = new Set<string>();
  for (const file of await sourceFiles()) {
    for (const e of importsOf(file, await Deno.readTextFile(`${ROOT}/${file}`))) {
      const rule = brokenRule(e);
      if (!rule) continue;
      const edge = `${e.file} -> ${e.target}`;
      seen.add(edge);
      if (!KNOWN.includes(edge)) {
        broken.push(`${e.file}:${e.line}: imports "${e.specifier}": ${rule}`);
      }
    }
  }
  const gone = KNOWN.filter((k) => !seen.has(k)).map((k) => `${k}: no longer breaks a rule`);
  assert.deepEqual([...broken, ...gone], [], "fix the import, or adjust RULES or KNOWN");
});

Deno.test("src/ uses the web platform's timers (src/timer.ts), not the global setTimeout", async () => {
  // The global setTimeout brings up Deno's Node.js layer at its first call (src/timer.ts).
  const found: string[] = [];
  for (const file of await sourceFiles()) {
    const code = withoutComments(await Deno.readTextFile(`${ROOT}/${file}`));
    if (/\b(setTimeout|setInterval)\s*\(/.test(code)) found.push(file);
  }
  assert.deepEqual(found, []);
});

Deno.test("the rules name a room for every folder of src/, and only rooms", async () => {
  const missing: string[] = [];
  for await (const e of Deno.readDir(`${ROOT}/src`)) {
    if (e.isDirectory && !(e.name in RULES)) missing.push(`src/${e.name}/ has no rule`);
  }
  const rooms = new Set(Object.keys(RULES));
  for (const [room, allowed] of Object.entries(RULES)) {
    for (const a of allowed) {
      if (!rooms.has(a) && !rooms.has(roomOf(a)) && a !== "deno.json") {
        missing.push(`${room}'s rule names '${a}', which is no room`);
      }
    }
  }
  assert.deepEqual(missing, []);
});

Deno.test("import rules: the parser finds every form of import", () => {
  const text = [
    'import { a, type B } from "../net/address.ts";',
    'import type { C } from "../rdma/cm.ts";',
    'import * as d from "../host/kfs.ts";',
    'import e, { f } from "./x.ts";',
    'export { g } from "../fabrics/nqn.ts";',
    'export * from "../errors.ts";',
    'import "../ffi/libc.ts";',
    'const h = await import("../target/up.ts");',
    "let i: typeof import('../persist/etc_paths.ts');",
    'import {\n  j,\n  k,\n} from "../doctor/run.ts";',
    '// import { no } from "../commands/list.ts";',
    '/** import("../commands/list.ts") in prose */',
    'import { parseArgs } from "node:util";',
  ].join("\n");
  const found = importsOf("src/cli/x.ts", text).map((e) => `${e.line} ${e.target}`).sort();
  assert.deepEqual(found, [
    "1 src/net/address.ts",
    "10 src/doctor/run.ts",
    "2 src/rdma/cm.ts",
    "3 src/host/kfs.ts",
    "4 src/cli/x.ts",
    "5 src/fabrics/nqn.ts",
    "6 src/errors.ts",
    "7 src/ffi/libc.ts",
    "8 src/target/up.ts",
    "9 src/persist/etc_paths.ts",
  ]);
});
