/**
 * The Prometheus text exposition format, version 0.0.4: what `nvmeof metrics` prints, the
 * textfile collector reads and the exporter serves. Each family's `# HELP` and `# TYPE` once, then
 * its samples, one a line: `name{label="value",…} value`.
 */
import type { MetricFamily, Sample } from "./family.ts";

/** The Content-Type of the text format 0.0.4, as Prometheus asks for it. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** What a label value must have for escapeLabelValue to change it. */
const LABEL_ESCAPES = /[\\"\n]/;

/** A label value as the format quotes it: `\` → `\\`, `"` → `\"`, a newline → `\n`. */
export function escapeLabelValue(value: string): string {
  // One test, not three replacements, for the values that need none (nearly all of them): a
  // compute node with 512 paths has some 40 000.
  if (!LABEL_ESCAPES.test(value)) return value;
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A HELP text as the format reads it: `\` → `\\`, a newline → `\n` (quotes stay). */
export function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** A sample value as Prometheus parses it (Go's ParseFloat): `NaN`, `+Inf`, `-Inf`, or the number. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/**
 * Each label set as the format writes it, made once: a collector passes one set to all of a
 * device's families.
 */
const labelTexts = new WeakMap<Sample["labels"], string>();

function sampleLine(name: string, s: Sample): string {
  let labels = labelTexts.get(s.labels);
  if (labels === undefined) {
    const pairs = Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
    labels = pairs.length ? `{${pairs.join(",")}}` : "";
    labelTexts.set(s.labels, labels);
  }
  return `${name}${labels} ${formatValue(s.value)}`;
}

/** Renders families in the text format 0.0.4, ending with a newline (empty for no families). */
export function renderExposition(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) lines.push(sampleLine(f.name, s));
  }
  return lines.length ? lines.join("\n") + "\n" : "";
}
