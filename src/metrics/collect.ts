/**
 * PLACEHOLDER, replaced at merge by the collectors' collect.ts: the agreed signature of
 * `collectFamilies` with a body that exports only `nvmeof_build_info`, so that `nvmeof top` can be
 * built and run before the host, block, rdma and target collectors land. Drop this file's commit
 * when merging theirs.
 */
import { VERSION } from "../version.ts";
import type { MetricFamily } from "./family.ts";

/** Where and how long the collectors read. */
export interface CollectOptions {
  /** Roots, defaulting to hostPaths() (src/host_paths.ts) and /sys/kernel/config/nvmet. */
  sysfs?: string;
  proc?: string;
  dev?: string;
  configfs?: string;
  /** Each collector's own time limit. */
  timeoutMs?: number;
}

/**
 * Runs every collector (host, block, rdma, target) once; a failed or late one yields its
 * nvmeof_scrape_collector_success 0 and no families; never throws for a collector's failure.
 * (Placeholder: no collector yet, only `nvmeof_build_info`.)
 */
export function collectFamilies(_o: CollectOptions = {}): Promise<MetricFamily[]> {
  return Promise.resolve([{
    name: "nvmeof_build_info",
    help: "The version of nvmeof, as a label; the value is 1.",
    type: "gauge",
    samples: [{ labels: { version: VERSION }, value: 1 }],
  }]);
}
