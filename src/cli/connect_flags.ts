/**
 * The flags of `connect` and `connect-all` beyond the shared fabrics flags: several -a, -J/-O,
 * the HA profile, --persist, --saved. Light on purpose, as fabrics_flags.ts: their reading is
 * connect_values.ts, which the commands import when they run.
 */
import { haProfile, rowOf, type TableField } from "../fabrics/connect_table.ts";
import { DEFAULT_CTRL_LOSS_TMO } from "../fabrics/connect_options.ts";
import { DEFAULT_RETRY_FOR } from "../persist/units.ts";
import type { OptionSpec } from "./command.ts";
import { ADDRESS_FLAGS, HOST_FLAGS } from "./fabrics_flags.ts";
import { CONNECT_FLAGS, TUNING_FLAGS } from "./tuning_flags.ts";

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
