/** Validates the spec's `ports` section. */
import { hostPort } from "../../net/address.ts";
import { quote } from "../../errors.ts";
import { specEnum, specKeys, specRange } from "../schema.ts";
import type { PortSpec } from "../spec.ts";
import { isIpv4, isIpv6 } from "../values.ts";
import { validateAnaGroups, validateReferrals } from "./ana.ts";
import { isObj, type Obj, orList, type SpecContext } from "./context.ts";

/** A port being checked: the raw entry `p` at `path`, the result so far, its raw trtype. */
interface PortInput {
  cx: SpecContext;
  p: Obj;
  path: string;
  port: PortSpec;
  trtype: unknown;
}

/** The address of an rdma or tcp port: adrfam (derived from traddr when absent), traddr, trsvcid. */
function validateAddress({ cx, p, path, port, trtype }: PortInput): void {
  const traddr = cx.str(
    p.traddr,
    `${path}.traddr`,
    "the address to listen on, e.g. 192.168.100.10",
  );
  let adrfam = p.adrfam as string | undefined;
  if (adrfam === undefined && traddr) {
    adrfam = isIpv4(traddr) ? "ipv4" : isIpv6(traddr) ? "ipv6" : undefined;
  }
  if (adrfam !== undefined && !["ipv4", "ipv6", "ib", "fc"].includes(adrfam)) {
    cx.bad(
      `${path}.adrfam`,
      `${quote(adrfam)} is not an address family.`,
      "Use ipv4, ipv6, ib or fc.",
    );
  } else if (adrfam !== undefined && !specEnum("port", "adrfam").includes(adrfam)) {
    cx.bad(
      `${path}.adrfam`,
      `${trtype} ports take ipv4 or ipv6 addresses, not ${quote(adrfam)}.`,
      "Use ipv4 or ipv6.",
    );
  }
  if (traddr) {
    if (adrfam === "ipv4" && !isIpv4(traddr)) {
      cx.bad(
        `${path}.traddr`,
        `${quote(traddr)} is not an IPv4 address.`,
        "Write a dotted quad such as 192.168.100.10.",
      );
    } else if (adrfam === "ipv6" && !isIpv6(traddr)) {
      cx.bad(
        `${path}.traddr`,
        `${quote(traddr)} is not an IPv6 address.`,
        "Write an address such as fd00::10.",
      );
    } else if (adrfam === undefined) {
      cx.bad(
        `${path}.traddr`,
        `${quote(traddr)} is neither an IPv4 nor an IPv6 address.`,
        "Write an IP address, e.g. 192.168.100.10.",
      );
    }
  }
  port.traddr = traddr;
  port.adrfam = adrfam as PortSpec["adrfam"];
  const svc = cx.int(p.trsvcid ?? 4420, `${path}.trsvcid`, specRange("port", "trsvcid"));
  if (svc !== undefined) port.trsvcid = String(svc);
}

/** The subsystems a port exports: each defined by the spec, each once. */
function validatePortSubsystems(
  cx: SpecContext,
  p: Obj,
  path: string,
  subNqns: Set<string>,
): string[] {
  const subsystems: string[] = [];
  cx.list(p, "subsystems", `${path}.subsystems`).forEach((s, j) => {
    const n = cx.nqn(s, `${path}.subsystems[${j}]`);
    if (!n) return;
    if (!subNqns.has(n)) {
      cx.bad(
        `${path}.subsystems[${j}]`,
        `names subsystem ${quote(n)}, which the spec does not define.`,
        "Add it under subsystems, or remove it here.",
      );
    }
    subsystems.push(n);
  });
  cx.dupes(
    subsystems,
    (j) => `${path}.subsystems[${j}]`,
    "subsystem",
    "List each subsystem once.",
  );
  return subsystems;
}

