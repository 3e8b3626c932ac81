/**
 * The one-line form of `target up` (one subsystem, one namespace, one port): its spec, validated
 * as a file spec is, with each problem named by the flag that gave the value.
 */
import type { LiveTree } from "../configfs/nvmet.ts";
import { SpecError, type TargetSpec, validateSpec } from "./spec.ts";
import { isIpv4, isIpv6 } from "./values.ts";

/** What the one-line form says (flag values as given). */
export interface OneLineInput {
  nqn: unknown;
  device: string;
  nsid?: string;
  trtype: string;
  traddr?: string;
  trsvcid?: string;
  portId?: string;
  /** Hosts allowed to connect; empty with allowAnyHost. */
  hosts: string[];
  allowAnyHost: boolean;
}

/** Where a spec path of the one-line spec came from. */
const ONE_LINE_FLAGS: Record<string, string> = {
  "subsystems[0].nqn": "--nqn",
  "subsystems[0].namespaces[0].device": "--device",
  "subsystems[0].namespaces[0].nsid": "--nsid",
  "ports[0].traddr": "--traddr",
  "ports[0].trsvcid": "--trsvcid",
  "ports[0].trtype": "--trtype",
  "ports[0].adrfam": "--traddr",
  "ports[0].id": "--port-id",
};

/** The port id: the given one, else the live port with the same address, else the lowest free. */
function portIdFor(input: OneLineInput, live: LiveTree): number {
  if (input.portId !== undefined) return Number(input.portId);
  const { trtype, traddr, trsvcid } = input;
  const same = live.ports.find((p) =>
    p.attr.addr_trtype === trtype &&
    (trtype === "loop" || (p.attr.addr_traddr === traddr && p.attr.addr_trsvcid === trsvcid))
  );
  if (same) return same.id;
  const used = new Set(live.ports.map((p) => p.id));
  let id = 1;
  while (used.has(id)) id++;
  return id;
}

/** Builds the spec of the one-line form, reusing a live port that has the same address. */
export function oneLineSpec(input: OneLineInput, live: LiveTree): TargetSpec {
  const { trtype, traddr, trsvcid } = input;
  const port: Record<string, unknown> = { id: portIdFor(input, live), trtype };
  if (traddr !== undefined) {
    port.traddr = traddr;
    if (isIpv6(traddr) && !isIpv4(traddr)) port.adrfam = "ipv6";
  }
  if (trsvcid !== undefined && trtype !== "loop") port.trsvcid = trsvcid;
  port.subsystems = [input.nqn];
  const raw = {
    hosts: [],
    subsystems: [{
      nqn: input.nqn,
      allow_any_host: input.allowAnyHost,
      hosts: input.hosts,
      namespaces: [{ nsid: input.nsid ?? 1, device: input.device }],
    }],
    ports: [port],
  };
  try {
    return validateSpec(raw, { source: "from the command line" });
  } catch (err) {
    if (err instanceof SpecError) {
      throw new SpecError(
        "from the command line",
        err.problems.map((p) => ({
          ...p,
          path: ONE_LINE_FLAGS[p.path] ??
            p.path.replace(/^subsystems\[0\]\.hosts\[\d+\]$/, "--allow-host"),
        })),
      );
    }
    throw err;
  }
}
