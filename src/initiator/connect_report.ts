/**
 * What the connect runs report: the lines that describe a controller, the rows of connect-all
 * (and of -J and --saved) and their text.
 */
import { NvmeofError } from "../errors.ts";
import { hostPort } from "../net/address.ts";
import type { ConnectResult } from "../fabrics/connect.ts";
import { queueSettingsText } from "../fabrics/option_string.ts";
import { humanSize } from "../output/render.ts";
import type { ConnectReport } from "./connect_io.ts";

/** "rdma 10.0.0.2:4420", an IPv6 address in brackets. */
export function addr(t: string, a: string, s: string): string {
  return `${t} ${hostPort(a, s)}`;
}

/** A connected (or found) controller and its namespaces, one line each. */
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

/** The rows of connect-all (and of -J, --saved), one line each. */
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

/** Where a connect-all row points: the subsystem and the address it was reached at. */
export type RowAddress = Pick<ConnectAllRow, "subnqn" | "trtype" | "traddr" | "trsvcid">;

/** A connect-all row for a controller connected (or found) at WHERE. */
export function connectedRow(where: RowAddress, r: ConnectResult): ConnectAllRow {
  return {
    ...where,
    status: r.existing ? "already connected" : "connected",
    device: r.device,
    namespaces: r.namespaces.map((n) => n.device),
  };
}

/** A connect-all row for WHERE that failed, and why. */
export function failedRow(where: RowAddress, reason: string): ConnectAllRow {
  return { ...where, status: "failed", reason };
}

/** The first line of an error and of its hint. */
export function failureReason(err: unknown): string {
  return err instanceof NvmeofError
    ? err.message + (err.hint ? " " + err.hint.split("\n")[0] : "")
    : (err as Error).message;
}

/** Whether any row failed. */
function anyFailed(rows: Array<{ status: string }>): boolean {
  return rows.some((r) => r.status === "failed");
}

/** The report of a run over connect-all rows: their text, failed when any row failed. */
export function rowsReport<T extends { records: ConnectAllRow[] }>(
  data: T,
  text: (data: T) => string = connectAllText,
): ConnectReport<T> {
  return { data, text: () => text(data), failed: anyFailed(data.records) };
}
