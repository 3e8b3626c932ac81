/**
 * The shape of what nvmeof exports to Prometheus: metric families of samples, as the collectors
 * build them and as the exposition (`nvmeof metrics`, the exporter) and `nvmeof top` read them.
 * The names and labels of every family are listed in docs/metrics.md: that list is the contract.
 */

/** A family's Prometheus type: nvmeof exports gauges and counters only. */
export type MetricType = "gauge" | "counter";

/** One sample: its labels (names as in docs/metrics.md) and its value. */
export interface Sample {
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** One metric family: `# HELP` and `# TYPE` once, then its samples. */
export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}
