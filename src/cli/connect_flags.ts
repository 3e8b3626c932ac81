/**
 * The flags of the connect-option table's rows (TUNING_FLAGS, with nvme-cli's names: connect,
 * connect-all and agent take them beside the address and host flags of fabrics_flags.ts), and
 * those of `connect` and `connect-all` beyond: several -a, -J/-O, the HA profile, --persist,
 * --saved. Light on purpose, as fabrics_flags.ts: their reading is connect_values.ts, which the
 * commands import when they run.
 */
import {
  CONNECT_OPTIONS,
  type ConnectOptionRow,
  haProfile,
  rowOf,
  type TableField,
} from "../fabrics/connect_table.ts";
import { DEFAULT_CTRL_LOSS_TMO } from "../fabrics/connect_options.ts";
import { DEFAULT_RETRY_FOR } from "../persist/units.ts";
import type { OptionSpec } from "./command.ts";
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

/** "keep_alive_tmo=1 reconnect_delay=1 …": the HA profile as option-string tokens. */
export function haText(): string {
  return Object.entries(haProfile()).map(([f, v]) => `${rowOf(f as TableField).token}=${v}`)
    .join(" ");
}

/** The flags of `nvmeof connect`: the fabrics flags, several -a, -J/-O, the HA profile, --saved. */
export const CONNECT_COMMAND_FLAGS: Record<string, OptionSpec> = {
  ...CONNECT_FLAGS,
  config: {
    type: "string",
    short: "J",
    value: "FILE",
    description:
      "Connect every I/O controller of this libnvme config.json instead of -a/-n (nvme-cli's -J; 'none': ignore)",
  },
  "dump-config": {
    type: "boolean",
    short: "O",
    description:
      "Print the connection as libnvme's config.json (nvme-cli's -O), without secrets; -J takes it back",
  },
  traddr: {
    ...CONNECT_FLAGS.traddr,
    multiple: true,
    description:
      "Target address (IP, or a host name); repeat it for every path of the subsystem (HA profile)",
  },
  "ctrl-loss-tmo": {
    ...Object.fromEntries(
      Object.entries(CONNECT_FLAGS["ctrl-loss-tmo"]).filter(([k]) => k !== "default"),
    ) as typeof CONNECT_FLAGS["ctrl-loss-tmo"],
    description:
      `Give up reconnecting after this long; -1 = never (default ${DEFAULT_CTRL_LOSS_TMO} as nvme-cli, -1 with the HA profile)`,
  },
  ha: {
    type: "boolean",
    description: `The HA profile even for one path (the default with several -a): ${haText()}`,
  },
  "no-ha": {
    type: "boolean",
    description: "The kernel's and nvme-cli's timeouts even with several -a",
  },
  persist: {
    type: "boolean",
    description: "Also save the connection in /etc/nvmeof/connections.yaml (reconnected at boot)",
  },
  saved: {
    type: "boolean",
    description: "Connect every saved connection instead (what nvmeof-autoconnect.service runs)",
  },
  "retry-for": {
    type: "string",
    value: "SECONDS",
    description:
      `With --saved: keep retrying unreachable targets with backoff (1 s doubling to 15 s) for this long (default ${DEFAULT_RETRY_FOR}; 0 = try once)`,
  },
};

/** The flags of `nvmeof connect-all`. */
export const CONNECT_ALL_FLAGS: Record<string, OptionSpec> = {
  ...ADDRESS_FLAGS,
  ...HOST_FLAGS,
  ...TUNING_FLAGS,
  persist: {
    type: "boolean",
    description:
      "Also save this discovery controller in /etc/nvmeof/connections.yaml: at boot every subsystem it lists is connected",
  },
};
