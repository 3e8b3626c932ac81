/**
 * Plans one subsystem: its attributes, its namespaces (a namespace whose device, uuid or nguid
 * changes is disabled, changed, re-enabled) and its allowed hosts. Each part appends its steps to
 * the plan's one array, as remove.ts's do: a plan at scale makes thousands of steps, and arrays
 * made per part and spread into the next were a third of what planning allocated
 * (docs/benchmarks.md, pass 26).
 */
import { type LiveNamespace, type LiveSubsystem, nvmetPath } from "../../configfs/nvmet.ts";
import { derivedNamespaceUuid, derivedSerial, type ToDerive } from "../identity.ts";
import type { NamespaceSpec, SubsystemSpec } from "../spec.ts";
import { sameAttr, sameUuid, subsystemAttrs } from "./attrs.ts";
import type { PlanOptions } from "./options.ts";
import { removeNamespace } from "./remove.ts";
import { type Step, writeStep } from "./step.ts";

/** Appends the writes of attributes that differ; a new subsystem also gets its derived serial. */
function planSubsystemAttrs(
  steps: Step[],
  s: SubsystemSpec,
  cur: LiveSubsystem | undefined,
): void {
  const dir = nvmetPath.subsystem(s.nqn);
  const attrs = subsystemAttrs(s);
  // A new subsystem gets a serial that is the same on every boot (identity.ts); one that exists
  // keeps whatever serial it has unless the spec names one.
  if (!cur && attrs.serial === undefined) attrs.serial = derivedSerial(s.nqn);
  for (const k in attrs) {
    const old = cur?.attr[k];
    if (!sameAttr(k, old, attrs[k])) steps.push(writeStep(`${dir}/attr_${k}`, attrs[k], old));
  }
}

/** Appends the steps that make namespace `ns` of subsystem `subnqn` match (`was`: the live one). */
function planNamespace(
  steps: Step[],
  ns: NamespaceSpec,
  options: { subnqn: string; was?: LiveNamespace },
): void {
  const { subnqn, was } = options;
  const nsDir = nvmetPath.namespace(subnqn, was?.name ?? ns.nsid);
  const writes: Step[] = [];
  if (!was || was.device_path !== ns.device) {
    writes.push({
      op: "write",
      path: `${nsDir}/device_path`,
      value: ns.device,
      old: was?.device_path ?? "",
    });
  }
  // A new namespace gets a UUID that is the same on every boot unless the spec names one.
  const uuid = ns.uuid ?? (was ? undefined : derivedNamespaceUuid(subnqn, ns.nsid));
  if (uuid && !(was && sameUuid(was.device_uuid, uuid))) {
    writes.push(writeStep(`${nsDir}/device_uuid`, uuid, was?.device_uuid));
  }
  if (ns.nguid && !(was && sameUuid(was.device_nguid, ns.nguid))) {
    writes.push(writeStep(`${nsDir}/device_nguid`, ns.nguid, was?.device_nguid));
  }
  if (ns.buffered_io !== undefined) {
    const want = ns.buffered_io ? "1" : "0";
    const old = was?.buffered_io ?? "0";
    if (old !== want) {
      writes.push({ op: "write", path: `${nsDir}/buffered_io`, value: want, old });
    }
  }
  if (ns.resv_enable !== undefined) {
    const want = ns.resv_enable ? "1" : "0";
    // Absent on kernels before 6.13: written anyway, so that the refusal names the kernel needed.
    const old = was?.resv_enable ?? "0";
    if (old !== want) writes.push({ op: "write", path: `${nsDir}/resv_enable`, value: want, old });
  }
  const enabled = was?.enable ?? false;
  if (!was) steps.push({ op: "mkdir", path: nsDir });
  if (writes.length && enabled) {
    steps.push({ op: "write", path: `${nsDir}/enable`, value: "0", old: "1" });
  }
  steps.push(...writes);
  // The ANA group changes while the namespace serves I/O (hosts get an ANA change notice).
  if (ns.ana_grpid !== undefined) {
    const want = String(ns.ana_grpid);
    const old = was?.ana_grpid ?? "1";
    if (old !== want) steps.push({ op: "write", path: `${nsDir}/ana_grpid`, value: want, old });
  }
  const nowEnabled = enabled && writes.length === 0;
  if (ns.enabled && !nowEnabled) {
    steps.push({ op: "write", path: `${nsDir}/enable`, value: "1", old: "0" });
  } else if (!ns.enabled && nowEnabled) {
    steps.push({ op: "write", path: `${nsDir}/enable`, value: "0", old: "1" });
  }
}

