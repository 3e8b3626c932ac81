/**
 * The `/dev/nvme-fabrics` option string: validation of every value before anything is written,
 * and the string itself, in the token order nvme-cli uses (libnvme's build_options in src/nvme/fabrics.c; the kernel's
 * opt_tokens in drivers/nvme/host/fabrics.c).
 */
import { quote, UsageError } from "../errors.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import { NQN_MAX_BYTES, NVMF_NQN_SIZE } from "./nqn.ts";

/** The NVMe/RDMA port (also used for RDMA discovery). */
export const DEFAULT_TRSVCID = "4420";
/** nvme-cli always writes ctrl_loss_tmo; the kernel's default is also 600 s. */
export const DEFAULT_CTRL_LOSS_TMO = 600;

/** Transports this product connects over. */
export const TRANSPORTS = ["rdma", "tcp"] as const;
export type Transport = typeof TRANSPORTS[number];

/** What a connect (or a discovery connect) asks of the kernel. */
export interface ConnectOptions {
  transport: Transport;
  traddr: string;
  trsvcid: string;
  nqn: string;
  hostnqn?: string;
  hostid?: string;
  hostTraddr?: string;
  nrIoQueues?: number;
  queueSize?: number;
  keepAliveTmo?: number;
  reconnectDelay?: number;
  ctrlLossTmo?: number;
  /** DH-HMAC-CHAP host secret (`DHHC-1:…`); never printed. */
  dhchapSecret?: string;
}

/** The option string written to /dev/nvme-fabrics. */
export function buildOptionString(o: ConnectOptions): string {
  const t: string[] = [`nqn=${o.nqn}`, `transport=${o.transport}`, `traddr=${o.traddr}`];
  t.push(`trsvcid=${o.trsvcid}`);
  if (o.hostTraddr !== undefined) t.push(`host_traddr=${o.hostTraddr}`);
  if (o.hostnqn !== undefined) t.push(`hostnqn=${o.hostnqn}`);
  if (o.hostid !== undefined) t.push(`hostid=${o.hostid}`);
  if (o.nrIoQueues !== undefined) t.push(`nr_io_queues=${o.nrIoQueues}`);
  if (o.queueSize !== undefined) t.push(`queue_size=${o.queueSize}`);
  if (o.keepAliveTmo !== undefined) t.push(`keep_alive_tmo=${o.keepAliveTmo}`);
  if (o.reconnectDelay !== undefined) t.push(`reconnect_delay=${o.reconnectDelay}`);
  if (o.ctrlLossTmo !== undefined) t.push(`ctrl_loss_tmo=${o.ctrlLossTmo}`);
  if (o.dhchapSecret !== undefined) t.push(`dhchap_secret=${o.dhchapSecret}`);
  return t.join(",");
}

/** The option string with secrets replaced, safe to print. */
export function redactedOptionString(o: ConnectOptions): string {
  return buildOptionString(
    o.dhchapSecret === undefined ? o : { ...o, dhchapSecret: "<secret from file>" },
  );
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
        "Give the target's IP address, e.g. -a 10.0.0.2 (RDMA resolves addresses, not host names).",
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
  if (!(TRANSPORTS as readonly string[]).includes(o.transport)) {
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
