/**
 * Plans a port's ANA groups and referrals. Neither needs the port disabled: an ANA state change
 * is one write to `ana_groups/<id>/ana_state` (hosts learn it from the ANA log, I/O on other
 * groups and ports goes on), a referral is its own object with its own `enable`.
 */
import {
  DEFAULT_ANA_GROUP,
  type LiveAnaGroup,
  type LivePort,
  type LiveReferral,
  type LiveTree,
  nvmetPath,
} from "../../configfs/nvmet.ts";
import { FailureError, quote } from "../../errors.ts";
import type { PortSpec, ReferralSpec, TargetSpec } from "../spec.ts";
import type { Step } from "./step.ts";

/** A port's part of the plan: its spec `p`, directory `name`, live state `cur`, and --prune. */
export interface PortPart {
  p: PortSpec;
  name: string | number;
  cur: LivePort | undefined;
  prune: boolean;
}

/** The state a group has when the kernel makes it: group 1 optimized, others inaccessible. */
function initialState(id: number): string {
  return id === DEFAULT_ANA_GROUP ? "optimized" : "inaccessible";
}

/** The one write that moves the group at `dir` from state `old` to `state`. */
export function anaStateStep(dir: string, state: string, old: string): Step {
  return { op: "write", path: `${dir}/ana_state`, value: state, old };
}

/** The steps that remove an ANA group (group 1 cannot go: it goes back to optimized). */
export function removeAnaGroup(steps: Step[], port: string | number, g: LiveAnaGroup): void {
  const dir = nvmetPath.anaGroup(port, g.name);
  if (g.id === DEFAULT_ANA_GROUP) {
    if (g.state !== "optimized") steps.push(anaStateStep(dir, "optimized", g.state));
    return;
  }
  steps.push({ op: "rmdir", path: dir });
}

/** The step that removes a referral. */
export function removeReferral(steps: Step[], port: string | number, r: LiveReferral): void {
  steps.push({ op: "rmdir", path: nvmetPath.referral(port, r.name) });
}

/** Referral attribute values a spec asks for, by file name. */
export function referralAttrs(r: ReferralSpec): Record<string, string> {
  const a: Record<string, string> = { addr_trtype: r.trtype };
  if (r.adrfam) a.addr_adrfam = r.adrfam;
  a.addr_traddr = r.traddr;
  if (r.trsvcid !== undefined) a.addr_trsvcid = r.trsvcid;
  a.addr_portid = String(r.portid ?? 0);
  if (r.treq !== undefined) a.addr_treq = r.treq;
  return a;
}

/** Steps that make the ANA groups of port `p` (directory `name`) match the spec. */
export function planAnaGroups({ p, name, cur, prune }: PortPart): Step[] {
  const steps: Step[] = [];
  const want = p.ana_groups ?? [];
  // Group 1 is every port's, listed or not: unlisted, the spec means the kernel's default state
  // (so a port drained by 'target ana' comes back with target up).
  const implied = want.some((g) => g.id === DEFAULT_ANA_GROUP)
    ? []
    : [{ id: DEFAULT_ANA_GROUP, state: initialState(DEFAULT_ANA_GROUP) }];
  for (const g of [...implied, ...want]) {
    const live = cur?.ana_groups?.find((l) => l.id === g.id);
    const dir = nvmetPath.anaGroup(name, live?.name ?? g.id);
    if (!live && g.id !== DEFAULT_ANA_GROUP) steps.push({ op: "mkdir", path: dir });
    const old = live?.state ?? initialState(g.id);
    if (old !== g.state) steps.push(anaStateStep(dir, g.state, old));
  }
  if (prune) {
    for (const g of cur?.ana_groups ?? []) {
      if (!want.some((w) => w.id === g.id)) removeAnaGroup(steps, name, g);
    }
  }
  return steps;
}

