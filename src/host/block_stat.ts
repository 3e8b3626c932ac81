/**
 * A block device's I/O statistics: `<sysfs>/class/block/<dev>/stat` (the same file as
 * `/sys/block/<dev>/stat`, partitions included), fields as Documentation/block/stat.rst lists
 * them: read I/Os, merges, sectors, ticks (ms); the same for writes; in flight; io_ticks;
 * time_in_queue; then discards and flushes on newer kernels. A sector is 512 bytes whatever the
 * device's block size.
 */
import { readAttributeIf } from "./kfs.ts";

/** The unit of the sector counts in `stat`. */
export const STAT_SECTOR_BYTES = 512;

/** The fields of `stat` that nvmeof uses. */
export interface BlockStat {
  readIos: number;
  readSectors: number;
  /** Milliseconds spent reading. */
  readTicksMs: number;
  writeIos: number;
  writeSectors: number;
  writeTicksMs: number;
  inFlight: number;
}

/** The fields before in_flight; an older or truncated line has fewer and is refused. */
const STAT_MIN_FIELDS = 9;

/** Parses the text of a `stat` file; undefined when it is not one. */
export function parseBlockStat(text: string): BlockStat | undefined {
  const f = text.trim().split(/\s+/).map(Number);
  if (f.length < STAT_MIN_FIELDS || f.slice(0, STAT_MIN_FIELDS).some((n) => !Number.isFinite(n))) {
    return undefined;
  }
  return {
    readIos: f[0],
    readSectors: f[2],
    readTicksMs: f[3],
    writeIos: f[4],
    writeSectors: f[6],
    writeTicksMs: f[7],
    inFlight: f[8],
  };
}

/** The statistics of block device `dev` below the sysfs root; undefined when it has none. */
export function readBlockStat(sysfs: string, dev: string): BlockStat | undefined {
  try {
    const text = readAttributeIf(`${sysfs}/class/block/${dev}/stat`);
    return text === undefined ? undefined : parseBlockStat(text);
  } catch {
    return undefined;
  }
}
