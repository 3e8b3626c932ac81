/**
 * The flags of the connect-option table's rows, with nvme-cli's names: what connect, connect-all
 * and agent take beside the address and host flags (fabrics_flags.ts). Light on purpose, as those.
 */
import type { OptionSpec } from "./command.ts";
import { CONNECT_OPTIONS, type ConnectOptionRow } from "../fabrics/connect_table.ts";
import { DEFAULT_CTRL_LOSS_TMO } from "../fabrics/connect_options.ts";
import { ADDRESS_FLAGS, HOST_FLAGS } from "./fabrics_flags.ts";

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
