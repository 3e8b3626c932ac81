/**
 * The spec's plain YAML reader (src/target/spec_yaml.ts) against the YAML library: whatever it
 * reads, it reads as the library does (text fields included), and it reads what specs are written
 * in (`target show`'s output, the docs' examples, a big generated spec) rather than leaving them
 * to the library.
 *
 * The library's reading of a text is parseSpecText's of the same text after a comment line that
 * holds a character the plain reader leaves out (not ASCII), which the library reads as it reads
 * the text alone (checked here too).
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { parseSpecText } from "../../src/target/spec.ts";
import { SPEC_TEXT as KEYS } from "../../src/target/schema.ts";
import { OUTSIDE, readPlainYaml, writePlainYaml } from "../../src/target/spec_yaml.ts";
import { type Rng, rng, ROOT } from "../helpers.ts";

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? 20261204);
const ROUNDS = Number(Deno.env.get("FUZZ_ROUNDS") ?? 1000);

/** In a comment, it changes nothing for the library; the plain reader leaves out any text with it. */
const LEAVES_OUT = "\u00e9";

/** The library's reading: a value, or "error". */
async function library(text: string): Promise<unknown> {
  try {
    return await parseSpecText(`# ${LEAVES_OUT}\n${text}`, "'t.yaml'");
  } catch {
    return "error";
  }
}

/** The plain reader's value, which must be the library's; false when it leaves TEXT out. */
async function agrees(text: string): Promise<boolean> {
  const plain = readPlainYaml(text, KEYS);
  if (plain === OUTSIDE) return false;
  assert.deepEqual(plain, await library(text), `the readers differ on:\n${text}`);
  return true;
}

/** Values that YAML types, quotes or cuts in ways that matter. */
const TRICKY = [
  "",
  " ",
  "0123",
  "1.10",
  "2.0",
  "1e3",
  ".5",
  ".inf",
  "-.Inf",
  ".nan",
  "0x1F",
  "0o17",
  "+12",
  "-0",
  "1_000",
  "true",
  "False",
  "TRUE",
  "yes",
  "on",
  "null",
  "Null",
  "~",
  "10.77.0.1",
  "fe80::1",
  "4420",
  "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000c1",
  "nqn.2026-10.pk.nextgen:scale-0001",
  "/dev/nullb0",
  "a: b",
  "a:b",
  "a :b",
  "a:",
  "a #b",
  "a#b",
  "#x",
  "-x",
  "- x",
  "-",
  "x,y",
  "[x]",
  "{x}",
  "x]",
  "'q'",
  '"q"',
  "it's",
  'say "hi"',
  "x\\y",
  "&a",
  "*a",
  "!x",
  "|",
  ">",
  "%x",
  "@x",
  "`x",
  "?",
  "? x",
  " lead",
  "trail ",
  "tab\there",
  "ünï",
  "nbsp\u00a0",
  "---",
  "...",
  "<<",
  "__proto__",
  "constructor",
];

/** What specs hold most: NQNs, addresses, devices, words. */
const ORDINARY = [
  "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000c1",
  "nqn.2026-10.pk.nextgen:scale-0001",
  "10.77.0.1",
  "fe80::1",
  "/dev/nullb0",
  "/dev/disk/by-id/nvme-eui.0025388b91b1a1b2",
  "rdma",
  "optimized",
  "hmac(sha256)",
  "nvmeof lab disk",
];

function scalarValue(r: Rng): unknown {
  switch (r.int(12)) {
    case 0:
      return r.int(5000) - 100;
    case 1:
      return r.int(2) === 0;
    case 2:
      return null;
    case 3:
    case 4:
      return r.pick(TRICKY);
    default:
      return r.pick(ORDINARY);
  }
}

function list(r: Rng, n: number): unknown[] {
  return Array.from({ length: r.int(n) }, () => scalarValue(r));
}

/** A spec-shaped object with odd values, now and then an odd key or shape. */
function specLike(r: Rng): unknown {
  const sub = () => ({
    nqn: scalarValue(r),
    allow_any_host: r.int(3) ? false : scalarValue(r),
    ...(r.int(2) ? { serial: scalarValue(r), model: scalarValue(r) } : {}),
    ...(r.int(3) ? {} : { version: scalarValue(r), ieee_oui: scalarValue(r) }),
    hosts: list(r, 4),
    namespaces: Array.from({ length: r.int(3) }, (_, i) => ({
      nsid: r.int(4) ? i + 1 : scalarValue(r),
      device: scalarValue(r),
      ...(r.int(3) ? {} : { nguid: scalarValue(r), enable: scalarValue(r) }),
    })),
  });
  const port = () => ({
    id: r.int(4) ? 1 + r.int(9) : scalarValue(r),
    trtype: r.pick(["rdma", "tcp", scalarValue(r)]),
    traddr: scalarValue(r),
    trsvcid: r.int(2) ? 4420 : scalarValue(r),
    subsystems: list(r, 4),
  });
  const doc: Record<string, unknown> = {
    hosts: Array.from(
      { length: r.int(3) },
      () => r.int(2) ? scalarValue(r) : { nqn: scalarValue(r), dhchap_hash: scalarValue(r) },
    ),
    subsystems: Array.from({ length: r.int(3) }, sub),
    ports: Array.from({ length: r.int(3) }, port),
  };
  if (!r.int(6)) doc[String(r.pick(TRICKY))] = r.int(2) ? list(r, 3) : scalarValue(r);
  if (!r.int(8)) doc.subsystems = [[scalarValue(r)], [], {}];
  return doc;
}

