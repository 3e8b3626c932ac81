/**
 * The plan: the difference between the live nvmet tree and a spec, as ordered configfs steps.
 * Creation runs hosts → subsystems → namespaces → ports → links; removal runs in reverse. Only
 * what differs is touched, so hosts of unrelated subsystems see no disruption:
 * - a namespace whose device/uuid/nguid changes is disabled, changed, re-enabled;
 * - a port whose address changes is unlinked from its subsystems, changed, relinked;
 * - objects and links the spec does not mention stay unless `prune` is set.
 */
import {
  type LiveNamespace,
  type LivePort,
  type LiveSubsystem,
  type LiveTree,
  nvmetPath,
  PORT_ATTRS,
  SUBSYSTEM_ATTRS,
} from "../configfs/nvmet.ts";
import { FailureError, quote } from "../errors.ts";
import { loadKeyFile } from "../fabrics/options.ts";
import { derivedNamespaceUuid, derivedSerial } from "./identity.ts";
import { normalizeNguid, type PortSpec, type SubsystemSpec, type TargetSpec } from "./spec.ts";

/** One configfs operation. Paths are relative to the nvmet root. */
export type Step =
  | { op: "mkdir"; path: string }
  | {
    op: "rmdir";
    path: string;
    /** Attribute writes that recreate the object if the run is rolled back. */
    restore?: Array<[string, string]>;
  }
  | {
    op: "write";
    path: string;
    value: string;
    /** The value before, written back on rollback (absent: nothing to restore). */
    old?: string;
    /** The value is a secret: never shown. */
    secret?: boolean;
  }
  | { op: "link"; path: string; target: string }
  | { op: "unlink"; path: string; target: string };

/** What planning needs besides the tree and the spec. */
export interface PlanOptions {
  /** Remove objects and links the spec does not mention. */
  prune?: boolean;
  /** Reads a secret for a host attribute (DH-HMAC-CHAP key files); injected for tests. */
  readSecret?: (file: string) => string;
  /** Reads the live value of a secret attribute, to compare without showing it. */
  readLiveSecret?: (path: string) => string | undefined;
}

/** Port attribute values a spec asks for, by file name (only those it sets). */
export function portAttrs(p: PortSpec): Record<string, string> {
  const a: Record<string, string> = { addr_trtype: p.trtype };
  if (p.adrfam) a.addr_adrfam = p.adrfam;
  if (p.traddr !== undefined) a.addr_traddr = p.traddr;
  if (p.trsvcid !== undefined) a.addr_trsvcid = p.trsvcid;
  if (p.treq !== undefined) a.addr_treq = p.treq;
  if (p.tsas !== undefined) a.addr_tsas = p.tsas;
  if (p.inline_data_size !== undefined) a.param_inline_data_size = String(p.inline_data_size);
  if (p.max_queue_size !== undefined) a.param_max_queue_size = String(p.max_queue_size);
  if (p.pi_enable !== undefined) a.param_pi_enable = p.pi_enable ? "1" : "0";
  return a;
}

/** Subsystem attribute values a spec asks for, by name after `attr_`. */
export function subsystemAttrs(s: SubsystemSpec): Record<string, string> {
  const a: Record<string, string> = {};
  for (const k of SUBSYSTEM_ATTRS) {
    const v = s[k];
    if (v !== undefined) a[k] = String(v);
  }
  return a;
}

function sameUuid(a: string, b: string): boolean {
  return normalizeNguid(a) === normalizeNguid(b);
}

/** Whether a live attribute value already says what the spec asks. */
function sameAttr(name: string, live: string | undefined, want: string): boolean {
  if (live === undefined) return false;
  if (name === "ieee_oui") return parseInt(live, 16) === parseInt(want, 16);
  // nvmet pads a serial shorter than 20 characters with spaces when it shows it.
  if (name === "serial") return live.trimEnd() === want.trimEnd();
  if (name === "addr_tsas" && want === "none") return live === "none" || live === "";
  return live === want;
}

function namespaceRestore(ns: LiveNamespace): Array<[string, string]> {
  const r: Array<[string, string]> = [];
  if (ns.device_path) r.push(["device_path", ns.device_path]);
  if (ns.device_uuid) r.push(["device_uuid", ns.device_uuid]);
  if (ns.device_nguid) r.push(["device_nguid", ns.device_nguid]);
  return r;
}

function subsystemRestore(s: LiveSubsystem): Array<[string, string]> {
  const r: Array<[string, string]> = [];
  for (const k of SUBSYSTEM_ATTRS) if (s.attr[k] !== undefined) r.push([`attr_${k}`, s.attr[k]]);
  r.push(["attr_allow_any_host", s.attr.allow_any_host ?? "0"]);
  return r;
}

function portRestore(p: LivePort): Array<[string, string]> {
  return PORT_ATTRS.filter((a) => p.attr[a] !== undefined && p.attr[a] !== "")
    .map((a) => [a, p.attr[a]] as [string, string]);
}

