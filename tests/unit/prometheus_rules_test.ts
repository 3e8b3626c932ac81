/**
 * The Prometheus alert rules (integrations/prometheus): promtool checks and unit-tests them, the
 * scrape example loads them, and every metric and label they name is in the contract table of
 * docs/metrics.md, so the rules and the contract cannot drift apart.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { ROOT, run, tempDir } from "../helpers.ts";

const DIR = `${ROOT}/integrations/prometheus`;
const RULES = `${DIR}/nvmeof.rules.yml`;
const RULE_TESTS = `${DIR}/tests/nvmeof.rules.test.yml`;
const SCRAPE_EXAMPLE = `${DIR}/prometheus.yml.example`;
const CONTRACT = `${ROOT}/docs/metrics.md`;
/** The alerts the rules must hold (docs/metrics.md "Alerts" lists the same). */
const ALERTS = [
  "NvmeofPathDown",
  "NvmeofSubsystemNoLivePath",
  "NvmeofSubsystemDegraded",
  "NvmeofNoOptimizedPath",
  "NvmeofRoceLoss",
  "NvmeofTargetPortNotListening",
  "NvmeofSubsystemOpenToAnyHost",
  "NvmeofCollectorFailing",
  "NvmeofExporterDown",
];
/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ["job", "instance"];
/** Families from Prometheus itself, not from nvmeof. */
const PROMETHEUS_FAMILIES: Record<string, string[]> = { up: [] };

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function readRules(text: string): Rule[] {
  const doc = parse(text) as { groups: { name: string; rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

/**
 * The contract table of docs/metrics.md: family name → labels. A cell may abbreviate names after
 * the first (`nvmeof_block_write_ios_total`, `_write_bytes_total`) and labels may be "same" (the
 * row above's).
 */
function contractFamilies(markdown: string): Map<string, string[]> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith("The contract"));
  if (!section) throw new Error('docs/metrics.md has no section "The contract"');
  const families = new Map<string, string[]>();
  let previous: string[] = [];
  for (const line of section.split("\n")) {
    const cells = line.split("|").slice(1, -1).map((c) => c.trim());
    if (cells.length < 3 || !cells[0].startsWith("`")) continue;
    const names = [...cells[0].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const labels = cells[2] === "same"
      ? previous
      : [...cells[2].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    previous = labels;
    for (const name of names) {
      if (!name.startsWith("_")) {
        families.set(name, labels);
        continue;
      }
      const head = name.slice(0, name.indexOf("_", 1));
      const at = names[0].indexOf(head);
      assert.ok(at > 0, `cannot expand ${name} from ${names[0]}`);
      families.set(names[0].slice(0, at) + name, labels);
    }
  }
  return families;
}

/** Metric names in a PromQL expression: identifiers that are neither labels nor keywords. */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, "{}") // matchers
    .replace(/\b(?:on|ignoring|by|without|group_left|group_right)\s*\([^)]*\)/g, "") // label lists
    .replace(/\[[^\]]*\]/g, ""); // ranges
  const words = stripped.match(/[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()/g) ?? [];
  const keywords = new Set(["and", "or", "unless", "offset", "bool"]);
  return [...new Set(words.filter((w) => !keywords.has(w) && !/^\d/.test(w)))];
}

/** Label names an expression and its annotations use: grouping lists, matchers, `$labels.x`. */
function labelNames(rule: Rule): string[] {
  const out = new Set<string>();
  const lists = rule.expr.matchAll(
    /\b(?:on|ignoring|by|without|group_left|group_right)\s*\(([^)]*)\)/g,
  );
  for (const m of lists) {
    for (const l of m[1].split(",").map((s) => s.trim()).filter(Boolean)) out.add(l);
  }
  for (const m of rule.expr.matchAll(/\{([^}]*)\}/g)) {
    for (const mm of m[1].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) out.add(mm[1]);
  }
  for (const text of Object.values(rule.annotations ?? {})) {
    for (const m of text.matchAll(/\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)/g)) out.add(m[1]);
  }
  return [...out];
}

const promtool = await run("promtool", ["--version"]).then(() => true, () => false);
const ci = Deno.env.get("CI") === "true";
// Outside CI a machine without Debian's prometheus package skips the promtool tests, saying so;
// in CI (scripts/setup --lab installed it) they run, and a missing promtool fails them.
const skipPromtool = !promtool && !ci;
const SKIPPED = " (skipped: no promtool; run scripts/lab/lab setup, as root)";
if (skipPromtool) {
  console.warn(
    "promtool is missing: the promtool tests are skipped (run scripts/lab/lab setup, as root)",
  );
}

