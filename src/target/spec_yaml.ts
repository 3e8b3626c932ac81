/**
 * The spec's YAML read and written without the YAML library, when it keeps to what specs are
 * written in: block mappings and sequences, one-line scalars (plain, single- or double-quoted
 * without escapes), one-line flow mappings and sequences of such scalars, and comments.
 *
 * Reading: anything else (anchors, aliases, tags, block scalars, multi-line scalars, escapes,
 * document markers, directives, tabs, duplicate keys, keys other than plain words, numbers other
 * than decimal integers) and any error returns OUTSIDE: the caller then reads the text with the
 * YAML library, whose messages carry line and column. Within the subset the result is what the
 * library gives with the core schema (YAML 1.2), text fields kept as written as `parseSpecText`
 * keeps them. Writing: the library's text byte for byte, or OUTSIDE for what the writer cannot be
 * sure of. tests/unit/target_spec_yaml_test.ts compares both with the library on generated specs.
 *
 * Why: under the lab's emulation, loading the library and its first parse of a spec of 64
 * subsystems took 2.8 s of a `target up` (docs/benchmarks.md); this reads it in milliseconds.
 */

/** The text is outside the subset: read it with the YAML library. */
export const OUTSIDE: unique symbol = Symbol("outside the plain YAML subset");

/** Keys whose values stay text (number and boolean plain scalars as written). */
export interface TextKeys {
  /** A scalar value. */
  scalar: ReadonlySet<string>;
  /** A sequence of scalars. */
  list: ReadonlySet<string>;
}

/** Thrown inside the reader; never escapes it. */
class Outside extends Error {}

function outside(): never {
  throw new Outside();
}

/**
 * What no document in the subset holds: anything but printable ASCII and newlines (tabs, CRs,
 * control characters, a BOM, and the Unicode spaces YAML does not count as spaces but JS trims).
 */
const FORBIDDEN = /[^\n\x20-\x7e]/;
/**
 * A plain key, read and written: a word (the core schema's null and booleans set apart by `typed`).
 * Sticky, read where a key starts (`wordAt`) rather than on a copy of the rest of the line.
 */
