/**
 * Plans one port and its links. A port's attributes can change only while it has no links, so a
 * port whose attributes change is unlinked from its subsystems, changed, relinked.
 */
import { type LivePort, nvmetPath } from "../../configfs/nvmet.ts";
import type { PortSpec } from "../spec.ts";
import { portAttrs, sameAttr } from "./attrs.ts";
import { planAnaGroups, planReferrals } from "./ana.ts";
import type { PlanOptions } from "./options.ts";
import { unlinkPort } from "./remove.ts";
import type { Step } from "./step.ts";

/** Steps that make port `p` match; `cur` is the live port with its number, if any. */
export function planPort(
  p: PortSpec,
  options: Pick<PlanOptions, "prune"> & { cur?: LivePort },
): Step[] {
  const { cur } = options;
  const steps: Step[] = [];
  const name = cur?.name ?? p.id;
  const dir = nvmetPath.port(name);
  if (!cur) steps.push({ op: "mkdir", path: dir });
  const writes: Step[] = [];
  for (const [f, v] of Object.entries(portAttrs(p))) {
    const old = cur?.attr[f];
    if (!sameAttr(f, old, v)) {
      writes.push({ op: "write", path: `${dir}/${f}`, value: v, old: old ?? "" });
    }
  }
  const linked = cur?.subsystems ?? [];
  const keep = linked.filter((s) => p.subsystems.includes(s) || !options.prune);
  const relinkAll = writes.length > 0;
  for (const s of linked) {
    if (relinkAll || !keep.includes(s)) steps.push(unlinkPort(name, s));
  }
  steps.push(...writes);
  // ANA groups and referrals change on an enabled port: before the links, so that a port that
  // comes up reports its groups from the first connect.
  steps.push(...planAnaGroups(p, name, cur, options.prune ?? false));
  steps.push(...planReferrals(p, name, cur, options.prune ?? false));
  const want = [...p.subsystems, ...keep.filter((s) => !p.subsystems.includes(s))];
  for (const s of want) {
    if (relinkAll || !linked.includes(s)) {
      steps.push({
        op: "link",
        path: nvmetPath.portLink(name, s),
        target: nvmetPath.subsystem(s),
      });
    }
  }
  return steps;
}
