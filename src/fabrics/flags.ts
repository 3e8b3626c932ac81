/**
 * The fabrics flags, defined once with nvme-cli's names, and their translation into
 * ConnectOptions. discover, connect and connect-all take subsets of these.
 */
import type { OptionSpec, OptionValues } from "../cli/command.ts";
import { quote, UsageError } from "../errors.ts";
import {
  checkAddress,
  checkInt,
  checkNqn,
  checkTrsvcid,
  type ConnectOptions,
  DEFAULT_CTRL_LOSS_TMO,
  DEFAULT_TRSVCID,
  isUuid,
  loadKeyFile,
  type Transport,
  TRANSPORTS,
} from "./options.ts";

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
    description: "Target IP address (IPv4, or IPv6 with %iface when link-local)",
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

/** How the I/O controller behaves: -i -Q -k -c -l and the DH-HMAC-CHAP secret. */
export const TUNING_FLAGS: Record<string, OptionSpec> = {
  "nr-io-queues": {
    type: "string",
    short: "i",
    value: "N",
    description: "Number of I/O queues (kernel default: online CPUs)",
  },
  "queue-size": {
    type: "string",
    short: "Q",
    value: "N",
    description: "I/O queue depth, 16 to 1024 (kernel default 128)",
  },
  "keep-alive-tmo": {
    type: "string",
    short: "k",
    value: "SECONDS",
    description: "Keep-alive timeout (kernel default 5)",
  },
  "reconnect-delay": {
    type: "string",
    short: "c",
    value: "SECONDS",
    description: "Delay between reconnect attempts (kernel default 10)",
  },
  "ctrl-loss-tmo": {
    type: "string",
    short: "l",
    value: "SECONDS",
    description: "Give up reconnecting after this long; -1 = never",
    default: String(DEFAULT_CTRL_LOSS_TMO),
  },
  "dhchap-secret-file": {
    type: "string",
    value: "FILE",
    description: "File holding the DH-HMAC-CHAP host secret (DHHC-1:…); never put secrets in argv",
  },
};

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

function str(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

/** Reads -t/-a/-s (traddr required). */
export function addressFromFlags(
  values: OptionValues,
): Pick<ConnectOptions, "transport" | "traddr" | "trsvcid"> {
  const transport = str(values, "transport") ?? "rdma";
  if (!(TRANSPORTS as readonly string[]).includes(transport)) {
    throw new UsageError(`Transport ${quote(transport)} is not supported.`, {
      hint: "Use -t rdma (or -t tcp).",
    });
  }
  const traddr = str(values, "traddr");
  if (traddr === undefined) {
    throw new UsageError("The target address is missing.", {
      hint: "Give it with -a/--traddr, e.g. -a 10.0.0.2.",
    });
  }
  return {
    transport: transport as Transport,
    traddr: checkAddress(traddr, "-a/--traddr"),
    trsvcid: checkTrsvcid(str(values, "trsvcid") ?? DEFAULT_TRSVCID, "-s/--trsvcid"),
  };
}

/** Reads -q/-I/-w as given (identity defaults are filled in later from /etc/nvme). */
export function hostFromFlags(
  values: OptionValues,
): Pick<ConnectOptions, "hostnqn" | "hostid" | "hostTraddr"> {
  const hostnqn = str(values, "hostnqn");
  const hostid = str(values, "hostid");
  const hostTraddr = str(values, "host-traddr");
  if (hostid !== undefined && !isUuid(hostid)) {
    throw new UsageError(`-I/--hostid ${quote(hostid)} is not a UUID.`, {
      hint: "Give an 8-4-4-4-12 hex UUID, e.g. the one in /etc/nvme/hostid.",
    });
  }
  return {
    ...(hostnqn !== undefined ? { hostnqn: checkNqn(hostnqn, "-q/--hostnqn") } : {}),
    ...(hostid !== undefined ? { hostid: hostid.toLowerCase() } : {}),
    ...(hostTraddr !== undefined
      ? { hostTraddr: checkAddress(hostTraddr, "-w/--host-traddr") }
      : {}),
  };
}

/** Reads -i/-Q/-k/-c/-l and the secret file, with the kernel's ranges (facts §1.2). */
export function tuningFromFlags(values: OptionValues): Promise<Partial<ConnectOptions>> {
  // A promise that rejects on a bad value, as callers await it.
  return new Promise((resolve) => resolve(tuningFromFlagsNow(values)));
}

function tuningFromFlagsNow(values: OptionValues): Partial<ConnectOptions> {
  const out: Partial<ConnectOptions> = {};
  const nr = str(values, "nr-io-queues");
  if (nr !== undefined) {
    out.nrIoQueues = checkInt(nr, "-i/--nr-io-queues", 1, 65535, "the number of I/O queues");
  }
  const qs = str(values, "queue-size");
  if (qs !== undefined) {
    out.queueSize = checkInt(qs, "-Q/--queue-size", 16, 1024, "the I/O queue depth");
  }
  const kato = str(values, "keep-alive-tmo");
  if (kato !== undefined) {
    out.keepAliveTmo = checkInt(kato, "-k/--keep-alive-tmo", 0, 65535, "seconds");
  }
  const rd = str(values, "reconnect-delay");
  if (rd !== undefined) {
    out.reconnectDelay = checkInt(rd, "-c/--reconnect-delay", 1, 86400, "seconds");
  }
  const clt = str(values, "ctrl-loss-tmo");
  if (clt !== undefined) {
    out.ctrlLossTmo = checkInt(clt, "-l/--ctrl-loss-tmo", -1, 2147483647, "seconds, -1 = never");
  }
  const file = str(values, "dhchap-secret-file");
  if (file !== undefined) {
    out.dhchapSecret = loadKeyFile(file, "--dhchap-secret-file");
  }
  return out;
}
