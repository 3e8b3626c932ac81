/**
 * The connect options, defined once. Each row says, for one option of an I/O (or discovery)
 * controller: nvme-cli's flag (long name, short letter), the token of the /dev/nvme-fabrics
 * option string, the key in nvmeof's saved connections, the key in nvme-cli's config.json
 * (libnvme), what values it takes, the transports and the first Linux release that has it, and
 * what a shell may offer after it. Flags (cli/connect_flags.ts), the option string
 * (option_string.ts) and its checks (option_checks.ts), saved connections and the nvme-cli import
 * (persist/) and completions all read this table.
 *
 * Sources: nvme-cli 2.x fabrics.c (NVMF_ARGS), libnvme fabrics.c (build_options), Linux
 * drivers/nvme/host/fabrics.c (opt_tokens and their checks) and the transports' allowed_opts.
 * The identity and address flags (-t -a -s -n -q -I -w) have their own checks in
 * option_checks.ts and are listed in ADDRESS_COMPLETIONS for completions only.
 */
import type { Transport } from "./connect_options.ts";

/** The ConnectOptions fields the table defines. */
export type TableField =
  | "hostIface"
  | "nrIoQueues"
  | "nrWriteQueues"
  | "nrPollQueues"
  | "queueSize"
  | "keepAliveTmo"
  | "reconnectDelay"
  | "ctrlLossTmo"
  | "fastIoFailTmo"
  | "ioTimeout"
  | "tos"
  | "duplicateConnect"
  | "disableSqflow"
  | "hdrDigest"
  | "dataDigest"
  | "dhchapSecret"
  | "dhchapCtrlSecret"
  | "tls"
  | "keyring"
  | "tlsKey"
  | "concat";

/** What a value may be. */
export type OptionKind =
  /** A whole number in [min, max]; `unset` is nvme-cli's "not given" value, written as nothing. */
  | { type: "int"; min: number; max: number; unset?: number; meaning: string }
  /** A switch: present or not (a bare token in the option string). */
  | { type: "flag" }
  /** A network interface name (host_iface). */
  | { type: "iface" }
  /** A DH-HMAC-CHAP secret, given as the path of a file holding it (never the secret). */
  | { type: "secret-file" }
  /** A kernel key serial number (keyring, tls_key). */
  | { type: "key-id" };

/** A Linux release as [major, minor]. */
export type KernelVersion = readonly [number, number];

/** One connect option. */
export interface ConnectOptionRow {
  field: TableField;
  /** The long flag as nvmeof takes it (nvme-cli's name unless the value differs, see `nvmeCliFlag`). */
  flag: string;
  /** The long flag as nvme-cli spells it, when nvmeof's differs (a file instead of a secret). */
  nvmeCliFlag?: string;
  /** Other accepted spellings of the long flag. */
  aliases?: readonly string[];
  short?: string;
  /**
   * The token in the /dev/nvme-fabrics option string; for an option set after the connect
   * (`queueAttr`), the name it is shown under.
   */
  token: string;
  /**
   * For an option the option string has no token for: the attribute of each of the new
   * controller's namespace queues (`/sys/class/nvme/nvmeN/<namespace>/queue/<attr>`) that
   * connect writes once the namespaces exist, in milliseconds (the value is seconds).
   */
  queueAttr?: string;
  /** The key in /etc/nvmeof/connections.yaml. */
  saved: string;
  /** The key of a port in nvme-cli's /etc/nvme/config.json; absent when nvme-cli has no such option. */
  nvmeCli?: string;
  kind: OptionKind;
  /** The first Linux release whose nvme-fabrics takes the token. */
  since: KernelVersion;
  /** The transports that take it (all of rdma and tcp when absent). */
  transports?: readonly Transport[];
  /** Left out of a discovery controller's option string (libnvme leaves them out too). */
  ioOnly?: boolean;
  /** Help: the value's name and what the option does. */
  value?: string;
  description: string;
  /** What completion offers for the value (none: any value). */
  values?: readonly string[];
  /**
   * The value of the HA profile (`connect --ha`, or several -a), when it sets this option: chosen
   * from failover measurements in the lab fabric (README "High availability").
   */
  ha?: number;
}

