/** Validates the spec's `subsystems` section (namespaces in namespaces.ts). */
import { quote } from "../../errors.ts";
import { specKeys, specRange } from "../schema.ts";
import type { HostSpec, SubsystemSpec } from "../spec.ts";
import { nqnProblem } from "../values.ts";
import { isObj, type Obj, type SpecContext } from "./context.ts";
import { validateNamespaces } from "./namespaces.ts";

/** The identity attributes: serial, model, firmware, version, IEEE OUI. */
function validateIdentity(cx: SpecContext, s: Obj, path: string, sub: SubsystemSpec): void {
  const serial = cx.printable(s, "serial", path, 20);
  if (serial) sub.serial = serial;
  const model = cx.printable(s, "model", path, 40);
  if (model) sub.model = model;
  const fw = cx.printable(s, "firmware", path, 8);
  if (fw) sub.firmware = fw;
  const version = cx.optStr(s, "version", path, "an NVMe version such as 1.3");
  if (version !== undefined) {
    if (/^\d+\.\d+(\.\d+)?$/.test(version)) sub.version = version;
    else {cx.bad(
        `${path}.version`,
        `${quote(version)} is not an NVMe version.`,
        "Write X.Y or X.Y.Z, e.g. 1.3 or 2.0.",
      );}
  }
  if (s.ieee_oui !== undefined) {
    const raw = s.ieee_oui;
    const v = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw : "";
    const n = /^(0x)?[0-9a-fA-F]{1,6}$/.test(v) ? parseInt(v.replace(/^0x/, ""), 16) : NaN;
    if (Number.isNaN(n)) {
      cx.bad(`${path}.ieee_oui`, `${quote(raw)} is not a 24-bit hex OUI.`, "Write it as 0xABCDEF.");
    } else sub.ieee_oui = `0x${n.toString(16).padStart(6, "0")}`;
  }
}

/** The controller id range, cntlid_min ≤ cntlid_max. */
function validateCntlidRange(cx: SpecContext, s: Obj, path: string, sub: SubsystemSpec): void {
  for (const k of ["cntlid_min", "cntlid_max"] as const) {
    if (s[k] !== undefined) sub[k] = cx.int(s[k], `${path}.${k}`, specRange("subsystem", k));
  }
  if (
    sub.cntlid_min !== undefined && sub.cntlid_max !== undefined &&
    sub.cntlid_min > sub.cntlid_max
  ) {
    cx.bad(
      `${path}.cntlid_min`,
      `${sub.cntlid_min} is above cntlid_max ${sub.cntlid_max}.`,
      "Make cntlid_min ≤ cntlid_max.",
    );
  }
}

/** One subsystem: NQN, allowed hosts, identity, controller ids, namespaces. */
export function validateSubsystem(
  cx: SpecContext,
  s: unknown,
  path: string,
): SubsystemSpec | undefined {
  if (!isObj(s)) {
    return void cx.bad(path, "must be a mapping with nqn and namespaces.", "Write '- nqn: …'.");
  }
  cx.keys(s, path, specKeys("subsystem"));
  const sub: SubsystemSpec = {
    nqn: cx.nqn(s.nqn, `${path}.nqn`) ?? "",
    allow_any_host: cx.bool(s, "allow_any_host", path, false),
    hosts: [],
    namespaces: [],
  };
  const hosts = cx.list(s, "hosts", `${path}.hosts`);
  for (let j = 0; j < hosts.length; j++) {
    const h = hosts[j];
    // A good NQN, as nearly every one of a long list is, needs no path for a message.
    const n = typeof h === "string" && nqnProblem(h) === undefined
      ? h
      : cx.nqn(h, `${path}.hosts[${j}]`);
    if (n) sub.hosts.push(n);
  }
  cx.dupes(sub.hosts, (j) => `${path}.hosts[${j}]`, "host", "List each host once.");
  if (sub.allow_any_host && sub.hosts.length) {
    cx.bad(
      `${path}.allow_any_host`,
      "is true while hosts are listed; the kernel refuses both at once (EINVAL).",
      "Either remove the hosts list or set allow_any_host: false.",
    );
  }
  validateIdentity(cx, s, path, sub);
  validateCntlidRange(cx, s, path, sub);
  if (s.qid_max !== undefined) {
    sub.qid_max = cx.int(s.qid_max, `${path}.qid_max`, specRange("subsystem", "qid_max"));
  }
  if (s.pi_enable !== undefined) sub.pi_enable = cx.bool(s, "pi_enable", path, false);
  sub.namespaces = validateNamespaces(cx, s, path);
  return sub;
}

/** The `subsystems` list: each NQN once and none that is also a host's. */
export function validateSubsystems(cx: SpecContext, raw: Obj, hosts: HostSpec[]): SubsystemSpec[] {
  const subsystems: SubsystemSpec[] = [];
  cx.list(raw, "subsystems", "subsystems").forEach((s, i) => {
    const sub = validateSubsystem(cx, s, `subsystems[${i}]`);
    if (sub) subsystems.push(sub);
  });
  cx.dupes(
    subsystems.map((s) => s.nqn || undefined),
    (i) => `subsystems[${i}].nqn`,
    "subsystem NQN",
    "Give each subsystem its own NQN.",
  );
  const hostNqns = new Set(hosts.map((h) => h.nqn));
  subsystems.forEach((s, i) => {
    if (hostNqns.has(s.nqn)) {
      cx.bad(
        `subsystems[${i}].nqn`,
        `${quote(s.nqn)} is also a host NQN.`,
        "Use different NQNs for hosts and subsystems.",
      );
    }
  });
  return subsystems;
}