/** Steps that make the referrals of port `p` (directory `name`) match the spec. */
export function planReferrals({ p, name, cur, prune }: PortPart): Step[] {
  const steps: Step[] = [];
  const want = p.referrals ?? [];
  for (const r of want) {
    const live = cur?.referrals?.find((l) => l.name === r.name);
    const dir = nvmetPath.referral(name, r.name);
    if (!live) steps.push({ op: "mkdir", path: dir });
    const writes: Step[] = [];
    for (const [f, v] of Object.entries(referralAttrs(r))) {
      const old = live?.attr[f] ??
        (f === "addr_portid" ? "0" : f === "addr_treq" ? "not specified" : "");
      if (old !== v) writes.push({ op: "write", path: `${dir}/${f}`, value: v, old });
    }
    // An enabled referral refuses address changes (EACCES): disable, change, enable.
    const enabled = live?.enable ?? false;
    if (writes.length && enabled) {
      steps.push({ op: "write", path: `${dir}/enable`, value: "0", old: "1" });
    }
    steps.push(...writes);
    const nowEnabled = enabled && writes.length === 0;
    if (r.enabled !== nowEnabled) {
      steps.push({
        op: "write",
        path: `${dir}/enable`,
        value: r.enabled ? "1" : "0",
        old: nowEnabled ? "1" : "0",
      });
    }
  }
  if (prune) {
    for (const r of cur?.referrals ?? []) {
      if (!want.some((w) => w.name === r.name)) removeReferral(steps, name, r);
    }
  }
  return steps;
}

/**
 * Refuses a plan that removes an ANA group a namespace exported on that port is still in (the
 * kernel would let it, and hosts would see the namespace in a group the port no longer reports).
 * A namespace's group is the spec's ana_grpid, or its live one when the spec leaves it out.
 */
export function checkAnaGroupsInUse(live: LiveTree, spec: TargetSpec, steps: Step[]): void {
  const problems: string[] = [];
  // One pass over the plan, which at scale is thousands of steps with few removals among them.
  const removedGroups: RegExpExecArray[] = [];
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    const m = s.op === "rmdir" ? /^ports\/([^/]+)\/ana_groups\/([^/]+)$/.exec(s.path) : null;
    if (m) removedGroups.push(m);
  }
  if (!removedGroups.length) return;
  // What the plan removes and unlinks, and the spec's and live subsystems, looked up by path
  // and name rather than scanned per exported subsystem.
  const removed = new Set(steps.filter((o) => o.op === "rmdir").map((o) => o.path));
  const unlinked = new Set(steps.filter((o) => o.op === "unlink").map((o) => o.path));
  const specSubs = new Map(spec.subsystems.map((x) => [x.nqn, x]));
  const liveSubs = new Map(live.subsystems.map((x) => [x.nqn, x]));
  for (const m of removedGroups) {
    const port = live.ports.find((p) => p.name === m[1]);
    const group = port?.ana_groups?.find((g) => g.name === m[2]);
    if (!port || !group) continue;
    // A port that goes as a whole takes its groups with it; nothing is exported there then.
    if (removed.has(nvmetPath.port(port.name))) continue;
    const specPort = spec.ports.find((p) => p.id === port.id);
    const exported = new Set([...port.subsystems, ...(specPort?.subsystems ?? [])]);
    for (const nqn of exported) {
      if (unlinked.has(nvmetPath.portLink(port.name, nqn))) {
        if (!specPort?.subsystems.includes(nqn)) continue;
      }
      const specSub = specSubs.get(nqn);
      const liveSub = liveSubs.get(nqn);
      for (const ns of liveSub?.namespaces ?? []) {
        const specNs = specSub?.namespaces.find((n) => n.nsid === ns.nsid);
        if (specSub && !specNs) continue; // pruned away with the subsystem's other namespaces
        const grp = specNs?.ana_grpid ?? Number(ns.ana_grpid ?? DEFAULT_ANA_GROUP);
        if (grp === group.id) {
          problems.push(
            `namespace ${ns.nsid} of ${quote(nqn)} is in ANA group ${group.id} of port ${port.id}`,
          );
        }
      }
      for (const n of specSub?.namespaces ?? []) {
        if (liveSub?.namespaces.some((l) => l.nsid === n.nsid)) continue;
        if (n.ana_grpid === group.id) {
          problems.push(
            `namespace ${n.nsid} of ${quote(nqn)} is in ANA group ${group.id} of port ${port.id}`,
          );
        }
      }
    }
  }
  if (problems.length) {
    throw new FailureError(
      `Cannot remove an ANA group still in use: ${problems.join("; ")}. Nothing was changed.`,
      {
        hint: "Move the namespace to another group first (set its ana_grpid in the spec), or " +
          "keep the group in the port's ana_groups.",
      },
    );
  }
}
