/**
 * A JSON Schema checker for the keywords `nvmeof target schema` uses (draft 2020-12 semantics).
 * It refuses any keyword it does not implement, so a schema that starts using one makes the
 * tests fail instead of passing unchecked.
 */
import type { Schema } from "../../src/target/schema.ts";

const ANNOTATIONS = new Set(["description", "default", "$schema", "$id", "title", "$defs"]);
const KNOWN = new Set([
  ...ANNOTATIONS,
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "pattern",
  "anyOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "$ref",
  "minItems",
  "maxItems",
]);

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Returns the errors of `value` against `schema` (empty when valid); `root` resolves $ref. */
export function schemaErrors(
  value: unknown,
  schema: Schema,
  root: Schema = schema,
  path = "$",
): string[] {
  for (const k of Object.keys(schema)) {
    if (!KNOWN.has(k)) throw new Error(`schema keyword '${k}' at ${path} is not implemented here`);
  }
  const errs: string[] = [];
  const err = (m: string) => errs.push(`${path}: ${m}`);
  if (schema.$ref) {
    const m = /^#\/\$defs\/(\w+)$/.exec(schema.$ref);
    const target = m && root.$defs?.[m[1]];
    if (!target) throw new Error(`unresolvable $ref ${schema.$ref}`);
    errs.push(...schemaErrors(value, target, root, path));
  }
  const t = typeOf(value);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const ok = types.some((x) => x === t || (x === "number" && t === "integer"));
    if (!ok) return [...errs, `${path}: is ${t}, not ${types.join("|")}`];
  }
  if (schema.const !== undefined && !deepEqual(value, schema.const)) err("not the constant");
  if (schema.enum && !schema.enum.some((e) => deepEqual(e, value))) err("not in enum");
  if (t === "integer" || t === "number") {
    const n = value as number;
    if (schema.minimum !== undefined && n < schema.minimum) err(`below ${schema.minimum}`);
    if (schema.maximum !== undefined && n > schema.maximum) err(`above ${schema.maximum}`);
  }
  if (t === "string") {
    const s = value as string;
    const len = [...s].length;
    if (schema.minLength !== undefined && len < schema.minLength) err("too short");
    if (schema.maxLength !== undefined && len > schema.maxLength) err("too long");
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(s)) {
      err(`does not match ${schema.pattern}`);
    }
  }
  if (t === "array") {
    const a = value as unknown[];
    if (schema.minItems !== undefined && a.length < schema.minItems) err("too few items");
    if (schema.maxItems !== undefined && a.length > schema.maxItems) err("too many items");
    if (schema.items) {
      a.forEach((v, i) => errs.push(...schemaErrors(v, schema.items!, root, `${path}[${i}]`)));
    }
  }
  if (t === "object") {
    const o = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (!(r in o)) err(`missing ${r}`);
    for (const [k, v] of Object.entries(o)) {
      const p = schema.properties?.[k];
      if (p) errs.push(...schemaErrors(v, p, root, `${path}.${k}`));
      else if (schema.additionalProperties === false) err(`unknown key ${k}`);
    }
  }
  if (schema.anyOf && !schema.anyOf.some((s) => schemaErrors(value, s, root, path).length === 0)) {
    err("matches none of anyOf");
  }
  for (const s of schema.allOf ?? []) errs.push(...schemaErrors(value, s, root, path));
  if (schema.not && schemaErrors(value, schema.not, root, path).length === 0) err("matches not");
  if (schema.if) {
    const branch = schemaErrors(value, schema.if, root, path).length === 0
      ? schema.then
      : schema.else;
    if (branch) errs.push(...schemaErrors(value, branch, root, path));
  }
  return errs;
}
