/**
 * What `connect`, its several-paths, -J and --saved runs, and `connect-all` share: the options
 * from the flags, progress notes, the report lines, the connections file.
 */
import type { OptionValues, RunContext } from "../cli/command.ts";
import type { ConnectResult } from "../fabrics/connect.ts";
import { hostFromFlags, resolvedAddressFromFlags, tuningFromFlags } from "../fabrics/flags.ts";
import { resolveHostIdentity } from "../fabrics/host_identity.ts";
import {
  checkKernelOptions,
  checkTransportOptions,
  type ConnectOptions,
  queueSettingsText,
  runningKernelRelease,
} from "../fabrics/options.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { connectionsFile, persistPaths } from "../persist/etc_paths.ts";
import {
  loadConnections,
  mergeConnections,
  saveConnections,
  type SavedConnection,
} from "../persist/connections.ts";
import { humanSize } from "../output/render.ts";

/** Builds the complete, validated options from the fabrics flags (host identity resolved). */
export async function connectOptionsFromFlags(
  given: OptionValues,
  paths: FabricsPaths,
  nqn: string,
): Promise<ConnectOptions> {
  const values = { ...given };
  if (Array.isArray(values.traddr)) values.traddr = values.traddr[0];
  const address = await resolvedAddressFromFlags(values);
  const host = hostFromFlags(values);
  const tuning = await tuningFromFlags(values);
  const id = await resolveHostIdentity(host, paths);
  const opts: ConnectOptions = {
    ...address,
    nqn,
    ...(host.hostTraddr ? { hostTraddr: host.hostTraddr } : {}),
    hostnqn: id.hostnqn,
    hostid: id.hostid,
    ...tuning,
  };
  checkTransportOptions(opts);
  checkKernelOptions(opts, runningKernelRelease());
  return opts;
}

export function progressOf(ctx: RunContext): ((line: string) => void) | undefined {
  return Deno.stderr.isTerminal() || ctx.global.verbose ? ctx.note : undefined;
}

export function addr(t: string, a: string, s: string): string {
  return `${t} ${a.includes(":") ? `[${a}]` : a}:${s}`;
}

export function connectText(r: ConnectResult): string {
  const head = r.existing
    ? `already connected: ${r.device} to '${r.subsysnqn}' at ${
      addr(r.transport, r.traddr, r.trsvcid)
    } ` +
      `(state ${r.state})`
    : `connected ${r.device} to '${r.subsysnqn}' at ${addr(r.transport, r.traddr, r.trsvcid)} ` +
      `(cntlid ${r.cntlid}, ready in ${r.timing_ms?.ready ?? "?"} ms)`;
  const lines = r.namespaces.map((n) => `${n.device}  nsid ${n.nsid}  ${humanSize(n.size)}`);
  if (r.namespaces.length === 0) lines.push("(the subsystem exports no namespaces)");
  if (r.namespace_queues) lines.push(`namespace queues: ${queueSettingsText(r.namespace_queues)}`);
  return [head, ...lines].join("\n");
}

export function savedFile(): string {
  return connectionsFile(persistPaths());
}
/** Adds entries to the connections file; returns its path and a line saying what changed. */
export async function persistEntries(
  add: SavedConnection[],
): Promise<{ file: string; text: string; change: "saved" | "updated" | "unchanged" }> {
  const file = savedFile();
  const merged = mergeConnections(await loadConnections(file), add);
  if (merged.added.length || merged.replaced.length) await saveConnections(file, merged.list);
  const what = merged.added.length
    ? "saved"
    : merged.replaced.length
    ? "updated the saved entry"
    : "already saved";
  const change = merged.added.length ? "saved" : merged.replaced.length ? "updated" : "unchanged";
  return {
    file,
    text: `${what} in ${file} (reconnected at boot by nvmeof-autoconnect.service)`,
    change,
  };
}
/** One row of connect-all's report. */
export interface ConnectAllRow {
  subnqn: string;
  trtype: string;
  traddr: string;
  trsvcid: string;
  status: "connected" | "already connected" | "skipped" | "failed";
  device?: string;
  namespaces?: string[];
  reason?: string;
  /** Set when a referral led here: the discovery controller whose log listed this entry. */
  referral?: ReferralAddress;
}
/** A discovery controller reached through a referral entry. */
export interface ReferralAddress {
  trtype: string;
  traddr: string;
  trsvcid: string;
}
export function connectAllText(d: { records: ConnectAllRow[] }): string {
  if (d.records.length === 0) return "the discovery log lists no NVM subsystems for this host";
  return d.records.map((r) => {
    const where = `'${r.subnqn}' at ${addr(r.trtype, r.traddr, r.trsvcid)}` +
      (r.referral
        ? ` (through the referral to ${
          addr(r.referral.trtype, r.referral.traddr, r.referral.trsvcid)
        })`
        : "");
    if (r.status === "connected" || r.status === "already connected") {
      return `${r.status}: ${r.device} to ${where}` +
        (r.namespaces?.length ? `\n  ${r.namespaces.join(" ")}` : "");
    }
    return `${r.status}: ${where}: ${r.reason}`;
  }).join("\n");
}
