/**
 * What the agent says: one decision per line (text, or a JSON object per line), and only when
 * something changed: an entry's or an endpoint's state is said once per change, not once per
 * scan or per retry. The back-off of the retries is here too.
 */
import type { ConnectAllRow } from "../initiator/connect_report.ts";
import { addr } from "../initiator/connect_report.ts";
import type { ScanReason } from "./scheduler.ts";

/** One decision of the agent (JSON keys follow the discovery log and sysfs). */
export interface AgentDecision {
  /** ISO 8601, when it was decided. */
  time: string;
  action:
    | "following"
    | "unreachable"
    | "connected"
    | "already-connected"
    | "failed"
    | "skipped"
    | "left"
    | "kept"
    | "disconnected"
    | "stopped";
  /** The discovery endpoint followed (`rdma 10.0.0.2:4420`). */
  endpoint?: string;
  /** Why the log was read. */
  reason?: ScanReason;
  /** The discovery log's generation counter when it was read. */
  genctr?: number;
  /** The discovery controller that holds the endpoint (`nvme0`). */
  discovery_controller?: string;
  /** Whether that discovery controller was made by the agent (false: one it found). */
  made?: boolean;
  /** For an endpoint learnt from a referral: the endpoint whose log listed it. */
  referred_by?: string;
  subnqn?: string;
  trtype?: string;
  traddr?: string;
  trsvcid?: string;
  device?: string;
  namespaces?: string[];
  /** When an entry came through a referral: the discovery controller that listed it. */
  referral?: string;
  /** Why it failed or was skipped, or why the agent stopped. */
  error?: string;
  /** For kept: what uses the subsystem's namespaces ("nvme1n1 mounted at /mnt"). */
  users?: string[];
  /** For failed: when the next attempt is, in seconds. */
  retry_in_s?: number;
}

const BECAUSE: Record<ScanReason, string> = {
  start: "the agent started",
  referral: "a followed log referred to it",
  "log-changed": "the log changed",
  rediscover: "the discovery controller reconnected",
  lost: "the discovery controller was lost",
  removed: "a controller it connected was removed",
  overflow: "uevents were lost",
  periodic: "of the periodic re-read",
  retry: "of a retry",
};

/** "because the log changed (generation 5)" */
function because(d: AgentDecision): string {
  if (!d.reason) return "";
  return ` because ${BECAUSE[d.reason]}` +
    (d.genctr !== undefined ? ` (generation ${d.genctr})` : "");
}

/** A decision as one line of text. */
export function decisionText(d: AgentDecision): string {
  const via = d.traddr ? addr(d.trtype ?? "", d.traddr, d.trsvcid ?? "") : "";
  const ref = d.referral ? ` (through the referral to ${d.referral})` : "";
  switch (d.action) {
    case "following":
      return `following ${d.endpoint} through ${d.discovery_controller} (` +
        `${d.made ? "a persistent discovery controller it made" : "an existing one"}` +
        `${d.referred_by ? `; a referral of ${d.referred_by}` : ""})`;
    case "unreachable":
      return `cannot follow ${d.endpoint}: ${d.error}` +
        (d.retry_in_s !== undefined ? ` (retrying, next in ${d.retry_in_s} s)` : "");
    case "connected":
      return `connected ${d.subnqn} via ${via} as ${d.device}` +
        (d.namespaces?.length ? ` (${d.namespaces.join(" ")})` : "") + ref + because(d);
    case "already-connected":
      return `already connected: ${d.subnqn} via ${via} as ${d.device}${ref}`;
    case "failed":
      return `cannot connect ${d.subnqn} via ${via}${ref}: ${d.error}` +
        (d.retry_in_s !== undefined ? ` (retrying, next in ${d.retry_in_s} s)` : "");
    case "skipped":
      return `skipped ${d.subnqn} via ${via}${ref}: ${d.error}`;
    case "left":
      return `left ${d.subnqn} via ${via} as ${d.device}: it is no longer in the log` +
        ` (--on-removal leave)${because(d)}`;
    case "kept":
      return `kept ${d.subnqn} via ${via} as ${d.device}: it is no longer in the log, but ` +
        `${d.users?.join(", ")}${because(d)}`;
    case "disconnected":
      return `disconnected ${d.subnqn} via ${via} (${d.device}): it is no longer in the log ` +
        `and nothing uses it${because(d)}`;
    case "stopped":
      return `stopped: ${d.error}`;
  }
}

/** Remembers the last state said of each thing, so that each change is said once. */
export class StateLog {
  #last = new Map<string, string>();

  /** Records STATE for KEY; true when it differs from the last one recorded. */
  changed(key: string, state: string): boolean {
    if (this.#last.get(key) === state) return false;
    this.#last.set(key, state);
    return true;
  }

  /** Forgets KEY (it will be said again). */
  forget(key: string): void {
    this.#last.delete(key);
  }
}

/** The retry delay after `failures` failures in a row: 1 s doubling to MAX_MS. */
export function backoffMs(failures: number, maxMs = 60_000): number {
  return Math.min(maxMs, 1000 * 2 ** Math.max(0, failures - 1));
}

/** The key of a subsystem's path as a log entry gives it: NQN, transport, address, service id. */
export function pathKey(p: { subnqn: string; trtype: string; traddr: string; trsvcid: string }) {
  return `${p.subnqn} ${p.trtype} ${p.traddr}:${p.trsvcid}`;
}

/** The key of a log entry's path (and the referral it came through). */
function rowKey(r: ConnectAllRow): string {
  const ref = r.referral ? ` ${r.referral.trtype} ${r.referral.traddr}:${r.referral.trsvcid}` : "";
  return `${pathKey(r)}${ref}`;
}

/**
 * The decisions of one scan's connect rows: a new connection always (it is an action); an
 * existing one, a failure or a skip only when that entry's state changed since it was last said.
 */
export function rowDecisions(
  rows: ConnectAllRow[],
  said: StateLog,
  scan: { endpoint: string; reason: ScanReason; genctr: number; retryInS?: number; now?: Date },
): AgentDecision[] {
  const out: AgentDecision[] = [];
  const time = (scan.now ?? new Date()).toISOString();
  for (const r of rows) {
    const state = r.status === "connected" || r.status === "already connected"
      ? `connected ${r.device}`
      : `${r.status} ${r.reason}`;
    const fresh = said.changed(rowKey(r), state);
    if (r.status !== "connected" && !fresh) continue;
    const d: AgentDecision = {
      time,
      action: r.status === "already connected" ? "already-connected" : r.status,
      endpoint: scan.endpoint,
      reason: scan.reason,
      genctr: scan.genctr,
      subnqn: r.subnqn,
      trtype: r.trtype,
      traddr: r.traddr,
      trsvcid: r.trsvcid,
    };
    if (r.device) d.device = r.device;
    if (r.namespaces) d.namespaces = r.namespaces;
    if (r.referral) d.referral = addr(r.referral.trtype, r.referral.traddr, r.referral.trsvcid);
    if (r.reason) d.error = r.reason;
    if (r.status === "failed" && scan.retryInS !== undefined) d.retry_in_s = scan.retryInS;
    out.push(d);
  }
  return out;
}