/** The live namespace of none: a new subsystem has none. */
const NO_LIVE_NAMESPACE = (): LiveNamespace | undefined => undefined;

/**
 * The live namespace a spec namespace is, among CUR's: by the name nvmeof gives it (its NSID), else
 * by another directory with that NSID.
 */
function liveNamespaces(
  cur: LiveSubsystem | undefined,
): (ns: NamespaceSpec) => LiveNamespace | undefined {
  if (!cur?.namespaces.length) return NO_LIVE_NAMESPACE;
  const byName = new Map(cur.namespaces.map((n) => [n.name, n]));
  const byNsid = new Map<number, LiveNamespace>();
  for (const n of cur.namespaces) if (!byNsid.has(n.nsid)) byNsid.set(n.nsid, n);
  return (ns) => byName.get(String(ns.nsid)) ?? byNsid.get(ns.nsid);
}

/**
 * Adds to INTO what planSubsystem of S against CUR derives (planSubsystemAttrs' serial,
 * planNamespace's UUIDs), by the same rules: a new subsystem's serial unless the spec names one,
 * a new namespace's UUID unless the spec names one.
 */
export function subsystemToDerive(
  s: SubsystemSpec,
  cur: LiveSubsystem | undefined,
  into: ToDerive,
): void {
  if (!cur && subsystemAttrs(s).serial === undefined) into.serials.push(s.nqn);
  const liveOf = liveNamespaces(cur);
  for (const ns of s.namespaces) {
    if (ns.uuid === undefined && !liveOf(ns)) into.namespaces.push([s.nqn, ns.nsid]);
  }
}

/** Appends the steps of a subsystem's namespaces; with prune, live ones the spec lacks go. */
function planNamespaces(
  steps: Step[],
  s: SubsystemSpec,
  options: { cur?: LiveSubsystem; prune?: boolean },
): void {
  const { cur } = options;
  const matched = new Set<LiveNamespace>();
  const liveOf = liveNamespaces(cur);
  for (const ns of s.namespaces) {
    const was = liveOf(ns);
    if (was) matched.add(was);
    planNamespace(steps, ns, { subnqn: s.nqn, was });
  }
  if (options.prune && cur) {
    for (const ns of cur.namespaces) if (!matched.has(ns)) removeNamespace(steps, s.nqn, ns);
  }
}

/** Appends the steps of allow_any_host and the allowed-host links. */
function planAllowedHosts(
  steps: Step[],
  s: SubsystemSpec,
  options: { cur?: LiveSubsystem; prune?: boolean },
): void {
  const { cur } = options;
  const liveAllowed = cur?.allowed_hosts ?? [];
  const allowed = new Set(liveAllowed);
  const wanted = new Set(s.hosts);
  const anyWas = cur?.attr.allow_any_host === "1";
  // Links the spec does not list: pruned on request, and always when any host is to be allowed
  // (the kernel refuses allow_any_host while allowed_hosts is non-empty).
  for (const h of liveAllowed) {
    if (!wanted.has(h) && (options.prune || s.allow_any_host)) {
      steps.push({
        op: "unlink",
        path: nvmetPath.allowedHost(s.nqn, h),
        target: nvmetPath.host(h),
      });
    }
  }
  if (s.allow_any_host !== anyWas) {
    steps.push({
      op: "write",
      path: `${nvmetPath.subsystem(s.nqn)}/attr_allow_any_host`,
      value: s.allow_any_host ? "1" : "0",
      old: anyWas ? "1" : "0",
    });
  }
  for (const h of s.hosts) {
    if (!allowed.has(h)) {
      steps.push({
        op: "link",
        path: nvmetPath.allowedHost(s.nqn, h),
        target: nvmetPath.host(h),
      });
    }
  }
}

/** Appends to STEPS the steps that make subsystem `s` match; `cur` is the live one, if any. */
export function planSubsystem(
  steps: Step[],
  s: SubsystemSpec,
  options: Pick<PlanOptions, "prune"> & { cur?: LiveSubsystem },
): void {
  const { cur } = options;
  if (!cur) steps.push({ op: "mkdir", path: nvmetPath.subsystem(s.nqn) });
  planSubsystemAttrs(steps, s, cur);
  planNamespaces(steps, s, options);
  planAllowedHosts(steps, s, options);
}
