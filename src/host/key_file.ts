/**
 * DH-HMAC-CHAP key files, read the same way by the target's spec and the initiator's connect:
 * a regular file, private to its owner, holding one DHHC-1 line.
 */
import { quote, UsageError } from "../errors.ts";

/** The text form of a DH-HMAC-CHAP secret: `DHHC-1:<hash 00-03>:<base64 key and CRC>:`. */
const DHHC1 = /^DHHC-1:0[0-3]:[A-Za-z0-9+/=]+:$/;

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
