/** What `target up`, `down` and `check` report: counts, warnings, and a plan as data and text. */
import { describeStep, type Step, stepData } from "./plan.ts";
import type { TargetSpec } from "./spec.ts";
import { isNqnForm } from "./values.ts";

/** How many of each object a spec holds. */
export function specCounts(spec: TargetSpec): Record<string, number> {
  return {
    hosts: spec.hosts.length,
    subsystems: spec.subsystems.length,
    namespaces: spec.subsystems.reduce((n, s) => n + s.namespaces.length, 0),
    ports: spec.ports.length,
  };
}

/** What in a valid spec deserves a second look (any host may connect, an NQN of no standard form). */
export function specWarnings(spec: TargetSpec): string[] {
  const nqns = new Set([
    ...spec.subsystems.map((s) => s.nqn),
    ...spec.hosts.map((h) => h.nqn),
    ...spec.subsystems.flatMap((s) => s.hosts),
  ]);
  return [
    ...spec.subsystems.filter((s) => s.allow_any_host).map((s) =>
      `warning: subsystem '${s.nqn}' allows any host to connect (allow_any_host: true); ` +
      "list the hosts instead unless every host on the fabric may use it."
    ),
    ...[...nqns].filter((n) => !isNqnForm(n)).map((n) =>
      `warning: NQN '${n}' is not of the form nqn.<yyyy-mm>.<reverse-domain>[:<name>]; nvmet ` +
      "accepts it, but the NVMe specification asks for that form."
    ),
  ];
}

/** The result of `target up` or `down`: the steps (secrets masked), and whether they ran. */
export interface PlanResult {
  dry_run: boolean;
  changed: boolean;
  steps: Record<string, unknown>[];
  warnings: string[];
  pruned?: boolean;
  summary?: Record<string, number>;
}

/** The result of planning (and, unless a dry run, applying) `steps`. */
export function planResult(
  steps: Step[],
  options: { dryRun: boolean; warnings?: string[]; summary?: Record<string, number> },
): PlanResult {
  return {
    dry_run: options.dryRun,
    changed: !options.dryRun && steps.length > 0,
    steps: steps.map(stepData),
    warnings: options.warnings ?? [],
    ...(options.summary ? { summary: options.summary } : {}),
  };
}

/** Plans of more steps than this are summarised in text output unless verbose. */
export const PLAN_LINES_SHOWN = 40;
/** The steps a summarised plan still lists, from its start. */
const SUMMARY_HEAD = 10;

/** The kinds of object a path of two segments names, by its first ("hosts/NQN": host). */
const TOP_KIND = new Map([["hosts", "host"], ["subsystems", "subsystem"], ["ports", "port"]]);
/** The kinds of object a path of four segments names, by its first and third. */
const CHILD_KIND = new Map([
  ["subsystems/namespaces", "namespace"],
  ["subsystems/allowed_hosts", "allowed host"],
  ["ports/subsystems", "port link"],
  ["ports/ana_groups", "ANA group"],
  ["ports/referrals", "referral"],
]);

/**
 * What a step's path names: "host", "namespace", "allowed host", "attribute", … Found from where
 * its slashes are, without splitting the path: a summarised plan asks it of every step.
 */
function stepObject(s: Step): string {
  if (s.op === "write") return "attribute";
  const p = s.path;
  const a = p.indexOf("/");
  if (a < 0) return "other";
  const b = p.indexOf("/", a + 1);
  const top = p.slice(0, a);
  if (b < 0) return TOP_KIND.get(top) ?? "other";
  const c = p.indexOf("/", b + 1);
  if (c < 0 || p.indexOf("/", c + 1) >= 0) return "other";
  return CHILD_KIND.get(`${top}/${p.slice(b + 1, c)}`) ?? "other";
}

const OP_WORDS: Record<Step["op"], string> = {
  mkdir: "create",
  rmdir: "remove",
  write: "write",
  link: "link",
  unlink: "unlink",
};

/**
 * A long plan in a few lines: per operation, how many of each kind of object, in the plan's
 * order ("create: 512 host(s), 64 subsystem(s)"); writes by attribute name.
 */
export function planSummary(steps: Step[]): string[] {
  const byOp = new Map<Step["op"], Map<string, number>>();
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    const kind = s.op === "write" ? s.path.slice(s.path.lastIndexOf("/") + 1) : stepObject(s);
    let counts = byOp.get(s.op);
    if (counts === undefined) byOp.set(s.op, counts = new Map());
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...byOp].map(([op, counts]) => {
    const parts = [...counts].map(([k, n]) => op === "write" ? `${n} ${k}` : `${n} ${k}(s)`);
    return `${OP_WORDS[op]}: ${parts.join(", ")}`;
  });
}

/** Options of planText. */
export interface PlanTextOptions {
  /** List every step however many there are (-v). */
  verbose?: boolean;
}

/**
 * A PlanResult as text: one line per step, or `nothing` when there are none. A plan of more than
 * PLAN_LINES_SHOWN steps is summarised (counts per operation and kind, its first steps) unless
 * verbose; JSON output always carries every step.
 */
export function planText(
  verb: string,
  nothing: string,
  options: PlanTextOptions = {},
): (data: unknown) => string {
  return (data: unknown): string => {
    const d = data as PlanResult;
    if (!d.steps.length) return nothing;
    const steps = d.steps as unknown as Step[];
    const n = steps.length;
    const head = d.dry_run
      ? `Would ${verb} with ${n} step(s) (dry run, nothing changed):`
      : `${verb[0].toUpperCase()}${verb.slice(1)} with ${n} step(s):`;
    if (options.verbose || n <= PLAN_LINES_SHOWN) {
      return [head, ...steps.map((s) => `  ${describeStep(s)}`)].join("\n");
    }
    return [
      head,
      ...planSummary(steps).map((l) => `  ${l}`),
      `  the first ${SUMMARY_HEAD}:`,
      ...steps.slice(0, SUMMARY_HEAD).map((s) => `    ${describeStep(s)}`),
      `  … ${n - SUMMARY_HEAD} more: -v lists every step, -o json gives them as data.`,
    ].join("\n");
  };
}
