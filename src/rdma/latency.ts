/**
 * Latency statistics of the data-path tools (`rdma ping`, `bench`): one summary of a run's
 * samples, in the samples' own unit; each tool names and rounds the figures for its output.
 */

/** Order statistics of a set of samples. */
export interface LatencySummary {
  min: number;
  median: number;
  /** Nearest rank. */
  p99: number;
  max: number;
  mean: number;
}

/** min / median / p99 (nearest rank) / max / mean of `samples` (sorted in place); 0s when empty. */
export function summarizeLatency(samples: Float64Array): LatencySummary {
  const n = samples.length;
  if (n === 0) return { min: 0, median: 0, p99: 0, max: 0, mean: 0 };
  samples.sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += samples[i];
  const rank = (p: number) => samples[Math.max(0, Math.ceil(p * n) - 1)];
  return {
    min: samples[0],
    median: rank(0.5),
    p99: rank(0.99),
    max: samples[n - 1],
    mean: sum / n,
  };
}