/** The transport parameters: inline data and queue sizes, PI, TCP security, treq. */
function validatePortParams({ cx, p, path, port, trtype }: PortInput): void {
  for (const k of ["inline_data_size", "max_queue_size"] as const) {
    if (p[k] !== undefined) port[k] = cx.int(p[k], `${path}.${k}`, specRange("port", k));
  }
  if (p.pi_enable !== undefined) port.pi_enable = cx.bool(p, "pi_enable", path, false);
  const tsasValues = specEnum("port", "tsas");
  const tsas = cx.optStr(p, "tsas", path, orList(tsasValues));
  if (tsas !== undefined) {
    if (trtype !== "tcp") {
      cx.bad(
        `${path}.tsas`,
        `is only for tcp ports (the kernel refuses it for ${quote(trtype)}).`,
        "Remove it.",
      );
    } else if (!tsasValues.includes(tsas)) {
      cx.bad(
        `${path}.tsas`,
        `${quote(tsas)} is not a TCP security type.`,
        `Use ${orList(tsasValues)}.`,
      );
    } else port.tsas = tsas;
  }
  const treq = cx.optStr(p, "treq", path, "a treq value");
  if (treq !== undefined) {
    const treqs = specEnum("port", "treq");
    if (treqs.includes(treq)) port.treq = treq;
    else {cx.bad(
        `${path}.treq`,
        `${quote(treq)} is not a treq value.`,
        `Use ${orList(treqs, true)}.`,
      );}
  }
}

/** One port; `subNqns` are the subsystems the spec defines. */
export function validatePort(
  cx: SpecContext,
  p: unknown,
  path: string,
  subNqns: Set<string>,
): PortSpec | undefined {
  if (!isObj(p)) {
    return void cx.bad(path, "must be a mapping with id, trtype and traddr.", "Write '- id: 1'.");
  }
  cx.keys(p, path, specKeys("port"));
  const id = cx.int(p.id, `${path}.id`, specRange("port", "id"));
  const trtype = p.trtype === undefined ? "rdma" : p.trtype;
  const trtypes = specEnum("port", "trtype");
  if (!trtypes.includes(trtype as string)) {
    cx.bad(
      `${path}.trtype`,
      `${quote(trtype)} is not a transport nvmeof configures (${orList(trtypes)}).`,
      `Use ${orList(trtypes)}.`,
    );
  }
  // Only a string goes into the result: an invalid value is reported above, never converted.
  const port: PortSpec = {
    id: id ?? -1,
    trtype: (typeof trtype === "string" ? trtype : "") as PortSpec["trtype"],
    subsystems: [],
  };
  const input = { cx, p, path, port, trtype };
  if (trtype !== "loop") validateAddress(input);
  else {
    for (const k of ["traddr", "trsvcid", "adrfam"]) {
      if (p[k] === undefined) continue;
      cx.bad(
        `${path}.${k}`,
        "is set on a loop port, which has no address.",
        "Remove adrfam, traddr and trsvcid from the loop port.",
      );
    }
  }
  port.subsystems = validatePortSubsystems(cx, p, path, subNqns);
  validatePortParams(input);
  const groups = validateAnaGroups(cx, p, path);
  if (groups.length) port.ana_groups = groups;
  const referrals = validateReferrals(cx, p, path);
  if (referrals.length) port.referrals = referrals;
  return port;
}

/** The `ports` list: each id once, each address once. */
export function validatePorts(cx: SpecContext, raw: Obj, subNqns: Set<string>): PortSpec[] {
  const ports: PortSpec[] = [];
  cx.list(raw, "ports", "ports").forEach((p, i) => {
    const port = validatePort(cx, p, `ports[${i}]`, subNqns);
    if (port) ports.push(port);
  });
  cx.dupes(
    ports.map((p) => p.id >= 0 ? p.id : undefined),
    (i) => `ports[${i}].id`,
    "port id",
    "Give each port its own id.",
  );
  cx.dupes(
    ports.map((p) => p.traddr ? `${p.trtype} ${hostPort(p.traddr, String(p.trsvcid))}` : undefined),
    (i) => `ports[${i}].traddr`,
    "address (the kernel refuses two listeners on one address: EADDRINUSE)",
    "Use one port for that address and list all its subsystems there.",
  );
  return ports;
}
