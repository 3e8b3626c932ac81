/**
 * NVMe Qualified Names: the constants the target spec and connect share, so the two sides agree
 * on which NQN a Linux host can reach.
 */

/** The well-known discovery subsystem NQN (NVMe Base Specification 2.0, §4.5 "NVMe Qualified Names"). */
export const DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";

/**
 * NVMF_NQN_SIZE of include/linux/nvme.h (223). The kernel's connect refuses an NQN of this many
 * bytes or more: drivers/nvme/host/fabrics.c nvmf_parse_options, `nqnlen >= NVMF_NQN_SIZE` is
 * EINVAL ("needs to be < 223 bytes").
 */
export const NVMF_NQN_SIZE = 223;

/** The longest NQN, in bytes, a Linux host can connect to, and so the longest a target offers. */
export const NQN_MAX_BYTES = NVMF_NQN_SIZE - 1;

const ENCODER = new TextEncoder();

/**
 * The NQN's length in UTF-8 bytes when it is longer than NQN_MAX_BYTES, else undefined. A UTF-16
 * unit is at most 3 bytes of UTF-8, so only an NQN of more than 74 units is encoded to count them
 * (a spec names hundreds of hosts).
 */
export function nqnBytesOverLimit(nqn: string): number | undefined {
  if (nqn.length * 3 <= NQN_MAX_BYTES) return undefined;
  const bytes = ENCODER.encode(nqn).length;
  return bytes > NQN_MAX_BYTES ? bytes : undefined;
}