const WORD = /[A-Za-z_][A-Za-z0-9_-]*/y;
/** What may follow a value on its line: spaces, then a comment after at least one. */
const TRAILER = /^(?: +#.*| *)$/;
/**
 * Plain scalars the core schema reads as null, booleans, or numbers the reader leaves out. Null
 * and the booleans are a few spellings, looked up; numbers start with a digit, a sign or a point,
 * and only those are matched against the patterns (a spec's scalars are mostly NQNs and paths).
 */
const NULL = new Set(["", "~", "null", "Null", "NULL"]);
const BOOL = new Map([
  ["true", true],
  ["True", true],
  ["TRUE", true],
  ["false", false],
  ["False", false],
  ["FALSE", false],
]);
const NUMBER_START = new Set([..."+-.0123456789"]);
const INT = /^[-+]?[0-9]+$/;
const OTHER_NUMBER = new RegExp(
  [
    /^0o[0-7]+$/,
    /^0x[0-9a-fA-F]+$/,
    /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/,
    /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/,
    /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/,
  ].map((r) => `(?:${r.source})`).join("|"),
);
/**
 * Where a plain scalar ends, matched from its start (sticky): before a comment (a space and '#')
 * or at the line's end; in a flow collection also at ',', ']' or '}', and at '[' or '{', which
 * the subset leaves out. One match, not a loop over its characters in V8's interpreter: a spec's
 * scalars are mostly NQNs of 30-50 characters.
 */
const BLOCK_PLAIN = /(?:[^ ]| (?!#))*/y;
const FLOW_PLAIN = /(?:[^ ,[\]{}]| (?!#))*/y;
/** Characters that cannot start a plain scalar (or start something the reader leaves out). */
const NOT_PLAIN_START = new Set([..."&*!|>%@`?:,[]{}#'\""]);

interface Line {
  indent: number;
  text: string;
}

/**
 * TEXT read as the plain subset of YAML, or OUTSIDE. An empty document is OUTSIDE (the library
 * says what it is).
 */
export function readPlainYaml(text: string, keys: TextKeys): unknown | typeof OUTSIDE {
  if (FORBIDDEN.test(text)) return OUTSIDE;
  const lines: Line[] = [];
  // Past FORBIDDEN the only white space is the space, so trimming takes spaces and nothing else.
  // Indexed: for-of runs the array iterator in V8's interpreter, once per line.
  const raws = text.split("\n");
  for (let n = 0; n < raws.length; n++) {
    const raw = raws[n];
    const body = raw.trimStart();
    if (body === "" || body.startsWith("#")) continue;
    const indent = raw.length - body.length;
    // Document markers and directives start at the first column.
    if (indent === 0 && /^(?:---|\.\.\.|%)/.test(body)) return OUTSIDE;
    lines.push({ indent, text: body.trimEnd() });
  }
  if (!lines.length) return OUTSIDE;
  try {
    const reader = new Reader(lines, keys);
    const value = reader.block(lines[0].indent);
    return reader.done() ? value : OUTSIDE;
  } catch (err) {
    if (err instanceof Outside) return OUTSIDE;
    throw err;
  }
}

class Reader {
  #i = 0;
  constructor(readonly lines: Line[], readonly keys: TextKeys) {}

  done(): boolean {
    return this.#i === this.lines.length;
  }

  /** The block (mapping or sequence) whose first line is the current one, at INDENT. */
  block(indent: number, keepText = false): unknown {
    return isItem(this.lines[this.#i].text) ? this.seq(indent, keepText) : this.map(indent);
  }

  /** A block sequence at INDENT; KEEP_TEXT keeps its scalar items as written. */
  seq(indent: number, keepText: boolean): unknown[] {
    const items: unknown[] = [];
    while (this.#i < this.lines.length) {
      const line = this.lines[this.#i];
      if (line.indent !== indent || !isItem(line.text)) break;
      const rest = line.text.slice(1).trimStart();
      if (rest === "" || rest.startsWith("#")) {
        this.#i++;
        items.push(this.nested(indent, false, false));
      } else if (isItem(rest)) {
        outside();
      } else if (mayHoldKey(rest) && keyAt(rest, 0, false)) {
        // A mapping begun on the item's line: its keys are at the column of the first.
        this.lines[this.#i] = { indent: indent + line.text.length - rest.length, text: rest };
        items.push(this.map(this.lines[this.#i].indent));
      } else {
        this.#i++;
        items.push(inline(rest, this.keys, keepText));
        this.noDeeper(indent);
      }
    }
    this.noDeeper(indent);
    return items;
  }

  /** A block mapping at INDENT. */
  map(indent: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (this.#i < this.lines.length) {
      const line = this.lines[this.#i];
      if (line.indent !== indent) break;
      const { key, at } = keyAt(line.text, 0, false) ?? outside();
      if (Object.hasOwn(out, key)) outside();
      this.#i++;
      const rest = line.text.slice(at);
      const list = this.keys.list.has(key);
      out[key] = rest === "" || rest.startsWith("#")
        ? this.nested(indent, true, list)
        : inline(rest, this.keys, this.keys.scalar.has(key), list);
      this.noDeeper(indent);
    }
    return out;
  }

  /**
   * The value on the lines after a key or an item with nothing on its line, at PARENT's indent: a
   * deeper block, a sequence at the same indent after a key (SAME_SEQ), or null.
   */
  nested(parent: number, sameSeq: boolean, keepText: boolean): unknown {
    const next = this.lines[this.#i];
    if (!next) return null;
    if (next.indent > parent) return this.block(next.indent, keepText);
    if (sameSeq && next.indent === parent && isItem(next.text)) return this.seq(parent, keepText);
    return null;
  }

  /** After a value: a line deeper than INDENT would continue it, which the subset leaves out. */
  noDeeper(indent: number): void {
    const next = this.lines[this.#i];
    if (next && next.indent > indent) outside();
  }
}

/**
 * The key at TEXT[AT] (a plain word, or a quoted scalar) followed by ':' and a space or the line's
 * end (in a flow mapping, after a quoted key, no space is needed), and where its value starts; null
 * when TEXT has no such key there. Results are objects, not pairs: destructuring a pair runs the
 * array iterator, which V8's interpreter does not shortcut, and the reader runs in it.
 */
function keyAt(text: string, at: number, flow: boolean): { key: string; at: number } | null {
  let key: string, end: number;
  const q = text[at];
  if (q === '"' || q === "'") {
    const quoted = scalar(text, at, false, flow);
    key = quoted.value as string;
    end = quoted.end;
    if (text[end] !== ":" || (text[end + 1] !== " " && end + 1 < text.length && !flow)) return null;
  } else {
    const word = wordAt(text, at);
    if (word === undefined || typed(word)) return null;
    key = word;
    end = at + word.length;
    if (text[end] !== ":" || (end + 1 < text.length && text[end + 1] !== " ")) return null;
  }
  if (key === "__proto__") outside();
  let i = end + 1;
  while (text[i] === " ") i++;
  return { key, at: i };
}

/** The word (WORD) that starts at TEXT[AT], if one does (`test`: no match array is made). */
function wordAt(text: string, at: number): string | undefined {
  WORD.lastIndex = at;
  return WORD.test(text) ? text.slice(at, WORD.lastIndex) : undefined;
}

/**
 * Whether a block line's TEXT can hold a key: one ends at ':' before a space or the line's end.
 * Most items of a long list are plain names, which this settles without keyAt's match.
 */
function mayHoldKey(text: string): boolean {
  return text.includes(": ") || text.endsWith(":");
}

function isItem(text: string): boolean {
  return text === "-" || text.startsWith("- ");
}

/**
 * A value written on its key's or item's line: a scalar, or a one-line flow mapping or sequence
 * of scalars (LIST: its items kept as written).
 */
function inline(text: string, keys: TextKeys, keepText: boolean, list = false): unknown {
  if (text[0] === "{" || text[0] === "[") return flow(text, keys, list);
  const { value, end } = scalar(text, 0, keepText, false);
  if (end < text.length && !TRAILER.test(text.slice(end))) outside();
  return value;
}

/**
 * The scalar at TEXT[AT]: its value and where it ends. In a flow collection (FLOW) a plain scalar
 * ends at ',', ']' or '}'; in a block, at a comment or the line's end.
 */
function scalar(
  text: string,
  at: number,
  keepText: boolean,
  flow: boolean,
): { value: unknown; end: number } {
  const q = text[at];
  if (q === '"') {
    const close = text.indexOf('"', at + 1);
    const inner = close < 0 ? outside() : text.slice(at + 1, close);
    if (inner.includes("\\")) outside();
    return { value: inner, end: close + 1 };
  }
  if (q === "'") {
    let out = "";
    for (let i = at + 1; i < text.length; i++) {
      if (text[i] !== "'") out += text[i];
      else if (text[i + 1] === "'") out += text[i++];
      else return { value: out, end: i + 1 };
    }
    outside();
  }
  if (NOT_PLAIN_START.has(q) || (q === "-" && (text.length === at + 1 || text[at + 1] === " "))) {
    outside();
  }
  const extent = flow ? FLOW_PLAIN : BLOCK_PLAIN;
  extent.lastIndex = at;
  extent.test(text);
  const end = extent.lastIndex;
  if (flow && (text[end] === "[" || text[end] === "{")) outside();
  const plain = text.slice(at, end).trimEnd();
  // "a: b" on a value's line is a nested mapping (an error), "a:" likewise: the library says so.
  if (plain === "" || plain.includes(": ") || plain.endsWith(":")) outside();
  return { value: resolve(plain, keepText), end };
}

/** A plain scalar's value in the core schema; KEEP_TEXT keeps numbers and booleans as written. */
function resolve(plain: string, keepText: boolean): unknown {
  if (NULL.has(plain)) return null;
  if (keepText) return plain;
  const bool = BOOL.get(plain);
  if (bool !== undefined) return bool;
  if (!NUMBER_START.has(plain[0])) return plain;
  // An integer matches none of OTHER_NUMBER's forms; a spec's numbers are mostly integers.
  if (INT.test(plain)) return parseInt(plain, 10);
  if (OTHER_NUMBER.test(plain)) outside();
  return plain;
}

/** A one-line flow mapping or sequence of scalars, and nothing but a comment after it. */
function flow(text: string, keys: TextKeys, list: boolean): unknown {
  const isMap = text[0] === "{";
  const close = isMap ? "}" : "]";
  const map: Record<string, unknown> = {};
  const seq: unknown[] = [];
  let i = skipSpaces(text, 1);
  if (text[i] === close) return endOfFlow(text, i + 1, isMap ? map : seq);
  for (;;) {
    if (isMap) {
      const { key, at } = keyAt(text, i, true) ?? outside();
      if (Object.hasOwn(map, key) || at === text.length) outside();
      const { value, end } = scalar(text, at, keys.scalar.has(key), true);
      map[key] = value;
      i = end;
    } else {
      const { value, end } = scalar(text, i, list, true);
      seq.push(value);
      i = end;
    }
    i = skipSpaces(text, i);
    if (text[i] === close) return endOfFlow(text, i + 1, isMap ? map : seq);
    if (text[i] !== ",") outside();
    i = skipSpaces(text, i + 1);
    if (text[i] === close || text[i] === ",") outside();
  }
}

function skipSpaces(text: string, i: number): number {
  while (text[i] === " ") i++;
  return i;
}

function endOfFlow<T>(text: string, end: number, value: T): T {
  if (end < text.length && !TRAILER.test(text.slice(end))) outside();
  return value;
}

/** A string the writer may leave plain: words, paths, addresses and NQNs, single spaces inside. */
const PLAIN_SAFE = /^[A-Za-z0-9_/](?:[A-Za-z0-9_/.:()+=-]| (?! |$))*$/;
/** A string the writer double-quotes as YAML does: printable ASCII without quotes or escapes. */
const QUOTE_SAFE = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * VALUE as YAML, byte for byte what the YAML library writes with `lineWidth: 0` (`target show`'s
 * output), or OUTSIDE when it holds what the writer leaves to the library: strings it cannot tell
 * plain from quoted for sure, keys that are not plain words, numbers other than integers, nested
 * sequences. tests/unit/target_spec_yaml_test.ts compares the two writers.
 */
export function writePlainYaml(value: unknown): string | typeof OUTSIDE {
  try {
    const lines: string[] = [];
    if (isRecord(value) && Object.keys(value).length) writeMap(value, 0, lines);
    else lines.push(inlineValue(value));
    return lines.join("\n") + "\n";
  } catch (err) {
    if (err instanceof Outside) return OUTSIDE;
    throw err;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A value that fits on its key's or item's line: a scalar, `[]` or `{}`; else OUTSIDE. */
function inlineValue(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return String(v);
  if (typeof v === "number") {
    return Number.isSafeInteger(v) && !Object.is(v, -0) ? String(v) : outside();
  }
  if (typeof v === "string") return scalarText(v);
  if (Array.isArray(v) && !v.length) return "[]";
  if (isRecord(v) && !Object.keys(v).length) return "{}";
  outside();
}

/** Whether the core schema reads plain S as something other than a string. */
function typed(s: string): boolean {
  return NULL.has(s) || BOOL.has(s) ||
    (NUMBER_START.has(s[0]) && (INT.test(s) || OTHER_NUMBER.test(s)));
}

/** A string as YAML writes it: plain when that reads back as the same string, else "quoted". */
function scalarText(s: string): string {
  if (PLAIN_SAFE.test(s) && !s.includes(": ") && !s.endsWith(":") && !typed(s)) return s;
  if (QUOTE_SAFE.test(s) && (typed(s) || /^ | $|: /.test(s))) return `"${s}"`;
  outside();
}

function writeMap(map: Record<string, unknown>, indent: number, lines: string[], first = ""): void {
  let lead = first;
  for (const [key, v] of Object.entries(map)) {
    if (v === undefined) outside();
    const k = wordAt(key, 0) === key && !typed(key) ? key : outside();
    const pad = lead || " ".repeat(indent);
    lead = "";
    if (Array.isArray(v) && v.length) {
      lines.push(`${pad}${k}:`);
      writeSeq(v, indent + 2, lines);
    } else if (isRecord(v) && Object.keys(v).length) {
      lines.push(`${pad}${k}:`);
      writeMap(v, indent + 2, lines);
    } else {
      lines.push(`${pad}${k}: ${inlineValue(v)}`);
    }
  }
}

function writeSeq(seq: unknown[], indent: number, lines: string[]): void {
  const pad = " ".repeat(indent);
  for (const v of seq) {
    if (Array.isArray(v) && v.length) outside();
    if (isRecord(v) && Object.keys(v).length) writeMap(v, indent + 2, lines, `${pad}- `);
    else lines.push(`${pad}- ${inlineValue(v === undefined ? null : v)}`);
  }
}

/**
 * A spec (or any value) as YAML, as `target show` and `target import` print it: the plain writer's
 * text, or the YAML library's (loaded only then) when the value holds what the writer leaves out.
 */
export async function specYamlText(value: unknown): Promise<string> {
  const plain = writePlainYaml(value);
  if (plain !== OUTSIDE) return plain;
  const { stringify } = await import("yaml");
  return stringify(value, { lineWidth: 0 });
}