const INT_MAX = 2147483647;

/** The HA profile's keep-alive timeout, seconds (README "High availability" has the figures). */
const HA_KEEP_ALIVE_TMO = 1;
/** The HA profile's delay between reconnect attempts, seconds. */
const HA_RECONNECT_DELAY = 1;
/** The HA profile's fast_io_fail_tmo, seconds: how long I/O waits when no path is left. */
const HA_FAST_IO_FAIL_TMO = 30;
/**
 * The HA profile's I/O timeout on each path, seconds: how long an I/O waits on a path before the
 * host gives up on that path and moves its I/O to another (README "High availability").
 */
const HA_IO_TIMEOUT = 2;

/** The table, in option-string order. */
export const CONNECT_OPTIONS: readonly ConnectOptionRow[] = [
  {
    field: "hostIface",
    flag: "host-iface",
    short: "f",
    token: "host_iface",
    saved: "host_iface",
    nvmeCli: "host_iface",
    kind: { type: "iface" },
    since: [5, 14],
    transports: ["tcp"],
    value: "IFACE",
    description: "Local network interface to connect from (tcp)",
  },
  {
    field: "nrIoQueues",
    flag: "nr-io-queues",
    short: "i",
    token: "nr_io_queues",
    saved: "nr_io_queues",
    nvmeCli: "nr_io_queues",
    kind: { type: "int", min: 1, max: 65535, meaning: "the number of I/O queues" },
    since: [4, 8],
    ioOnly: true,
    value: "N",
    description: "Number of I/O queues (kernel default: online CPUs)",
  },
  {
    field: "nrWriteQueues",
    flag: "nr-write-queues",
    short: "W",
    token: "nr_write_queues",
    saved: "nr_write_queues",
    nvmeCli: "nr_write_queues",
    kind: { type: "int", min: 1, max: 65535, meaning: "extra queues for writes" },
    since: [5, 0],
    ioOnly: true,
    value: "N",
    description: "Number of extra queues for writes (kernel default 0: reads and writes share)",
  },
  {
    field: "nrPollQueues",
    flag: "nr-poll-queues",
    short: "P",
    token: "nr_poll_queues",
    saved: "nr_poll_queues",
    nvmeCli: "nr_poll_queues",
    kind: { type: "int", min: 1, max: 65535, meaning: "extra polled queues" },
    since: [5, 1],
    ioOnly: true,
    value: "N",
    description: "Number of extra polled queues (kernel default 0)",
  },
  {
    field: "queueSize",
    flag: "queue-size",
    short: "Q",
    token: "queue_size",
    saved: "queue_size",
    nvmeCli: "queue_size",
    kind: { type: "int", min: 16, max: 1024, meaning: "the I/O queue depth" },
    since: [4, 8],
    ioOnly: true,
    value: "N",
    description: "I/O queue depth, 16 to 1024 (kernel default 128)",
  },
  {
    field: "keepAliveTmo",
    flag: "keep-alive-tmo",
    short: "k",
    token: "keep_alive_tmo",
    saved: "keep_alive_tmo",
    nvmeCli: "keep_alive_tmo",
    kind: { type: "int", min: 0, max: 65535, meaning: "seconds, 0 = no keep-alive" },
    since: [4, 8],
    value: "SECONDS",
    ha: HA_KEEP_ALIVE_TMO, // a dead path, busy or idle, is noticed in 2-3 s instead of 10-15 s
    description: "Keep-alive timeout (kernel default 5; 0 = none)",
  },
  {
    field: "reconnectDelay",
    flag: "reconnect-delay",
    short: "c",
    token: "reconnect_delay",
    saved: "reconnect_delay",
    nvmeCli: "reconnect_delay",
    kind: { type: "int", min: 1, max: 86400, meaning: "seconds" },
    since: [4, 8],
    value: "SECONDS",
    ha: HA_RECONNECT_DELAY, // a path is back within seconds of its link
    description: "Delay between reconnect attempts (kernel default 10)",
  },
  {
    field: "ctrlLossTmo",
    flag: "ctrl-loss-tmo",
    short: "l",
    token: "ctrl_loss_tmo",
    saved: "ctrl_loss_tmo",
    nvmeCli: "ctrl_loss_tmo",
    kind: { type: "int", min: -1, max: INT_MAX, meaning: "seconds, -1 = never give up" },
    since: [4, 8],
    value: "SECONDS",
    ha: -1, // an HA path is never given up: it comes back when its link does
    description: "Give up reconnecting after this long; -1 = never",
  },
  {
    field: "fastIoFailTmo",
    flag: "fast_io_fail_tmo",
    aliases: ["fast-io-fail-tmo"],
    short: "F",
    token: "fast_io_fail_tmo",
    saved: "fast_io_fail_tmo",
    nvmeCli: "fast_io_fail_tmo",
    kind: {
      type: "int",
      min: -1,
      max: INT_MAX,
      meaning: "seconds after a connection loss until I/O fails, -1 = only at ctrl-loss-tmo",
    },
    since: [5, 10],
    value: "SECONDS",
    ha: HA_FAST_IO_FAIL_TMO, // with every path down, I/O fails after this, not never
    description:
      "Fail I/O this long after the connection is lost, while reconnecting goes on (kernel default -1: off)",
  },
  {
    field: "ioTimeout",
    flag: "io-timeout",
    token: "io_timeout",
    queueAttr: "io_timeout",
    saved: "io_timeout",
    kind: { type: "int", min: 1, max: 4294967, meaning: "seconds an I/O waits on a path" },
    since: [5, 0],
    ioOnly: true,
    value: "SECONDS",
    ha: HA_IO_TIMEOUT, // a dead path's I/O moves in 2-3 s, not after the keep-alive's second expiry
    description:
      "Time out an I/O on this path after this long and recover the path, its I/O moving to another (kernel default 30; nvmeof sets each namespace queue's io_timeout)",
  },
  {
    field: "tos",
    flag: "tos",
    short: "T",
    token: "tos",
    saved: "tos",
    nvmeCli: "tos",
    kind: {
      type: "int",
      min: -1,
      max: 255,
      unset: -1,
      meaning: "the IP type of service byte, -1 = the kernel's default",
    },
    since: [5, 6],
    value: "TOS",
    description: "IP type of service of the connection, 0 to 255",
  },
  {
    field: "duplicateConnect",
    flag: "duplicate-connect",
    short: "D",
    token: "duplicate_connect",
    saved: "duplicate_connect",
    nvmeCli: "duplicate_connect",
    kind: { type: "flag" },
    since: [4, 16],
    description: "Allow a second controller to the same subsystem, address and host",
  },
  {
    field: "disableSqflow",
    flag: "disable-sqflow",
    token: "disable_sqflow",
    saved: "disable_sqflow",
    nvmeCli: "disable_sqflow",
    kind: { type: "flag" },
    since: [5, 0],
    description: "Ask the controller to disable submission queue flow control",
  },
  {
    field: "hdrDigest",
    flag: "hdr-digest",
    short: "g",
    token: "hdr_digest",
    saved: "hdr_digest",
    nvmeCli: "hdr_digest",
    kind: { type: "flag" },
    since: [5, 0],
    transports: ["tcp"],
    description: "CRC32C digest on PDU headers (tcp)",
  },
  {
    field: "dataDigest",
    flag: "data-digest",
    short: "G",
    token: "data_digest",
    saved: "data_digest",
    nvmeCli: "data_digest",
    kind: { type: "flag" },
    since: [5, 0],
    transports: ["tcp"],
    description: "CRC32C digest on PDU data (tcp)",
  },
  {
    field: "dhchapSecret",
    flag: "dhchap-secret-file",
    nvmeCliFlag: "dhchap-secret",
    token: "dhchap_secret",
    saved: "dhchap_secret_file",
    nvmeCli: "dhchap_key",
    kind: { type: "secret-file" },
    since: [6, 0],
    ioOnly: true,
    value: "FILE",
    description: "File holding the DH-HMAC-CHAP host secret (DHHC-1:…); never put secrets in argv",
  },
  {
    field: "dhchapCtrlSecret",
    flag: "dhchap-ctrl-secret-file",
    nvmeCliFlag: "dhchap-ctrl-secret",
    short: "C",
    token: "dhchap_ctrl_secret",
    saved: "dhchap_ctrl_secret_file",
    nvmeCli: "dhchap_ctrl_key",
    kind: { type: "secret-file" },
    since: [6, 0],
    ioOnly: true,
    value: "FILE",
    description:
      "File holding the controller's DH-HMAC-CHAP secret, for authentication both ways (-C takes the file too)",
  },
  {
    field: "tls",
    flag: "tls",
    token: "tls",
    saved: "tls",
    nvmeCli: "tls",
    kind: { type: "flag" },
    since: [6, 7],
    transports: ["tcp"],
    description: "TLS on the connection (tcp)",
  },
  {
    field: "keyring",
    flag: "keyring",
    token: "keyring",
    saved: "keyring",
    nvmeCli: "keyring",
    kind: { type: "key-id" },
    since: [6, 7],
    transports: ["tcp"],
    value: "KEY_ID",
    description: "Serial number of the keyring holding the TLS keys (tcp)",
  },
  {
    field: "tlsKey",
    flag: "tls-key",
    token: "tls_key",
    saved: "tls_key",
    nvmeCli: "tls_key",
    kind: { type: "key-id" },
    since: [6, 7],
    transports: ["tcp"],
    value: "KEY_ID",
    description: "Serial number of the TLS pre-shared key in the kernel keyring (tcp)",
  },
  {
    field: "concat",
    flag: "concat",
    token: "concat",
    saved: "concat",
    nvmeCli: "concat",
    kind: { type: "flag" },
    since: [6, 15],
    transports: ["tcp"],
    description: "Secure channel concatenation after DH-HMAC-CHAP (tcp)",
  },
];

