/**
 * The fabrics flags, defined once with nvme-cli's names: the address, the host and every row of
 * the connect-option table. discover, connect, connect-all, doctor, probe and bench take subsets of
 * these; fabrics_values.ts turns their values into ConnectOptions. Light on purpose: a command's
 * --help reads these and loads no fabrics code (no checks, address parser or FFI).
 */
import type { OptionSpec } from "./command.ts";
import { CONNECT_OPTIONS, type ConnectOptionRow } from "../fabrics/connect_table.ts";
import { DEFAULT_CTRL_LOSS_TMO, DEFAULT_TRSVCID, TRANSPORTS } from "../fabrics/connect_options.ts";

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

/** The flag of one table row. */
function rowFlag(r: ConnectOptionRow): OptionSpec {
  return {
    type: r.kind.type === "flag" ? "boolean" : "string",
    ...(r.short ? { short: r.short } : {}),
    ...(r.value ? { value: r.value } : {}),
    description: r.description,
    ...(r.field === "ctrlLossTmo" ? { default: String(DEFAULT_CTRL_LOSS_TMO) } : {}),
  };
}

/** nvme-cli's flags that take a secret on the command line: refused, with the file form shown. */
const INLINE_SECRET_FLAGS: Record<string, OptionSpec> = {
  "dhchap-secret": {
    type: "string",
    short: "S",
    value: "SECRET",
    description: "Refused: a secret in argv is readable by every user; use --dhchap-secret-file",
  },
  "dhchap-ctrl-secret": {
    type: "string",
    value: "SECRET",
    description:
      "Refused: a secret in argv is readable by every user; use -C/--dhchap-ctrl-secret-file",
  },
};

/**
 * How the I/O controller behaves: every row of the connect-option table (-i -W -P -Q -k -c -l
 * -F -T -D -g -G -f -C, the secret files, TLS), each under nvme-cli's name and any alias.
 */
export const TUNING_FLAGS: Record<string, OptionSpec> = Object.fromEntries([
  ...CONNECT_OPTIONS.flatMap((r) => [
    [r.flag, rowFlag(r)] as const,
    ...(r.aliases ?? []).map((a) => {
      const { short: _short, ...spec } = rowFlag(r);
      return [a, { ...spec, description: `Same as --${r.flag}` }] as const;
    }),
  ]),
  ...Object.entries(INLINE_SECRET_FLAGS),
]);

/** The flags of `nvmeof connect`. */
export const CONNECT_FLAGS: Record<string, OptionSpec> = {
  ...ADDRESS_FLAGS,
  nqn: { type: "string", short: "n", value: "NQN", description: "Subsystem NQN to connect to" },
  ...HOST_FLAGS,
  ...TUNING_FLAGS,
  "dry-run": {
    type: "boolean",
    description: "Print the option string that would be written, and write nothing",
  },
};
