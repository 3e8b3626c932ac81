/**
 * Validates what a port says about its paths beyond its address: its ANA groups (id, state) and
 * its referrals (other discovery controllers its discovery log lists), and that every ANA group a
 * namespace names exists on every port its subsystem is exported on (group 1 always does).
 */
import { DEFAULT_ANA_GROUP } from "../../configfs/nvmet.ts";
import { quote } from "../../errors.ts";
import { specEnum, specKeys, specRange } from "../schema.ts";
import type { AnaGroupSpec, PortSpec, ReferralSpec, SubsystemSpec } from "../spec.ts";
import { isIpv4, isIpv6, nearestAnaState } from "../values.ts";
import { isObj, orList, type SpecContext } from "./context.ts";

/** The ANA groups of the port at `path`: ids 1..128, each once, with a known state. */
export function validateAnaGroups(cx: SpecContext, p: Record<string, unknown>, path: string) {
  const groups: AnaGroupSpec[] = [];
  const states = specEnum("ana_group", "state");
  cx.list(p, "ana_groups", `${path}.ana_groups`).forEach((g, j) => {
    const gpath = `${path}.ana_groups[${j}]`;
    if (!isObj(g)) {
      return void cx.bad(
        gpath,
        "must be a mapping with id and state.",
        "Write '- id: 2' with 'state: optimized' under it.",
      );
    }
    cx.keys(g, gpath, specKeys("ana_group"));
    const id = cx.int(g.id, `${gpath}.id`, specRange("ana_group", "id"));
    const state = g.state ?? "optimized";
    if (typeof state !== "string" || !states.includes(state)) {
      const near = typeof state === "string" ? nearestAnaState(state) : undefined;
      return void cx.bad(
        `${gpath}.state`,
        `${quote(state)} is not an ANA state${near ? ` (did you mean '${near}'?)` : ""}.`,
        `Use ${orList(states)}.`,
      );
    }
    if (id !== undefined) groups.push({ id, state: state as AnaGroupSpec["state"] });
  });
  cx.dupes(
    groups.map((g) => g.id),
    (j) => `${path}.ana_groups[${j}].id`,
    "ANA group",
    "List each group once per port.",
  );
  return groups;
}

