/**
 * Steps that remove live objects. `target down` and `target up --prune` share them; the applier
 * reads what each removed directory holds just before removing it, to make it again on rollback.
 */
import {
  DEFAULT_ANA_GROUP,
  type LiveNamespace,
  type LivePort,
  type LiveSubsystem,
  nvmetPath,
} from "../../configfs/nvmet.ts";
import { removeAnaGroup, removeReferral } from "./ana.ts";
import type { Step } from "./step.ts";

/** Steps that remove a namespace (disable first: configfs refuses nothing, but I/O stops cleanly). */
export function removeNamespace(steps: Step[], subnqn: string, ns: LiveNamespace): void {
  const dir = nvmetPath.namespace(subnqn, ns.name);
  if (ns.enable) steps.push({ op: "write", path: `${dir}/enable`, value: "0", old: "1" });
  steps.push({ op: "rmdir", path: dir });
}

/** Steps that remove a subsystem (its port links must be gone already). */
export function removeSubsystem(steps: Step[], s: LiveSubsystem): void {
  for (const ns of s.namespaces) removeNamespace(steps, s.nqn, ns);
  for (const h of s.allowed_hosts) {
    steps.push({ op: "unlink", path: nvmetPath.allowedHost(s.nqn, h), target: nvmetPath.host(h) });
  }
  steps.push({ op: "rmdir", path: nvmetPath.subsystem(s.nqn) });
}

/** The step that removes the link of port `port` to subsystem `subnqn`. */
export function unlinkPort(port: string | number, subnqn: string): Step {
  return {
    op: "unlink",
    path: nvmetPath.portLink(port, subnqn),
    target: nvmetPath.subsystem(subnqn),
  };
}

/** Steps that remove a port and its links. */
export function removePort(steps: Step[], p: LivePort): void {
  for (const s of p.subsystems) steps.push(unlinkPort(p.name, s));
  // The kernel refuses to remove a port that still has referrals or groups of its own.
  for (const r of p.referrals ?? []) removeReferral(steps, p.name, r);
  for (const g of p.ana_groups ?? []) {
    if (g.id !== DEFAULT_ANA_GROUP) removeAnaGroup(steps, p.name, g);
  }
  steps.push({ op: "rmdir", path: nvmetPath.port(p.name) });
}