/**
 * The HA profile: the options whose rows give an `ha` value. Options given explicitly win over it.
 */
export function haProfile(): Partial<Record<TableField, number>> {
  const out: Partial<Record<TableField, number>> = {};
  for (const r of CONNECT_OPTIONS) if (r.ha !== undefined) out[r.field] = r.ha;
  return out;
}

/** The row of a ConnectOptions field. */
export function rowOf(field: TableField): ConnectOptionRow {
  const r = CONNECT_OPTIONS.find((r) => r.field === field);
  if (!r) throw new Error(`no connect option row for ${field}`);
  return r;
}

/** The row whose option-string token is `token`, if any. */
export function rowOfToken(token: string): ConnectOptionRow | undefined {
  return CONNECT_OPTIONS.find((r) => r.token === token);
}

/** `-W/--nr-write-queues`: how messages name a row's flag. */
export function flagLabel(r: ConnectOptionRow): string {
  return r.short ? `-${r.short}/--${r.flag}` : `--${r.flag}`;
}

/** "6.7" */
export function versionText(v: KernelVersion): string {
  return `${v[0]}.${v[1]}`;
}

/** The values completion offers after the address and identity flags (not table rows). */
const ADDRESS_COMPLETIONS: Readonly<Record<string, readonly string[]>> = {
  transport: ["rdma", "tcp"],
  trsvcid: ["4420", "8009"],
};

/**
 * What a shell may offer after each connect flag, long name → values: the address flags' fixed
 * lists and the table's. Rows without a list take any value (numbers, names, files).
 */
export function completionValues(): Record<string, readonly string[]> {
  const out: Record<string, readonly string[]> = { ...ADDRESS_COMPLETIONS };
  for (const r of CONNECT_OPTIONS) if (r.values) out[r.flag] = r.values;
  return out;
}
