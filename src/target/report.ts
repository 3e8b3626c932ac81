/** What `target up`, `down` and `check` report: counts, warnings, and a plan as data and text. */
import { describeStep, type Step, stepData } from "./plan.ts";
import type { TargetSpec } from "./spec.ts";

/** How many of each object a spec holds. */
export function specCounts(spec: TargetSpec): Record<string, number> {
  return {
    hosts: spec.hosts.length,
    subsystems: spec.subsystems.length,
    namespaces: spec.subsystems.reduce((n, s) => n + s.namespaces.length, 0),
    ports: spec.ports.length,
  };
}

/** What in a valid spec deserves a second look (any host may connect). */
export function specWarnings(spec: TargetSpec): string[] {
  return spec.subsystems.filter((s) => s.allow_any_host).map((s) =>
    `warning: subsystem '${s.nqn}' allows any host to connect (allow_any_host: true); ` +
    "list the hosts instead unless every host on the fabric may use it."
  );
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

/** A PlanResult as text: one line per step, or `nothing` when there are none. */
export function planText(verb: string, nothing: string): (data: unknown) => string {
  return (data: unknown): string => {
    const d = data as PlanResult;
    if (!d.steps.length) return nothing;
    const lines = d.steps.map((s) => describeStep(s as unknown as Step));
    const head = d.dry_run
      ? `Would ${verb} with ${lines.length} step(s) (dry run, nothing changed):`
      : `${verb[0].toUpperCase()}${verb.slice(1)} with ${lines.length} step(s):`;
    return [head, ...lines.map((l) => `  ${l}`)].join("\n");
  };
}
