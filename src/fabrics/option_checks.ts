/**
 * Checks of every connect value before anything is written: NQNs, addresses, numbers in the
 * kernel's ranges, the table options (by transport, and by what the running kernel has).
 */
import { EnvironmentError, quote, UsageError } from "../errors.ts";
import { loadKeyFile } from "../host/key_file.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import { NQN_MAX_BYTES, nqnBytesOverLimit, NVMF_NQN_SIZE } from "./nqn.ts";
import {
  CONNECT_OPTIONS,
  type ConnectOptionRow,
  flagLabel,
  type KernelVersion,
  versionText,
} from "./connect_table.ts";
import { type ConnectOptions, isSet, isTransport } from "./connect_options.ts";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** True for an 8-4-4-4-12 hex UUID. */
export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** Checks an NQN for what the kernel and the option string can carry; returns it. */
export function checkNqn(value: string, flag: string): string {
  if (value === "") {
    throw new UsageError(`${flag} is empty.`, {
      hint: "Give the NQN, e.g. nqn.2024-01.io.example:disk1.",
    });
  }
  const bytes = nqnBytesOverLimit(value);
  if (bytes !== undefined) {
    throw new UsageError(
      `${flag} '${
        value.slice(0, 40)
      }…' is ${bytes} bytes; the kernel accepts at most ${NQN_MAX_BYTES}.`,
      {
        hint:
          `Use a shorter NQN (the kernel's NVMF_NQN_SIZE, ${NVMF_NQN_SIZE}, counts the terminator).`,
      },
    );
  }
  if (
    /[,\s=]/.test(value) ||
    [...value].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f)
  ) {
    throw new UsageError(
      `${flag} ${quote(value)} contains a comma, '=', whitespace or a control character.`,
      {
        hint:
          "The kernel splits its option string on those; NQNs look like nqn.2014-08.org.example:name.",
      },
    );
  }
  return value;
}

/** Checks a transport address (IPv4 or IPv6) for rdma/tcp; returns it. */
export function checkAddress(value: string, flag: string): string {
  if (!isIpv4(value) && !isIpv6(value, { zone: true })) {
    throw new UsageError(`${flag} ${quote(value)} is not an IPv4 or IPv6 address.`, {
      hint:
        "Give the target's IP address, e.g. -a 10.0.0.2, or its host name where a command takes one (connect, discover).",
    });
  }
  return value;
}

/** Parses an integer flag within [min, max]; returns it. */
export function checkInt(value: string, flag: string, min: number, max: number, what = ""): number {
  if (!/^-?\d+$/.test(value.trim())) {
    throw new UsageError(`${flag} ${quote(value)} is not a whole number.`, {
      hint: `Give a number from ${min} to ${max}${what ? ` (${what})` : ""}.`,
    });
  }
  const n = Number(value.trim());
  if (n < min || n > max) {
    throw new UsageError(`${flag} ${n} is out of range: the kernel accepts ${min} to ${max}.`, {
      hint: what ? `It is ${what}.` : `Give a number from ${min} to ${max}.`,
    });
  }
  return n;
}

/** Checks a port number; returns it as the decimal string the kernel gets. */
export function checkTrsvcid(value: string, flag: string): string {
  return String(checkInt(value, flag, 1, 65535, "the target's TCP/RDMA port, 4420 by default"));
}

/** Checks a complete ConnectOptions; throws UsageError on the first bad value. */
export function validateConnectOptions(o: ConnectOptions): ConnectOptions {
  if (!isTransport(o.transport)) {
    throw new UsageError(`Transport ${quote(o.transport)} is not supported.`, {
      hint: "Use -t rdma (or -t tcp).",
    });
  }
  checkAddress(o.traddr, "-a/--traddr");
  checkTrsvcid(o.trsvcid, "-s/--trsvcid");
  checkNqn(o.nqn, "-n/--nqn");
  if (o.hostnqn !== undefined) checkNqn(o.hostnqn, "-q/--hostnqn");
  if (o.hostid !== undefined && !isUuid(o.hostid)) {
    throw new UsageError(`-I/--hostid ${quote(o.hostid)} is not a UUID.`, {
      hint: "Give an 8-4-4-4-12 hex UUID, e.g. the one in /etc/nvme/hostid.",
    });
  }
  if (o.hostTraddr !== undefined) checkAddress(o.hostTraddr, "-w/--host-traddr");
  return o;
}