/** The object as YAML, in one of the ways a person or a tool writes it. */
function written(r: Rng, doc: unknown): string {
  const types = ["PLAIN", "PLAIN", "PLAIN", "QUOTE_DOUBLE", "QUOTE_SINGLE"] as const;
  return stringify(doc, {
    lineWidth: r.int(4) ? 0 : 30,
    indent: r.pick([2, 2, 4, 3]),
    indentSeq: r.int(2) === 0,
    defaultStringType: r.pick(types),
    defaultKeyType: r.int(3) ? null : r.pick(types),
    flowCollectionPadding: r.int(2) === 0,
    collectionStyle: r.pick(["any", "any", "block", "flow"] as const),
  });
}

/** TEXT with a few lines changed: indented, commented, cut, doubled, a character replaced. */
function mutated(r: Rng, text: string): string {
  const lines = text.split("\n");
  for (let n = 1 + r.int(3); n > 0; n--) {
    const i = r.int(lines.length);
    const l = lines[i] ?? "";
    switch (r.int(8)) {
      case 0:
        lines[i] = " " + l;
        break;
      case 1:
        lines[i] = l.replace(/^ /, "");
        break;
      case 2:
        lines[i] = l + r.pick([" # note", "#x", " ", ":", ": x", " - y", "'"]);
        break;
      case 3:
        lines.splice(i, 0, r.pick(["# comment", "", "  # indented comment", "-", "- z", "x"]));
        break;
      case 4:
        lines.splice(i, 1);
        break;
      case 5:
        lines.splice(i, 0, l);
        break;
      case 6: {
        const at = r.int(l.length + 1);
        lines[i] = l.slice(0, at) + r.pick([..."-:#'\"[]{},&*!|> \\"]) + l.slice(at + 1);
        break;
      }
      default:
        lines[i] = l.replace(/^( *)- /, "$1-   ");
    }
  }
  return lines.join("\n");
}

Deno.test(`the plain reader reads what it reads as the YAML library does (seed ${SEED}, ${ROUNDS} rounds)`, async () => {
  const r = rng(SEED);
  let taken = 0, mutatedTaken = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const text = written(r, specLike(r));
    if (await agrees(text)) taken++;
    if (await agrees(mutated(r, text))) mutatedTaken++;
  }
  // Both kinds are read by the plain reader often enough for the comparison to mean something.
  console.log(`written: ${taken} read by the plain reader, mutated: ${mutatedTaken}`);
  assert.ok(taken > ROUNDS / 4, `the plain reader took ${taken} of ${ROUNDS} written specs`);
  assert.ok(mutatedTaken > ROUNDS / 20, `it took ${mutatedTaken} of ${ROUNDS} mutated ones`);
});

Deno.test("the library reads a text after a comment line as it reads the text alone", async () => {
  const r = rng(SEED + 1);
  for (let i = 0; i < 100; i++) {
    const text = mutated(r, written(r, specLike(r)));
    if (readPlainYaml(text, KEYS) !== OUTSIDE) continue;
    let alone: unknown;
    try {
      alone = await parseSpecText(text, "'t.yaml'");
    } catch {
      alone = "error";
    }
    assert.deepEqual(await library(text), alone, text);
  }
});

