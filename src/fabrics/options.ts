/**
 * The `/dev/nvme-fabrics` option string: validation of every value before anything is written,
 * and the string itself, in the token order nvme-cli uses (libnvme's build_options in src/nvme/fabrics.c; the kernel's
 * opt_tokens in drivers/nvme/host/fabrics.c).
 */
import { EnvironmentError, quote, UsageError } from "../errors.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import { hostPaths } from "../host_paths.ts";
import { NQN_MAX_BYTES, NVMF_NQN_SIZE } from "./nqn.ts";
import {
  CONNECT_OPTIONS,
  type ConnectOptionRow,
  flagLabel,
  type KernelVersion,
  versionText,
} from "./connect_table.ts";

/** The NVMe/RDMA port (also used for RDMA discovery). */
export const DEFAULT_TRSVCID = "4420";
/** nvme-cli always writes ctrl_loss_tmo; the kernel's default is also 600 s. */
export const DEFAULT_CTRL_LOSS_TMO = 600;

/** Transports this product connects over. */
export const TRANSPORTS = ["rdma", "tcp"] as const;
export type Transport = typeof TRANSPORTS[number];

/** Whether `t` names a transport nvmeof speaks. */
export function isTransport(t: string): t is Transport {
  return (TRANSPORTS as readonly string[]).includes(t);
}

/** What a connect (or a discovery connect) asks of the kernel. */
export interface ConnectOptions {
  transport: Transport;
  traddr: string;
  trsvcid: string;
  nqn: string;
  hostnqn?: string;
  hostid?: string;
  hostTraddr?: string;
  /** The rest are the rows of the connect-option table (connect_table.ts). */
  hostIface?: string;
  nrIoQueues?: number;
  nrWriteQueues?: number;
  nrPollQueues?: number;
  queueSize?: number;
  keepAliveTmo?: number;
  reconnectDelay?: number;
  ctrlLossTmo?: number;
  fastIoFailTmo?: number;
  /** Seconds; set on the namespace queues after the connect (not in the option string). */
  ioTimeout?: number;
  tos?: number;
  duplicateConnect?: boolean;
  disableSqflow?: boolean;
  hdrDigest?: boolean;
  dataDigest?: boolean;
  /** DH-HMAC-CHAP host secret (`DHHC-1:…`); never printed. */
  dhchapSecret?: string;
  /** DH-HMAC-CHAP controller secret, for authentication both ways; never printed. */
  dhchapCtrlSecret?: string;
  tls?: boolean;
  keyring?: string;
  tlsKey?: string;
  concat?: boolean;
}

/** True when a table option's value asks something of the kernel (not absent, off or "unset"). */
export function isSet(r: ConnectOptionRow, v: unknown): boolean {
  if (v === undefined || v === false) return false;
  return !(r.kind.type === "int" && r.kind.unset !== undefined && v === r.kind.unset);
}

/** The option-string token and value of each table option set in `o`, in table order. */
function tableTokens(o: ConnectOptions): Array<[string, string | undefined]> {
  const out: Array<[string, string | undefined]> = [];
  for (const r of CONNECT_OPTIONS) {
    const v = o[r.field];
    if (!isSet(r, v) || r.queueAttr) continue;
    out.push([r.token, v === true ? undefined : String(v)]);
  }
  return out;
}

/** The option string written to /dev/nvme-fabrics. */
export function buildOptionString(o: ConnectOptions): string {
  const t: string[] = [`nqn=${o.nqn}`, `transport=${o.transport}`, `traddr=${o.traddr}`];
  t.push(`trsvcid=${o.trsvcid}`);
  if (o.hostTraddr !== undefined) t.push(`host_traddr=${o.hostTraddr}`);
  if (o.hostnqn !== undefined) t.push(`hostnqn=${o.hostnqn}`);
  if (o.hostid !== undefined) t.push(`hostid=${o.hostid}`);
  for (const [k, v] of tableTokens(o)) t.push(v === undefined ? k : `${k}=${v}`);
  return t.join(",");
}

/**
 * What connect writes to each namespace queue of the new controller once it is ready (the table's
 * `queueAttr` rows set in `o`): attribute → value in ms, as sysfs takes it. Empty when none.
 */
export function namespaceQueueSettings(o: ConnectOptions): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of CONNECT_OPTIONS) {
    if (r.queueAttr && isSet(r, o[r.field])) out[r.queueAttr] = Number(o[r.field]) * 1000;
  }
  return out;
}

/** `namespace_queues` (what connect sets on each namespace queue) for a result, if any. */
export function namespaceQueuesData(
  o: ConnectOptions,
): { namespace_queues?: Record<string, number> } {
  const q = namespaceQueueSettings(o);
  return Object.keys(q).length ? { namespace_queues: q } : {};
}

