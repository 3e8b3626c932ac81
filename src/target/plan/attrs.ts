/** The configfs attribute values a spec asks for, and when a live value already says the same. */
import { SUBSYSTEM_ATTRS } from "../../configfs/nvmet.ts";
import type { PortSpec, SubsystemSpec } from "../spec.ts";
import { normalizeNguid } from "../values.ts";

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
    if (typeof v === "boolean") a[k] = v ? "1" : "0";
    else if (v !== undefined) a[k] = String(v);
  }
  return a;
}

/** Whether two UUIDs (or NGUIDs) are the same whatever their case and separators. */
export function sameUuid(a: string, b: string): boolean {
  return normalizeNguid(a) === normalizeNguid(b);
}

/** Whether a live attribute value already says what the spec asks. */
export function sameAttr(name: string, live: string | undefined, want: string): boolean {
  if (live === undefined) return false;
  if (name === "ieee_oui") return parseInt(live, 16) === parseInt(want, 16);
  // nvmet pads a serial shorter than 20 characters with spaces when it shows it.
  if (name === "serial") return live.trimEnd() === want.trimEnd();
  if (name === "addr_tsas" && want === "none") return live === "none" || live === "";
  return live === want;
}