/** The referrals of the port at `path`: a transport address each, names unique. */
export function validateReferrals(cx: SpecContext, p: Record<string, unknown>, path: string) {
  const referrals: ReferralSpec[] = [];
  const trtypes = specEnum("referral", "trtype");
  cx.list(p, "referrals", `${path}.referrals`).forEach((r, j) => {
    const rpath = `${path}.referrals[${j}]`;
    if (!isObj(r)) {
      return void cx.bad(
        rpath,
        "must be a mapping with trtype, traddr and trsvcid.",
        "Write '- trtype: rdma' with 'traddr: …' and 'trsvcid: …' under it.",
      );
    }
    cx.keys(r, rpath, specKeys("referral"));
    const trtype = r.trtype ?? "rdma";
    if (typeof trtype !== "string" || !trtypes.includes(trtype)) {
      cx.bad(
        `${rpath}.trtype`,
        `${quote(trtype)} is not a transport a referral can name.`,
        `Use ${orList(trtypes)}.`,
      );
    }
    const traddr = cx.str(r.traddr, `${rpath}.traddr`, "the discovery controller's address");
    const families = specEnum("referral", "adrfam");
    let adrfam = r.adrfam as string | undefined;
    if (adrfam === undefined && traddr) {
      adrfam = isIpv4(traddr) ? "ipv4" : isIpv6(traddr) ? "ipv6" : undefined;
      if (adrfam === undefined) {
        cx.bad(
          `${rpath}.adrfam`,
          `is missing, and ${quote(traddr)} is not an IP address to derive it from.`,
          `Give adrfam: ${orList(families)}.`,
        );
      }
    } else if (adrfam !== undefined && !families.includes(adrfam)) {
      cx.bad(
        `${rpath}.adrfam`,
        `${quote(adrfam)} is not an address family.`,
        `Use ${orList(families)}.`,
      );
      adrfam = undefined;
    }
    if (traddr && adrfam === "ipv4" && !isIpv4(traddr)) {
      cx.bad(`${rpath}.traddr`, `${quote(traddr)} is not an IPv4 address.`, "Write a dotted quad.");
    } else if (traddr && adrfam === "ipv6" && !isIpv6(traddr)) {
      cx.bad(
        `${rpath}.traddr`,
        `${quote(traddr)} is not an IPv6 address.`,
        "Write an IPv6 address.",
      );
    }
    let trsvcid: string | undefined;
    if (trtype === "fc") {
      if (r.trsvcid !== undefined && r.trsvcid !== "none") {
        cx.bad(`${rpath}.trsvcid`, "is set on an fc referral, which has none.", "Remove it.");
      }
    } else {
      const svc = cx.int(r.trsvcid, `${rpath}.trsvcid`, specRange("referral", "trsvcid"));
      if (svc !== undefined) trsvcid = String(svc);
    }
    const ref: ReferralSpec = {
      name: "",
      trtype: typeof trtype === "string" ? trtype : "",
      traddr: traddr ?? "",
      enabled: cx.bool(r, "enabled", rpath, true),
    };
    if (adrfam) ref.adrfam = adrfam;
    if (trsvcid) ref.trsvcid = trsvcid;
    if (r.portid !== undefined) {
      ref.portid = cx.int(r.portid, `${rpath}.portid`, specRange("referral", "portid"));
    }
    const treqs = specEnum("referral", "treq");
    const treq = cx.optStr(r, "treq", rpath, orList(treqs, true));
    if (treq !== undefined) {
      if (treqs.includes(treq)) ref.treq = treq;
      else {cx.bad(
          `${rpath}.treq`,
          `${quote(treq)} is not a treq value.`,
          `Use ${orList(treqs, true)}.`,
        );}
    }
    // The directory's name: given, or made from the address (the same spec, the same name).
    const name = r.name === undefined
      ? `${ref.trtype}-${ref.traddr}${trsvcid ? `-${trsvcid}` : ""}`
      : cx.pathStr(r, "name", rpath, "a name for the referral");
    if (name !== undefined && name.includes("/")) {
      cx.bad(
        `${rpath}.name`,
        `${quote(name)} contains '/'.`,
        "Name it without '/' (it names a configfs directory).",
      );
    } else if (name !== undefined) ref.name = name;
    referrals.push(ref);
  });
  cx.dupes(
    referrals.map((r) => r.name || undefined),
    (j) => `${path}.referrals[${j}].name`,
    "referral name",
    "Give each referral of a port its own name.",
  );
  return referrals;
}

/**
 * Every ANA group a namespace names must exist on every spec port its subsystem is exported on:
 * the kernel takes any group id, and a host would see the namespace in a group the port does not
 * report. Group 1 exists on every port.
 */
export function validateAnaReferences(
  cx: SpecContext,
  subsystems: SubsystemSpec[],
  ports: PortSpec[],
): void {
  subsystems.forEach((s, i) => {
    s.namespaces.forEach((n, j) => {
      const g = n.ana_grpid;
      if (g === undefined || g === DEFAULT_ANA_GROUP) return;
      ports.forEach((p, k) => {
        if (!p.subsystems.includes(s.nqn)) return;
        if ((p.ana_groups ?? []).some((a) => a.id === g)) return;
        cx.bad(
          `subsystems[${i}].namespaces[${j}].ana_grpid`,
          `names ANA group ${g}, which port ${p.id} (ports[${k}]) does not have, though ` +
            `${quote(s.nqn)} is exported there.`,
          `Add '- id: ${g}' to ports[${k}].ana_groups, or use a group every port of the ` +
            "subsystem has (group 1 always exists).",
        );
      });
    });
  });
}
