/**
 * The unit of `nvmeof doctor`: one check, what it read, its verdict, and for anything not ok the
 * exact fix. Checks are small functions that read what they report; when they cannot read
 * something they say "could not determine" (status skip) and how to look by hand.
 */

/** ok: fine. warn: works but is a known trap. fail: names the cause of a failing connect. skip: not run or not readable. */
export type CheckStatus = "ok" | "warn" | "fail" | "skip";

/** One line of the checklist. */
export interface Check {
  /** Stable dotted name (`host.module.nvme_rdma`, `target.port.1.address`, `reach.listener`). */
  id: string;
  status: CheckStatus;
  /** What was read, in words (values quoted as seen). */
  seen: string;
  /** The command or file change that fixes it (absent when ok). */
  fix?: string;
  /** What a probe read, as data for `-o json` (spec field names); the text shows `seen` only. */
  found?: Record<string, unknown>;
}

/** Builds a check; `fix` is dropped for ok results. */
export function check(id: string, status: CheckStatus, seen: string, fix?: string): Check {
  return status === "ok" || fix === undefined ? { id, status, seen } : { id, status, seen, fix };
}

/** The whole report. */
export interface DoctorReport {
  role: "initiator" | "target" | "both";
  /** Why that role: --role, or whether -a is an address of this machine. */
  role_reason: string;
  traddr?: string;
  trsvcid: string;
  nqn?: string;
  checks: Check[];
  summary: Record<CheckStatus, number>;
  /** The first failing check's words: the most likely cause of a failing connect. */
  verdict: string;
}

/** Counts per status. */
export function summarize(checks: Check[]): Record<CheckStatus, number> {
  const s = { ok: 0, warn: 0, fail: 0, skip: 0 };
  for (const c of checks) s[c.status]++;
  return s;
}

/** The text of a report: one line per check, `fix:` under anything not ok, then the verdict. */
export function reportText(r: DoctorReport): string {
  const width = Math.max(...r.checks.map((c) => c.id.length), 10);
  const lines: string[] = [`role: ${r.role} (${r.role_reason})`];
  for (const c of r.checks) {
    lines.push(`${c.status.padEnd(4)}  ${c.id.padEnd(width)}  ${c.seen}`);
    if (c.fix) lines.push(`${" ".repeat(6 + width)}  fix: ${c.fix}`);
  }
  const s = r.summary;
  lines.push("", `${s.ok} ok, ${s.warn} warn, ${s.fail} fail, ${s.skip} skip`);
  lines.push(r.verdict);
  return lines.join("\n") + "\n";
}

/** The one-line conclusion. */
export function verdictOf(checks: Check[]): string {
  const fail = checks.find((c) => c.status === "fail");
  if (fail) return `cause: ${fail.seen}`;
  const warn = checks.find((c) => c.status === "warn");
  if (warn) return `no failing check; first warning: ${warn.seen}`;
  return "no problem found";
}