Deno.test("the plain reader takes target show's output and the spec examples of the docs; the plain writer writes it", async () => {
  const r = rng(SEED + 2);
  // target show writes stringify(spec, { lineWidth: 0 }).
  const show = (doc: unknown) => stringify(doc, { lineWidth: 0 });
  const nqn = (i: number) => `nqn.2026-12.io.nvmeof:sub-${i}`;
  const host = (i: number) => `nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-${i}`;
  for (let i = 0; i < 50; i++) {
    const doc = {
      hosts: [{
        nqn: host(i),
        dhchap_key_file: "/etc/nvmeof/keys/h.key",
        dhchap_hash: "hmac(sha256)",
      }],
      subsystems: [{
        nqn: nqn(i),
        allow_any_host: false,
        serial: r.pick(["0123", "a1b2c3", "1.10", "12345"]),
        model: "nvmeof lab",
        hosts: [host(i), host(i + 1)],
        namespaces: [{
          nsid: 1,
          device: `/dev/nullb${i}`,
          uuid: crypto.randomUUID(),
          ana_grpid: 1,
        }],
      }],
      ports: [{
        id: 1 + r.int(10),
        trtype: r.pick(["rdma", "tcp"]),
        adrfam: r.pick(["ipv4", "ipv6"]),
        traddr: r.pick(["10.77.0.1", "fe80::1", "0.0.0.0"]),
        trsvcid: r.pick(["4420", "8009"]),
        subsystems: [nqn(i)],
        ana_groups: [{ id: 2, state: "optimized" }],
      }],
    };
    assert.ok(await agrees(show(doc)), show(doc));
    assert.equal(writePlainYaml(doc), show(doc));
  }
  // Every YAML example in the README and docs/ that is a spec (a mapping with subsystems or ports).
  let examples = 0;
  const files = [
    "README.md",
    ...[...Deno.readDirSync(`${ROOT}/docs`)].map((e) => `docs/${e.name}`),
  ];
  for (const f of files.filter((f) => f.endsWith(".md"))) {
    const md = Deno.readTextFileSync(`${ROOT}/${f}`);
    for (const m of md.matchAll(/```yaml\n([\s\S]*?)```/g)) {
      const value = await library(m[1]);
      if (value === null || typeof value !== "object" || !("subsystems" in value)) continue;
      assert.ok(await agrees(m[1]), `${f}: the plain reader leaves this example out:\n${m[1]}`);
      examples++;
    }
  }
  // And the example of 'target up --help'.
  const help = Deno.readTextFileSync(`${ROOT}/src/commands/target_up.ts`);
  const example = /Spec example:\n([\s\S]*?)`,/.exec(help)?.[1];
  assert.ok(example, "no spec example in target up's help");
  assert.ok(await agrees(example.replace(/^ {2}/gm, "") + "\n"), example);
  assert.ok(examples >= 1, "no spec example found in the docs");
});

Deno.test("the plain reader takes a spec of 64 subsystems, 512 hosts and 256 namespaces", async () => {
  const lines = ["subsystems:"];
  for (let s = 1; s <= 64; s++) {
    lines.push(
      `  - nqn: nqn.2026-10.pk.nextgen:scale-${s}`,
      "    allow_any_host: false",
      "    hosts:",
    );
    for (let h = 1; h <= 8; h++) lines.push(`      - nqn.2026-10.pk.nextgen:compute-${s * 8 + h}`);
    lines.push("    namespaces:");
    for (let n = 1; n <= 4; n++) lines.push(`      - {nsid: ${n}, device: /dev/nullb${s * 4 + n}}`);
  }
  lines.push(
    "ports:",
    "  - id: 1",
    "    trtype: rdma",
    "    traddr: 10.77.0.1",
    "    trsvcid: 4420",
  );
  lines.push(
    "    subsystems:",
    ...Array.from({ length: 64 }, (_, s) => `      - nqn.x:scale-${s}`),
  );
  assert.ok(await agrees(lines.join("\n") + "\n"));
});

Deno.test("the plain reader reads a value with a comment after it, as the library does", async () => {
  const text = [
    "hosts:",
    "  - nqn: nqn.x:h1 # rack 3",
    "subsystems:",
    "  - nqn: nqn.x:s1  #  two spaces before",
    "    hosts: [nqn.x:h1] # flow, then a comment",
    "    model: a b # a space inside the value",
    "    namespaces:",
    "      - {nsid: 1, device: /dev/nullb0}   # after a flow mapping",
    "      - nsid: 2 #",
    "        device: /dev/nullb#1 # '#' inside the value",
  ].join("\n") + "\n";
  assert.notEqual(readPlainYaml(text, KEYS), OUTSIDE);
  assert.ok(await agrees(text));
  // A comment inside a one-line flow runs to the line's end and leaves it open: the library's error.
  assert.equal(readPlainYaml("hosts: [a # b]\n", KEYS), OUTSIDE);
});

Deno.test("the plain reader leaves to the library what it does not read, errors included", async () => {
  for (
    const text of [
      "ports: []\nports: []\n", // a duplicate key: the library's error
      "a: &x [1]\nb: *x\n", // anchors and aliases
      "model: |\n  two\n  lines\n", // a block scalar
      "model: one\n  more\n", // a plain scalar over two lines
      'model: "a\\tb"\n', // an escape
      "hosts:\n\t- x\n", // a tab
      "---\nhosts: []\n", // a document marker
      "hosts: [x,\n  y]\n", // a flow sequence over two lines
      "subsystems:\n  - nqn: a\n   bad: 1\n", // an indent between two levels
      "id: 1.5\n", // a float
      "? complex\n: key\n",
      "",
    ]
  ) {
    assert.equal(readPlainYaml(text, KEYS), OUTSIDE, text);
  }
  // Through parseSpecText, an error still carries its line and column.
  await assert.rejects(
    () => parseSpecText("subsystems:\n  - nqn: a\n   bad: 1\n", "'t.yaml'"),
    /line \d+, column \d+/,
  );
});

Deno.test(`the plain writer writes what it writes as the YAML library does, byte for byte (seed ${SEED})`, () => {
  const r = rng(SEED + 3);
  let taken = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const doc = specLike(r);
    const text = writePlainYaml(doc);
    if (text === OUTSIDE) continue;
    assert.equal(text, stringify(doc, { lineWidth: 0 }), JSON.stringify(doc));
    taken++;
  }
  console.log(`the plain writer took ${taken} of ${ROUNDS}`);
  assert.ok(taken > ROUNDS / 4, `the plain writer took ${taken} of ${ROUNDS} specs`);
});
