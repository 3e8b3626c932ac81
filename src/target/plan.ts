/**
 * The plan: the difference between the live nvmet tree and a spec, as ordered configfs steps.
 * Creation runs hosts → subsystems → namespaces → ports → links; removal runs in reverse. Only
 * what differs is touched, so hosts of unrelated subsystems see no disruption:
 * - a namespace whose device/uuid/nguid changes is disabled, changed, re-enabled;
 * - a port whose address changes is unlinked from its subsystems, changed, relinked;
 * - objects and links the spec does not mention stay unless `prune` is set.
 */
import { type LivePort, type LiveTree, nvmetPath } from "../configfs/nvmet.ts";
import { FailureError, quote } from "../errors.ts";
import { planHosts, wantedHosts } from "./plan/hosts.ts";
import type { PlanOptions } from "./plan/options.ts";
import { checkAnaGroupsInUse } from "./plan/ana.ts";
import { planPort } from "./plan/ports.ts";
import { removePort, removeSubsystem, unlinkPort } from "./plan/remove.ts";
import type { Step } from "./plan/step.ts";
import { planSubsystem, subsystemToDerive } from "./plan/subsystems.ts";
import type { ToDerive } from "./identity.ts";
import type { HostSpec, TargetSpec } from "./spec.ts";

export type { PlanOptions } from "./plan/options.ts";
export { describeStep, removes, type Step, stepData } from "./plan/step.ts";

/** Removal, in the kernel's order, of what the spec does not mention: ports → subsystems → hosts. */
function planPrune(
  live: LiveTree,
  want: { spec: TargetSpec; ports: Set<LivePort>; hosts: Map<string, HostSpec> },
): Step[] {
  const steps: Step[] = [];
  const wantSubs = new Set(want.spec.subsystems.map((s) => s.nqn));
  for (const p of live.ports) if (!want.ports.has(p)) removePort(steps, p);
  for (const s of live.subsystems) {
    if (wantSubs.has(s.nqn)) continue;
    // Its links from spec ports went with the ports' plans; links from other ports went above.
    removeSubsystem(steps, s);
  }
  for (const h of live.hosts) {
    if (!want.hosts.has(h.nqn)) steps.push({ op: "rmdir", path: nvmetPath.host(h.nqn) });
  }
  return steps;
}

/**
 * The serials and UUIDs planUp of SPEC against LIVE will derive (identity.ts), so that they can
 * be hashed ahead, all at once (hashAhead).
 */
export function identitiesToDerive(live: LiveTree, spec: TargetSpec): ToDerive {
  const into: ToDerive = { serials: [], namespaces: [] };
  const liveSubs = new Map(live.subsystems.map((l) => [l.nqn, l]));
  for (const s of spec.subsystems) subsystemToDerive(s, liveSubs.get(s.nqn), into);
  return into;
}

/**
 * Computes the steps that make `live` match `spec`, in creation order: hosts → subsystems (with
 * their namespaces and allowed hosts) → ports and links → with `prune`, removal of the rest. An
 * empty list means nothing to do.
 */
export function planUp(live: LiveTree, spec: TargetSpec, options: PlanOptions = {}): Step[] {
  const hosts = wantedHosts(spec);
  const steps = planHosts(live, hosts, options);
  // Live objects are looked up by name, never by a scan per spec object: a plan's cost grows with
  // the number of objects, not with its square.
  const liveSubs = new Map(live.subsystems.map((l) => [l.nqn, l]));
  for (const s of spec.subsystems) {
    planSubsystem(steps, s, { prune: options.prune, cur: liveSubs.get(s.nqn) });
  }
  // A spec's port is the live one with its number, by the name nvmeof gives it (`2`) if there is
  // one, else by another the kernel reads the same (`0x2`).
  const byName = new Map(live.ports.map((l) => [l.name, l]));
  const byId = new Map<number, LivePort>();
  for (const l of live.ports) if (!byId.has(l.id)) byId.set(l.id, l);
  const matched = new Set<LivePort>();
  for (const p of spec.ports) {
    const cur = byName.get(String(p.id)) ?? byId.get(p.id);
    if (cur) matched.add(cur);
    for (const step of planPort(p, { prune: options.prune, cur })) steps.push(step);
  }
  if (options.prune) {
    for (const step of planPrune(live, { spec, ports: matched, hosts })) steps.push(step);
  }
  checkAnaGroupsInUse(live, spec, steps);
  return steps;
}

