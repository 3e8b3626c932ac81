/**
 * `nvmeof rdma …`: the RDMA layer itself, over librdmacm and libibverbs through FFI.
 */
import type { CommandDetails } from "../cli/command.ts";

export const rdmaCommand: CommandDetails = {
  description:
    "Checks the RDMA fabric NVMe over RDMA runs on, with no helper program: list devices, " +
    "ping a peer over an RDMA-CM connection (RDMA WRITE, READ or SEND), trace the queue pair " +
    "through its states, talk to rdma-core's rping, and measure bandwidth.",
  examples: [
    "nvmeof rdma devices",
    "nvmeof rdma ping --server -a 10.77.0.1 &  nvmeof rdma ping -a 10.77.0.1 --trace",
    "nvmeof rdma bw -a 10.77.0.1 --size 65536 --depth 128",
  ],
};