/** Runs promtool and returns its stdout, failing on a non-zero exit or a missing promtool. */
async function promtoolOk(args: string[]): Promise<string> {
  if (!promtool) {
    throw new Error(
      "promtool is missing, and CI=true requires the promtool tests. Install Debian's prometheus " +
        "package: scripts/lab/lab setup (as root).",
    );
  }
  const r = await run("promtool", args);
  assert.equal(r.code, 0, `promtool ${args.join(" ")}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** A test that needs promtool: skipped, saying why, where it is missing outside CI. */
function promtoolTest(name: string, fn: () => Promise<void>) {
  Deno.test({
    name: `prometheus: ${name}${skipPromtool ? SKIPPED : ""}`,
    ignore: skipPromtool,
    fn,
  });
}

promtoolTest("promtool check rules finds every alert and no problem", async () => {
  const out = await promtoolOk(["check", "rules", RULES]);
  assert.match(out, new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
});

promtoolTest("the promtool unit tests of every alert pass", async () => {
  assert.match(await promtoolOk(["test", "rules", RULE_TESTS]), /SUCCESS/);
});

promtoolTest("the scrape example is a valid configuration that loads the rules", async () => {
  const out = await promtoolOk(["check", "config", SCRAPE_EXAMPLE]);
  assert.match(out, /SUCCESS: 1 rule files found/);
  assert.match(out, new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
});

promtoolTest("the README's sed line makes a valid copy whose for: are all short", async () => {
  const readme = await Deno.readTextFile(`${DIR}/README.md`);
  const line = readme.split("\n").find((l) => l.startsWith("sed -E ") && l.includes("for:"));
  assert.ok(line, "README.md has no `sed -E … for: …` line");
  await using dir = await tempDir();
  await Deno.copyFile(RULES, `${dir.path}/nvmeof.rules.yml`);
  const sed = await new Deno.Command("sh", { args: ["-c", line], cwd: dir.path }).output();
  assert.equal(sed.code, 0, new TextDecoder().decode(sed.stderr));
  const copy = await Deno.readTextFile(`${dir.path}/nvmeof.rules.short.yml`);
  const rules = readRules(copy);
  assert.deepEqual(rules.map((r) => r.alert), ALERTS);
  assert.deepEqual([...new Set(rules.map((r) => r.for))], ["10s"]);
  await promtoolOk(["check", "rules", `${dir.path}/nvmeof.rules.short.yml`]);
});

Deno.test("prometheus: the rules hold every alert, each with severity, summary, description", async () => {
  const rules = readRules(await Deno.readTextFile(RULES));
  assert.deepEqual(rules.map((r) => r.alert), ALERTS);
  for (const r of rules) {
    assert.match(r.labels?.severity ?? "", /^(warning|critical)$/, `${r.alert}: severity`);
    assert.ok(r.for, `${r.alert}: for`);
    assert.ok(r.annotations?.summary, `${r.alert}: summary`);
    // The description names the nvmeof command (or the exporter) that shows the fault.
    assert.match(r.annotations?.description ?? "", /`nvmeof [a-z]/, `${r.alert}: description`);
  }
});

Deno.test("prometheus: every metric and label the rules name is in the contract of docs/metrics.md", async () => {
  const contract = contractFamilies(await Deno.readTextFile(CONTRACT));
  const rules = readRules(await Deno.readTextFile(RULES));
  for (const r of rules) {
    const families = metricNames(r.expr);
    assert.ok(families.length > 0, `${r.alert}: no metric found in ${r.expr}`);
    const allowed = new Set([...TARGET_LABELS, "alertname"]);
    for (const f of families) {
      const labels = contract.get(f) ?? PROMETHEUS_FAMILIES[f];
      assert.ok(labels, `${r.alert}: ${f} is not in docs/metrics.md's contract table`);
      for (const l of labels) allowed.add(l);
    }
    for (const l of labelNames(r)) {
      assert.ok(allowed.has(l), `${r.alert}: label ${l} belongs to none of ${families.join(", ")}`);
    }
  }
});

Deno.test("prometheus: the contract parser expands abbreviated names and 'same' labels", () => {
  const table = [
    "## The contract",
    "| family | type | labels | what |",
    "| --- | --- | --- | --- |",
    "| **I/O** (`block`) | | | |",
    "| `nvmeof_block_read_ios_total` | counter | `device`, `role` | x |",
    "| `nvmeof_block_write_ios_total`, `_write_bytes_total` | counter | same | |",
    "## Next",
    "| `nvmeof_not_here` | gauge | `x` | |",
  ].join("\n");
  const f = contractFamilies(table);
  assert.deepEqual([...f.keys()], [
    "nvmeof_block_read_ios_total",
    "nvmeof_block_write_ios_total",
    "nvmeof_block_write_bytes_total",
  ]);
  assert.deepEqual(f.get("nvmeof_block_write_bytes_total"), ["device", "role"]);
});

Deno.test("prometheus: metric and label names are told apart in PromQL", () => {
  const expr = 'sum by (job, port) (increase(nvmeof_a_total{counter=~"x|y"}[10m])) > 0 ' +
    "* on(job, instance, port) group_left(netdev) nvmeof_b_info unless up == 0";
  assert.deepEqual(metricNames(expr), ["nvmeof_a_total", "nvmeof_b_info", "up"]);
  assert.deepEqual(
    labelNames({ alert: "A", expr, annotations: { summary: "{{ $labels.device }}" } }).sort(),
    ["counter", "device", "instance", "job", "netdev", "port"],
  );
});

Deno.test("prometheus: docs/metrics.md's Alerts table lists each alert with its severity and for", async () => {
  const markdown = await Deno.readTextFile(CONTRACT);
  const section = markdown.split(/^## /m).find((s) => s.startsWith("Alerts"));
  assert.ok(section, 'docs/metrics.md has no section "Alerts"');
  const rows = section.split("\n").map((l) => l.split("|").slice(1, -1).map((c) => c.trim()))
    .filter((c) => c.length >= 3 && /^`Nvmeof\w+`$/.test(c[0]))
    .map((c) => [c[0].slice(1, -1), c[1], c[2]]);
  const rules = readRules(await Deno.readTextFile(RULES));
  assert.deepEqual(rows, rules.map((r) => [r.alert, r.labels?.severity, r.for]));
});