/** Steps that remove a namespace (disable first: configfs refuses nothing, but I/O stops cleanly). */
function removeNamespace(steps: Step[], subnqn: string, ns: LiveNamespace): void {
  const dir = nvmetPath.namespace(subnqn, ns.name);
  if (ns.enable) steps.push({ op: "write", path: `${dir}/enable`, value: "0", old: "1" });
  steps.push({ op: "rmdir", path: dir, restore: namespaceRestore(ns) });
}

/** Steps that remove a subsystem (its port links must be gone already). */
function removeSubsystem(steps: Step[], s: LiveSubsystem): void {
  for (const ns of s.namespaces) removeNamespace(steps, s.nqn, ns);
  for (const h of s.allowed_hosts) {
    steps.push({ op: "unlink", path: nvmetPath.allowedHost(s.nqn, h), target: nvmetPath.host(h) });
  }
  steps.push({ op: "rmdir", path: nvmetPath.subsystem(s.nqn), restore: subsystemRestore(s) });
}

/** Steps that remove a port and its links. */
function removePort(steps: Step[], p: LivePort): void {
  for (const s of p.subsystems) {
    steps.push({
      op: "unlink",
      path: nvmetPath.portLink(p.name, s),
      target: nvmetPath.subsystem(s),
    });
  }
  steps.push({ op: "rmdir", path: nvmetPath.port(p.name), restore: portRestore(p) });
}

/** Computes the steps that make `live` match `spec`. An empty list means nothing to do. */
export function planUp(live: LiveTree, spec: TargetSpec, options: PlanOptions = {}): Step[] {
  const steps: Step[] = [];
  const liveHosts = new Set(live.hosts.map((h) => h.nqn));
  const liveSubs = new Map(live.subsystems.map((s) => [s.nqn, s]));
  // A spec's port or namespace is the live one with its number, by the name nvmeof gives it
  // (`2`) if there is one, else by another the kernel reads the same (`0x2`).
  const livePort = (id: number) =>
    live.ports.find((p) => p.name === String(id)) ?? live.ports.find((p) => p.id === id);
  const matchedPorts = new Set<LivePort>();

  // 1. hosts: every host the spec names, including those only listed under a subsystem.
  const wantHosts = new Map<string, TargetSpec["hosts"][number]>();
  for (const h of spec.hosts) wantHosts.set(h.nqn, h);
  for (const s of spec.subsystems) {
    for (const h of s.hosts) if (!wantHosts.has(h)) wantHosts.set(h, { nqn: h });
  }
  for (const h of wantHosts.values()) {
    const dir = nvmetPath.host(h.nqn);
    const exists = liveHosts.has(h.nqn);
    if (!exists) steps.push({ op: "mkdir", path: dir });
    const secrets: Array<[string, string | undefined]> = [
      ["dhchap_key", h.dhchap_key_file],
      ["dhchap_ctrl_key", h.dhchap_ctrl_key_file],
    ];
    for (const [attr, file] of secrets) {
      if (!file) continue;
      const value = (options.readSecret ?? readHostKeyFile)(file);
      const path = `${dir}/${attr}`;
      const old = exists ? options.readLiveSecret?.(path) : undefined;
      if (old !== value) steps.push({ op: "write", path, value, old: old ?? "", secret: true });
    }
    for (
      const [attr, value] of [["dhchap_hash", h.dhchap_hash], ["dhchap_dhgroup", h.dhchap_dhgroup]]
    ) {
      if (!value) continue;
      const path = `${dir}/${attr}`;
      const old = exists ? options.readLiveSecret?.(path) : undefined;
      if (old !== value) {
        steps.push({ op: "write", path, value, ...(old !== undefined ? { old } : {}) });
      }
    }
  }

  // 2. subsystems, their namespaces and allowed hosts.
  for (const s of spec.subsystems) {
    const dir = nvmetPath.subsystem(s.nqn);
    const cur = liveSubs.get(s.nqn);
    const matchedNs = new Set<LiveNamespace>();
    if (!cur) steps.push({ op: "mkdir", path: dir });
    const attrs = subsystemAttrs(s);
    // A new subsystem gets a serial that is the same on every boot (identity.ts); one that exists
    // keeps whatever serial it has unless the spec names one.
    if (!cur && attrs.serial === undefined) attrs.serial = derivedSerial(s.nqn);
    for (const [k, v] of Object.entries(attrs)) {
      const old = cur?.attr[k];
      if (!sameAttr(k, old, v)) {
        steps.push({
          op: "write",
          path: `${dir}/attr_${k}`,
          value: v,
          ...(old !== undefined ? { old } : {}),
        });
      }
    }
    for (const ns of s.namespaces) {
      const was = cur?.namespaces.find((n) => n.name === String(ns.nsid)) ??
        cur?.namespaces.find((n) => n.nsid === ns.nsid);
      if (was) matchedNs.add(was);
      const nsDir = nvmetPath.namespace(s.nqn, was?.name ?? ns.nsid);
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
      const uuid = ns.uuid ?? (was ? undefined : derivedNamespaceUuid(s.nqn, ns.nsid));
      if (uuid && !(was && sameUuid(was.device_uuid, uuid))) {
        writes.push({
          op: "write",
          path: `${nsDir}/device_uuid`,
          value: uuid,
          ...(was ? { old: was.device_uuid } : {}),
        });
      }
      if (ns.nguid && !(was && sameUuid(was.device_nguid, ns.nguid))) {
        writes.push({
          op: "write",
          path: `${nsDir}/device_nguid`,
          value: ns.nguid,
          ...(was ? { old: was.device_nguid } : {}),
        });
      }
      if (ns.buffered_io !== undefined) {
        const want = ns.buffered_io ? "1" : "0";
        const old = was?.buffered_io ?? "0";
        if (old !== want) {
          writes.push({ op: "write", path: `${nsDir}/buffered_io`, value: want, old });
        }
      }
      const enabled = was?.enable ?? false;
      if (!was) steps.push({ op: "mkdir", path: nsDir });
      if (writes.length && enabled) {
        steps.push({ op: "write", path: `${nsDir}/enable`, value: "0", old: "1" });
      }
      steps.push(...writes);
      const nowEnabled = enabled && writes.length === 0;
      if (ns.enabled && !nowEnabled) {
        steps.push({ op: "write", path: `${nsDir}/enable`, value: "1", old: "0" });
      } else if (!ns.enabled && nowEnabled) {
        steps.push({ op: "write", path: `${nsDir}/enable`, value: "0", old: "1" });
      }
    }
    if (options.prune && cur) {
      for (const ns of cur.namespaces) if (!matchedNs.has(ns)) removeNamespace(steps, s.nqn, ns);
    }
    const liveAllowed = cur?.allowed_hosts ?? [];
    const anyWas = cur?.attr.allow_any_host === "1";
    // Links the spec does not list: pruned on request, and always when any host is to be allowed
    // (the kernel refuses allow_any_host while allowed_hosts is non-empty).
    for (const h of liveAllowed) {
      if (!s.hosts.includes(h) && (options.prune || s.allow_any_host)) {
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
        path: `${dir}/attr_allow_any_host`,
        value: s.allow_any_host ? "1" : "0",
        old: anyWas ? "1" : "0",
      });
    }
    for (const h of s.hosts) {
      if (!liveAllowed.includes(h)) {
        steps.push({
          op: "link",
          path: nvmetPath.allowedHost(s.nqn, h),
          target: nvmetPath.host(h),
        });
      }
    }
  }

  // 3. ports and their links. A port's attributes can change only while it has no links.
  for (const p of spec.ports) {
    const cur = livePort(p.id);
    if (cur) matchedPorts.add(cur);
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
    if (writes.length && linked.length) {
      for (const s of linked) {
        steps.push({
          op: "unlink",
          path: nvmetPath.portLink(name, s),
          target: nvmetPath.subsystem(s),
        });
      }
    } else {
      for (const s of linked) {
        if (!keep.includes(s)) {
          steps.push({
            op: "unlink",
            path: nvmetPath.portLink(name, s),
            target: nvmetPath.subsystem(s),
          });
        }
      }
    }
    steps.push(...writes);
    const relinkAll = writes.length > 0;
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
  }

  // 4. prune what the spec does not mention, in removal order: ports → subsystems → hosts.
  if (options.prune) {
    const wantSubs = new Set(spec.subsystems.map((s) => s.nqn));
    for (const p of live.ports) if (!matchedPorts.has(p)) removePort(steps, p);
    for (const s of live.subsystems) {
      if (wantSubs.has(s.nqn)) continue;
      // Its links from spec ports went in step 3; links from other ports went with them.
      removeSubsystem(steps, s);
    }
    for (const h of live.hosts) {
      if (!wantHosts.has(h.nqn)) steps.push({ op: "rmdir", path: nvmetPath.host(h.nqn) });
    }
  }
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
          steps.push({
            op: "unlink",
            path: nvmetPath.portLink(p.name, s),
            target: nvmetPath.subsystem(s),
          });
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

