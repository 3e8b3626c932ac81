/**
 * How a collector builds its families: declare each family once (name, type, help), add samples,
 * take the ones that got any. A family without samples is left out of the exposition, as
 * docs/metrics.md says of a source absent on this machine.
 */
import type { MetricFamily, MetricType } from "./family.ts";

/** Families being built, in the order they were declared. */
export class FamilySet {
  #families = new Map<string, MetricFamily>();

  /** Declares a family (once per name) and returns a function adding a sample to it. */
  family(
    name: string,
    type: MetricType,
    help: string,
  ): (labels: Record<string, string>, value: number) => void {
    let f = this.#families.get(name);
    if (!f) {
      f = { name, type, help, samples: [] };
      this.#families.set(name, f);
    }
    const samples = f.samples;
    return (labels, value) => samples.push({ labels, value });
  }

  /** One-hot gauges: `state` 1 for the current state, 0 for every other known one. */
  oneHot(
    add: (labels: Record<string, string>, value: number) => void,
    labels: Record<string, string>,
    states: readonly string[],
    current: string,
  ): void {
    const all = states.includes(current) ? states : [...states, current];
    for (const state of all) add({ ...labels, state }, state === current ? 1 : 0);
  }

  /** The families with at least one sample. */
  families(): MetricFamily[] {
    return [...this.#families.values()].filter((f) => f.samples.length > 0);
  }
}
