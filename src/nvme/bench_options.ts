/**
 * What the flags of `nvmeof bench` offer and show: the --rw modes and the --poll-ms default.
 * Apart from the I/O engine (bench.ts) so that `nvmeof bench --help` loads no verbs.
 */

export const RW_MODES = ["randread", "read", "randwrite", "write", "verify"] as const;
export type RwMode = typeof RW_MODES[number];

/** Whether the mode writes (and so destroys data). */
export function writes(rw: RwMode): boolean {
  return rw === "randwrite" || rw === "write" || rw === "verify";
}

/** The default of `--poll-ms`: poll through a whole I/O under an emulated CPU. */
export const DEFAULT_POLL_MS = 10;