/** A network interface name as the kernel takes it (IFNAMSIZ 16 with the terminator). */
const IFACE = /^[A-Za-z0-9_.:@-]{1,15}$/;

/**
 * Checks the value of one table option as given (a flag's text, or a YAML or JSON value) and
 * returns what ConnectOptions holds; a secret file is read (its content never appears in errors).
 * `label` names where the value came from (`-W/--nr-write-queues`, `'file' connections[0].tos`).
 */
export function tableValue(
  r: ConnectOptionRow,
  raw: unknown,
  label: string = flagLabel(r),
): string | number | boolean {
  const k = r.kind;
  switch (k.type) {
    case "int":
      if (typeof raw !== "number" && typeof raw !== "string") break;
      return checkInt(String(raw), label, k.min, k.max, k.meaning);
    case "flag":
      if (typeof raw === "boolean") return raw;
      if (raw === "true" || raw === "false") return raw === "true";
      break;
    case "iface":
      if (typeof raw === "string" && IFACE.test(raw)) return raw;
      throw new UsageError(`${label} ${quote(raw)} is not a network interface name.`, {
        hint: "Give the name 'ip link' shows, e.g. eth1 (at most 15 characters).",
      });
    case "key-id":
      if (typeof raw !== "number" && typeof raw !== "string") break;
      return String(checkInt(String(raw), label, 1, 2147483647, "a kernel key serial number"));
    case "secret-file":
      if (typeof raw !== "string") break;
      return loadKeyFile(raw, label);
  }
  throw new UsageError(`${label} has a value of the wrong type (${typeof raw}).`, {
    hint: k.type === "flag" ? "Write true or false." : "Write a plain value.",
  });
}

/** Refuses table options the connection's transport does not take (the kernel would refuse them). */
export function checkTransportOptions(o: ConnectOptions): void {
  for (const r of CONNECT_OPTIONS) {
    if (!isSet(r, o[r.field]) || !r.transports) continue;
    if (!r.transports.includes(o.transport)) {
      throw new UsageError(
        `${flagLabel(r)} applies to ${r.transports.join(", ")} only, not to -t ${o.transport}.`,
        { hint: `Drop ${flagLabel(r)}, or connect with -t ${r.transports[0]}.` },
      );
    }
  }
}

/** [major, minor] of a kernel release string ("6.1.0-13-amd64"), undefined when unreadable. */
function parseKernelRelease(release: string): KernelVersion | undefined {
  const m = /^(\d+)\.(\d+)/.exec(release.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function older(a: KernelVersion, b: KernelVersion): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/** The error for an option the running kernel does not have. */
export function kernelTooOld(
  r: ConnectOptionRow,
  release: string,
  cause?: unknown,
): EnvironmentError {
  return new EnvironmentError(
    `${flagLabel(r)} needs Linux ≥ ${versionText(r.since)}; this kernel is ${quote(release)} (${
      r.queueAttr
        ? `its block layer has no queue/${r.queueAttr}`
        : `its nvme-fabrics has no '${r.token}' option`
    }).`,
    {
      cause,
      hint: `Drop ${flagLabel(r)}, or connect from a host running Linux ${
        versionText(r.since)
      } or later.`,
    },
  );
}

/**
 * Refuses options the running kernel lacks, before anything is written. An unknown release
 * (no /proc) lets everything through: the kernel's own refusal is mapped the same way later.
 */
export function checkKernelOptions(o: ConnectOptions, release: string | undefined): void {
  const v = release === undefined ? undefined : parseKernelRelease(release);
  if (v === undefined) return;
  for (const r of CONNECT_OPTIONS) {
    if (!isSet(r, o[r.field])) continue;
    if (older(v, r.since)) throw kernelTooOld(r, release!);
  }
}
