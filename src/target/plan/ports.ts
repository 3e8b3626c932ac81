/**
 * Plans one port and its links. A port's attributes can change only while it has no links, so a
 * port whose attributes change is unlinked from its subsystems, changed, relinked.
 */
import { type LivePort, nvmetPath } from "../../configfs/nvmet.ts";
import type { PortSpec } from "../spec.ts";
import { portAttrs, sameAttr } from "./attrs.ts";
import { planAnaGroups, planReferrals } from "./ana.ts";
import type { PlanOptions } from "./options.ts";
import { removePort, unlinkPort } from "./remove.ts";
import type { Step } from "./step.ts";

/** Address attributes a port keeps from its past unless they are written (none can be cleared). */
const ADDRESS_ATTRS = ["addr_adrfam", "addr_traddr", "addr_trsvcid"];

/**
 * Whether the live port must be made anew to match: its transport changes, or it holds an address
 * the spec's port has none of (a loop port). nvmet refuses an empty address, so a stale one can only
 * go with the port.
 */
function needsRemake(p: PortSpec, cur: LivePort): boolean {
  const want = portAttrs(p);
  if (cur.attr.addr_trtype && cur.attr.addr_trtype !== want.addr_trtype) return true;
  return ADDRESS_ATTRS.some((a) => want[a] === undefined && (cur.attr[a] ?? "") !== "");
}

/**
 * Steps that make port `p` match; `cur` is the live port with its number, if any. A port whose
 * transport changes is removed and made again (its links with it).
 */
export function planPort(
  p: PortSpec,
  options: Pick<PlanOptions, "prune"> & { cur?: LivePort },
): Step[] {
  const steps: Step[] = [];
  let cur = options.cur;
  const name = cur?.name ?? p.id;
  const dir = nvmetPath.port(name);
  // The links the port had are kept unless pruned, also when the port is made anew.
  const linked = cur?.subsystems ?? [];
  const wanted = new Set(p.subsystems);
  const keep = linked.filter((s) => wanted.has(s) || !options.prune);
  const kept = new Set(keep);
  if (cur && needsRemake(p, cur)) {
    removePort(steps, cur);
    cur = undefined;
  }
  if (!cur) steps.push({ op: "mkdir", path: dir });
  const writes: Step[] = [];
  for (const [f, v] of Object.entries(portAttrs(p))) {
    const old = cur?.attr[f];
    if (!sameAttr(f, old, v)) {
      writes.push({ op: "write", path: `${dir}/${f}`, value: v, old: old ?? "" });
    }
  }
  const relinkAll = writes.length > 0 || !cur;
  for (const s of cur?.subsystems ?? []) {
    if (relinkAll || !kept.has(s)) steps.push(unlinkPort(name, s));
  }
  steps.push(...writes);
  // ANA groups and referrals change on an enabled port: before the links, so that a port that
  // comes up reports its groups from the first connect.
  const part = { p, name, cur, prune: options.prune ?? false };
  steps.push(...planAnaGroups(part), ...planReferrals(part));
  const want = [...p.subsystems, ...keep.filter((s) => !wanted.has(s))];
  const wasLinked = new Set(linked);
  for (const s of want) {
    if (relinkAll || !wasLinked.has(s)) {
      steps.push({
        op: "link",
        path: nvmetPath.portLink(name, s),
        target: nvmetPath.subsystem(s),
      });
    }
  }
  return steps;
}
