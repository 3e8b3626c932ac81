/**
 * An RDMA port's counters as sysfs shows them, without any library:
 * `<sysfs>/class/infiniband/DEV/ports/PORT/hw_counters/*` (the driver's own: rxe's
 * `rcvd_seq_err`, mlx5's `out_of_sequence` …) and `counters/*` (the InfiniBand PortCounters,
 * where the driver has them). doctor's loss check and the metrics read them here.
 */
import { exists, listDir, readText } from "../host/kfs.ts";

/** Counter values by name. */
export type Counters = Record<string, number>;

/** The longest counter file read (a decimal 64-bit number and a newline). */
const COUNTER_MAX_BYTES = 64;

/** `<sysfs>/class/infiniband/DEV/ports/PORT`. */
export function rdmaPortDir(sysfs: string, dev: string, port: number): string {
  return `${sysfs}/class/infiniband/${dev}/ports/${port}`;
}

/** Every numeric file of a counter directory by its name; undefined when the directory is absent. */
export function readCounterDir(dir: string): Counters | undefined {
  if (!exists(dir)) return undefined; // the driver has no such counters
  const out: Counters = {};
  for (const name of listDir(dir)) {
    try {
      const text = readText(`${dir}/${name}`, COUNTER_MAX_BYTES).trim();
      const v = Number(text);
      if (text !== "" && Number.isFinite(v)) out[name] = v;
    } catch { /* unreadable counter (some need a port that is up): leave it out */ }
  }
  return out;
}

/** `DEV/ports/PORT/hw_counters/*`, or undefined when absent. */
export function readHwCounters(sysfs: string, dev: string, port: number): Counters | undefined {
  return readCounterDir(`${rdmaPortDir(sysfs, dev, port)}/hw_counters`);
}

/** `DEV/ports/PORT/counters/*` (InfiniBand PortCounters), or undefined when absent. */
export function readPortCounters(sysfs: string, dev: string, port: number): Counters | undefined {
  return readCounterDir(`${rdmaPortDir(sysfs, dev, port)}/counters`);
}
