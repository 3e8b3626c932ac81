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