/** Reads a DH-HMAC-CHAP key file, checked as the spec's validation checks it. */
export function readHostKeyFile(file: string): string {
  return loadKeyFile(file, "Cannot use a DH-HMAC-CHAP key");
}

/** A step as one line for people (secrets masked). */
export function describeStep(s: Step): string {
  switch (s.op) {
    case "mkdir":
      return `mkdir  ${s.path}`;
    case "rmdir":
      return `rmdir  ${s.path}`;
    case "write": {
      const v = s.secret ? "(secret)" : `'${s.value}'`;
      const was = s.secret || s.old === undefined ? "" : `  (was '${s.old}')`;
      return `write  ${s.path} = ${v}${was}`;
    }
    case "link":
      return `link   ${s.path} -> ${s.target}`;
    case "unlink":
      return `unlink ${s.path}`;
  }
}

/** A step as JSON-safe data (secrets masked). */
export function stepData(s: Step): Record<string, unknown> {
  if (s.op === "write") {
    return s.secret
      ? { op: s.op, path: s.path, value: "(secret)", secret: true }
      : { op: s.op, path: s.path, value: s.value, ...(s.old !== undefined ? { old: s.old } : {}) };
  }
  if (s.op === "link" || s.op === "unlink") return { op: s.op, path: s.path, target: s.target };
  return { op: s.op, path: s.path };
}
