/** Plans the hosts: every host the spec names, with its DH-HMAC-CHAP settings. */
import { type LiveTree, nvmetPath } from "../../configfs/nvmet.ts";
import { loadKeyFile } from "../../host/key_file.ts";
import type { HostSpec, TargetSpec } from "../spec.ts";
import type { PlanOptions } from "./options.ts";
import { type Step, writeStep } from "./step.ts";

/** Reads a DH-HMAC-CHAP key file, checked as the spec's validation checks it. */
export function readHostKeyFile(file: string): string {
  return loadKeyFile(file, "Cannot use a DH-HMAC-CHAP key");
}

/** Every host the spec names, including those only listed under a subsystem, by NQN. */
export function wantedHosts(spec: TargetSpec): Map<string, HostSpec> {
  const want = new Map<string, HostSpec>();
  for (const h of spec.hosts) want.set(h.nqn, h);
  for (const s of spec.subsystems) {
    for (const h of s.hosts) if (!want.has(h)) want.set(h, { nqn: h });
  }
  return want;
}

/**
 * Appends to STEPS the steps that create one host (unless it EXISTS), or bring its settings to
 * what the spec says.
 */
function planHost(steps: Step[], h: HostSpec, options: PlanOptions, exists: boolean): void {
  const dir = nvmetPath.host(h.nqn);
  if (!exists) steps.push({ op: "mkdir", path: dir });
  // Most hosts are a name and nothing more.
  if (!h.dhchap_key_file && !h.dhchap_ctrl_key_file && !h.dhchap_hash && !h.dhchap_dhgroup) {
    return;
  }
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
    if (old !== value) steps.push(writeStep(path, value, old));
  }
}

/** Steps for every host the spec names. */
export function planHosts(
  live: LiveTree,
  want: Map<string, HostSpec>,
  options: PlanOptions,
): Step[] {
  const liveHosts = new Set(live.hosts.map((h) => h.nqn));
  const steps: Step[] = [];
  for (const h of want.values()) planHost(steps, h, options, liveHosts.has(h.nqn));
  return steps;
}