/** "io_timeout=2000 ms": namespace queue settings as the text output says them. */
export function queueSettingsText(settings: Record<string, number>): string {
  return Object.entries(settings).map(([k, v]) => `${k}=${v} ms`).join(" ");
}

/** "then on each path's namespace queues: io_timeout=2000 ms", or "" when connect writes none. */
export function namespaceQueueText(o: ConnectOptions): string {
  const s = namespaceQueueSettings(o);
  return Object.keys(s).length
    ? `then on each path's namespace queues: ${queueSettingsText(s)}`
    : "";
}

/** The option string with secrets replaced, safe to print. */
export function redactedOptionString(o: ConnectOptions): string {
  return buildOptionString({
    ...o,
    ...(o.dhchapSecret !== undefined ? { dhchapSecret: "<secret from file>" } : {}),
    ...(o.dhchapCtrlSecret !== undefined ? { dhchapCtrlSecret: "<secret from file>" } : {}),
  });
}

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
  const bytes = new TextEncoder().encode(value).length;
  if (bytes > NQN_MAX_BYTES) {
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

/** The text form of a DH-HMAC-CHAP secret: `DHHC-1:<hash 00-03>:<base64 key and CRC>:`. */
const DHHC1 = /^DHHC-1:0[0-3]:[A-Za-z0-9+/=]+:$/;

/** Checks a DH-HMAC-CHAP secret (read from a file); the secret itself never appears in errors. */
export function checkDhchapSecret(secret: string, file: string): string {
  const s = secret.trim();
  if (!DHHC1.test(s) || s.length < 11) {
    throw new UsageError(`The DH-HMAC-CHAP secret in '${file}' is not in DHHC-1 form.`, {
      hint:
        "The file must hold one line like DHHC-1:00:<base64>: (create it with 'nvme gen-dhchap-key').",
    });
  }
  return s;
}

/** What is wrong with a key file, and the fix. Never holds any part of the secret. */
export interface KeyFileProblem {
  message: string;
  fix: string;
}

/**
 * Reads a DH-HMAC-CHAP key file the way both sides need it, the target's spec and the initiator's
 * connect alike: a regular file, readable and writable by its owner only (mode 0600 or
 * stricter), holding one DHHC-1 line. Returns the secret, or the problem with `file` named in it.
 */
export function readKeyFile(file: string): { secret: string } | { problem: KeyFileProblem } {
  const name = quote(file, 200);
  let st: Deno.FileInfo;
  try {
    st = Deno.statSync(file);
  } catch (err) {
    return {
      problem: err instanceof Deno.errors.NotFound
        ? {
          message: `key file ${name} does not exist.`,
          fix: "Create it (nvme gen-dhchap-key) or fix the path.",
        }
        : {
          message: `key file ${name} cannot be read: ${(err as Error).message}.`,
          fix: "Run as root, or fix the path.",
        },
    };
  }
  if (!st.isFile) {
    return {
      problem: {
        message: `key file ${name} is not a regular file.`,
        fix: "Point it at the file holding the DHHC-1 key.",
      },
    };
  }
  if (st.mode !== null && (st.mode & 0o077) !== 0) {
    return {
      problem: {
        message: `key file ${name} is readable or writable by group or others (mode ${
          (st.mode & 0o777).toString(8)
        }).`,
        fix: `Run: chmod 600 '${file}'.`,
      },
    };
  }
  let text: string;
  try {
    text = Deno.readTextFileSync(file);
  } catch (err) {
    return {
      problem: {
        message: `key file ${name} cannot be read: ${(err as Error).message}.`,
        fix: "Run as root, or fix the file's permissions.",
      },
    };
  }
  const secret = text.trim();
  if (secret === "") {
    return {
      problem: {
        message: `key file ${name} is empty.`,
        fix: "Write the key into it (nvme gen-dhchap-key prints one).",
      },
    };
  }
  if (!DHHC1.test(secret) || secret.length < 11) {
    return {
      problem: {
        message: `key file ${name} does not hold one DH-HMAC-CHAP key in DHHC-1 form.`,
        fix: "Write one line like DHHC-1:00:<base64>: (create it with 'nvme gen-dhchap-key').",
      },
    };
  }
  return { secret };
}

/** readKeyFile for callers that stop at the first problem: throws UsageError naming `what`. */
export function loadKeyFile(file: string, what: string): string {
  const r = readKeyFile(file);
  if ("problem" in r) {
    throw new UsageError(`${what}: ${r.problem.message}`, { hint: r.problem.fix });
  }
  return r.secret;
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

/** The running kernel's release, from `<proc>/sys/kernel/osrelease` (NVMEOF_PROC moves /proc). */
export function runningKernelRelease(
  proc: string = hostPaths().proc,
): string | undefined {
  try {
    return Deno.readTextFileSync(`${proc}/sys/kernel/osrelease`).trim() || undefined;
  } catch {
    return undefined;
  }
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
