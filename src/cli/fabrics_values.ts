/**
 * The fabrics flags' values (the flags themselves are fabrics_flags.ts) read into ConnectOptions:
 * checked, resolved and read from files. Commands import this when they run, never for --help.
 */
import type { OptionValues } from "./command.ts";
import { FailureError, quote, UsageError } from "../errors.ts";
import {
  checkAddress,
  checkKernelOptions,
  checkNqn,
  checkTransportOptions,
  checkTrsvcid,
  isUuid,
  tableValue,
} from "../fabrics/option_checks.ts";
import {
  type ConnectOptions,
  DEFAULT_TRSVCID,
  isTransport,
  type Transport,
} from "../fabrics/connect_options.ts";
import { runningKernelRelease } from "../host/kernel.ts";
import {
  CONNECT_OPTIONS,
  type ConnectOptionRow,
  flagLabel,
  type TableField,
} from "../fabrics/connect_table.ts";
import { resolveHostIdentity } from "../fabrics/host_identity.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { isIpv4 } from "../net/address.ts";

function str(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === "string" ? v : undefined;
}

/** Reads -t (default rdma); anything but a transport of TRANSPORTS is a usage error. */
export function transportFromFlags(values: OptionValues): Transport {
  const transport = str(values, "transport") ?? "rdma";
  if (!isTransport(transport)) {
    throw new UsageError(`Transport ${quote(transport)} is not supported.`, {
      hint: "Use -t rdma (or -t tcp).",
    });
  }
  return transport as Transport;
}

/** Reads -t/-a/-s (traddr required). */
export function addressFromFlags(
  values: OptionValues,
): Pick<ConnectOptions, "transport" | "traddr" | "trsvcid"> {
  const transport = transportFromFlags(values);
  const traddr = str(values, "traddr");
  if (traddr === undefined) {
    throw new UsageError("The target address is missing.", {
      hint: "Give it with -a/--traddr, e.g. -a 10.0.0.2.",
    });
  }
  return {
    transport,
    traddr: checkAddress(traddr, "-a/--traddr"),
    trsvcid: checkTrsvcid(str(values, "trsvcid") ?? DEFAULT_TRSVCID, "-s/--trsvcid"),
  };
}

/** True for a DNS host name (RFC 1123 labels), which is not an IP address. */
export function isHostName(s: string): boolean {
  return s.length <= 253 && !isIpv4(s) && !/^[\d.]+$/.test(s) &&
    s.split(".").every((l) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(l));
}

/**
 * Resolves a host name as libnvme does for rdma and tcp (getaddrinfo, so /etc/hosts and DNS in
 * the order nsswitch.conf gives; the first answer wins). A name that does not resolve is an
 * error naming it.
 */
async function resolveHostName(name: string, flag: string): Promise<string> {
  const { lookup } = await import("node:dns/promises");
  try {
    return (await lookup(name)).address;
  } catch (err) {
    const code = (err as { code?: string }).code ?? "error";
    throw new FailureError(`Cannot resolve ${flag} ${quote(name)}: ${code}.`, {
      cause: err,
      hint: `Check the name ('getent hosts ${name}' shows what this host resolves), ` +
        "or give the target's IP address.",
    });
  }
}

/**
 * -t/-a/-s with a host name in -a resolved to its address (what connect, connect-all and
 * discover take, as nvme-cli does); addressFromFlags itself takes addresses only.
 */
export async function resolvedAddressFromFlags(
  values: OptionValues,
): Promise<Pick<ConnectOptions, "transport" | "traddr" | "trsvcid">> {
  const traddr = str(values, "traddr");
  if (traddr === undefined || !isHostName(traddr)) return addressFromFlags(values);
  addressFromFlags({ ...values, traddr: "0.0.0.0" }); // the other flags first, as given
  return addressFromFlags({ ...values, traddr: await resolveHostName(traddr, "-a/--traddr") });
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

/** The value given for a row under its name or an alias, undefined when absent. */
function rowRaw(values: OptionValues, r: ConnectOptionRow): string | boolean | undefined {
  for (const name of [r.flag, ...(r.aliases ?? [])]) {
    const v = values[name];
    if (typeof v === "string" || typeof v === "boolean") return v;
  }
  return undefined;
}

/** The refusal of a secret given on the command line; the secret itself is never shown. */
function inlineSecretRefused(flag: string, fileFlag: string): UsageError {
  return new UsageError(
    `${flag} takes the secret on the command line, where every user of this host can read it ` +
      "(ps, /proc/PID/cmdline); nvmeof does not accept it.",
    {
      hint: `Write the key to a file only root can read, then pass the file:\n` +
        `  umask 077; nvme gen-dhchap-key -n HOSTNQN > /etc/nvme/disk1.key\n` +
        `  nvmeof connect … ${fileFlag} /etc/nvme/disk1.key`,
    },
  );
}

/**
 * Reads every table flag with the kernel's ranges (-i -W -P -Q -k -c -l -F -T -D -g -G -f, the
 * secret files, TLS); an inline secret (-S, --dhchap-ctrl-secret, or -C DHHC-1:…) is refused.
 */
export function tuningFromFlags(values: OptionValues): Promise<Partial<ConnectOptions>> {
  // A promise that rejects on a bad value, as callers await it.
  return new Promise((resolve) => resolve(tuningFromFlagsNow(values)));
}

function tuningFromFlagsNow(values: OptionValues): Partial<ConnectOptions> {
  if (values["dhchap-secret"] !== undefined) {
    throw inlineSecretRefused("-S/--dhchap-secret", "--dhchap-secret-file");
  }
  if (values["dhchap-ctrl-secret"] !== undefined) {
    throw inlineSecretRefused("--dhchap-ctrl-secret", "-C/--dhchap-ctrl-secret-file");
  }
  const out: Record<string, unknown> = {};
  for (const r of CONNECT_OPTIONS) {
    const raw = rowRaw(values, r);
    if (raw === undefined || raw === false) continue;
    if (r.kind.type === "secret-file" && typeof raw === "string" && /^DHHC-1:/.test(raw.trim())) {
      throw inlineSecretRefused(flagLabel(r), flagLabel(r));
    }
    out[r.field] = tableValue(r, raw);
  }
  return out as Partial<ConnectOptions>;
}

/** The secret files given on the command line, as absolute paths (what --persist saves). */
export function secretFilesFromFlags(values: OptionValues): Partial<Record<TableField, string>> {
  const out: Partial<Record<TableField, string>> = {};
  for (const r of CONNECT_OPTIONS) {
    const raw = rowRaw(values, r);
    if (r.kind.type !== "secret-file" || typeof raw !== "string") continue;
    out[r.field] = raw.startsWith("/") ? raw : `${Deno.cwd()}/${raw}`;
  }
  return out;
}

/** Builds the complete, validated options from the fabrics flags (host identity resolved). */
export async function connectOptionsFromFlags(
  given: OptionValues,
  paths: FabricsPaths,
  nqn: string,
): Promise<ConnectOptions> {
  const values = { ...given };
  if (Array.isArray(values.traddr)) values.traddr = values.traddr[0];
  const address = await resolvedAddressFromFlags(values);
  const host = hostFromFlags(values);
  const tuning = await tuningFromFlags(values);
  const id = await resolveHostIdentity(host, paths);
  const opts: ConnectOptions = {
    ...address,
    nqn,
    ...(host.hostTraddr ? { hostTraddr: host.hostTraddr } : {}),
    hostnqn: id.hostnqn,
    hostid: id.hostid,
    ...tuning,
  };
  checkTransportOptions(opts);
  checkKernelOptions(opts, runningKernelRelease());
  return opts;
}