/** Whether a spec describes nothing at all (a 0-byte file, `---`, `null`, `{}`). */
export function isEmptySpec(spec: TargetSpec): boolean {
  return !spec.hosts.length && !spec.subsystems.length && !spec.ports.length;
}

/** "2 subsystem(s) ('a', 'b'), …": what a tree holds, the first few names of each kind. */
function treeSummary(live: LiveTree): string {
  const names = (kind: string, list: Array<string | number>) => {
    if (!list.length) return [];
    const shown = list.slice(0, 3).map((n) => typeof n === "number" ? String(n) : quote(n));
    const more = list.length > shown.length ? `, … ${list.length - shown.length} more` : "";
    return [`${list.length} ${kind}(s) (${shown.join(", ")}${more})`];
  };
  return [
    ...names("subsystem", live.subsystems.map((s) => s.nqn)),
    ...names("port", live.ports.map((p) => p.id)),
    ...names("host", live.hosts.map((h) => h.nqn)),
  ].join(", ");
}

/**
 * Refuses `up --prune` with an empty spec while the tree holds something: a truncated or emptied
 * file must not wipe a target. `allowEmpty` (the user's explicit word) lets it through.
 */
export function checkPruneByEmptySpec(
  spec: TargetSpec,
  live: LiveTree,
  options: { source: string; allowEmpty: boolean },
): void {
  if (options.allowEmpty || !isEmptySpec(spec)) return;
  if (!live.hosts.length && !live.subsystems.length && !live.ports.length) return;
  throw new FailureError(
    `The spec ${options.source} is empty, and with --prune it would remove the whole target: ` +
      `${treeSummary(live)}; nothing was changed.`,
    {
      hint: "A truncated or emptied file looks like this: check it. To remove everything on " +
        "purpose, pass --allow-empty, or run 'nvmeof target down --all'.",
    },
  );
}

/** What `target down` removes. */
export interface DownSelection {
  /** Remove everything in the tree. */
  all?: boolean;
  /** Otherwise: the spec whose objects to remove. */
  spec?: TargetSpec;
}

/**
 * Computes the steps that remove the selected objects in the kernel's order: port links and
 * ports → namespaces, allowed hosts and subsystems → hosts no remaining subsystem allows.
 */
export function planDown(live: LiveTree, sel: DownSelection): Step[] {
  const steps: Step[] = [];
  const subs = new Set(
    sel.all ? live.subsystems.map((s) => s.nqn) : (sel.spec?.subsystems ?? []).map((s) => s.nqn),
  );
  const ports = new Set(
    sel.all ? live.ports.map((p) => p.id) : (sel.spec?.ports ?? []).map((p) => p.id),
  );
  // Ports: whole ports the selection names; elsewhere only the links to removed subsystems.
  for (const p of live.ports) {
    if (ports.has(p.id)) removePort(steps, p);
    else {
      for (const s of p.subsystems) {
        if (subs.has(s)) {
          steps.push(unlinkPort(p.name, s));
        }
      }
    }
  }
  for (const s of live.subsystems) if (subs.has(s.nqn)) removeSubsystem(steps, s);
  const specHosts = new Set<string>();
  if (sel.spec) {
    for (const h of sel.spec.hosts) specHosts.add(h.nqn);
    for (const s of sel.spec.subsystems) for (const h of s.hosts) specHosts.add(h);
  }
  const stillAllowed = new Set(
    live.subsystems.filter((s) => !subs.has(s.nqn)).flatMap((s) => s.allowed_hosts),
  );
  for (const h of live.hosts) {
    if ((sel.all || specHosts.has(h.nqn)) && !stillAllowed.has(h.nqn)) {
      steps.push({ op: "rmdir", path: nvmetPath.host(h.nqn) });
    }
  }
  return steps;
}
