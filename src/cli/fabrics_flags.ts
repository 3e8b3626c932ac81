/**
 * The fabrics flags, defined once with nvme-cli's names: the address and the host (the connect
 * option table's rows are connect_flags.ts). discover, connect, connect-all, doctor, probe, bench
 * and agent take them; fabrics_values.ts turns their values into ConnectOptions. Light on purpose:
 * a command's --help reads these and loads no fabrics code (no checks, address parser or FFI), nor
 * the connect-option table when it takes none of its rows.
 */
import type { OptionSpec } from "./command.ts";
import { DEFAULT_TRSVCID, TRANSPORTS } from "../fabrics/connect_options.ts";

/** Where the target is: -t -a -s. */
export const ADDRESS_FLAGS: Record<string, OptionSpec> = {
  transport: {
    type: "string",
    short: "t",
    value: "TRTYPE",
    description: "Transport: rdma (or tcp)",
    default: "rdma",
    choices: TRANSPORTS,
  },
  traddr: {
    type: "string",
    short: "a",
    value: "ADDR",
    description:
      "Target IP address (IPv4, or IPv6 with %iface when link-local); connect and discover also take a host name",
  },
  trsvcid: {
    type: "string",
    short: "s",
    value: "PORT",
    description: "Target port",
    default: DEFAULT_TRSVCID,
  },
};

/** Who we are: -q -I -w. */
export const HOST_FLAGS: Record<string, OptionSpec> = {
  hostnqn: {
    type: "string",
    short: "q",
    value: "NQN",
    description: "Host NQN (default: /etc/nvme/hostnqn, as nvme-cli)",
  },
  hostid: {
    type: "string",
    short: "I",
    value: "UUID",
    description: "Host ID paired with the host NQN (default: /etc/nvme/hostid)",
  },
  "host-traddr": {
    type: "string",
    short: "w",
    value: "ADDR",
    description: "Local IP address to connect from (selects the RDMA device)",
  },
};
