/**
 * Reading the files a user hands nvmeof (target specs, nvmetcli and nvme-cli configurations,
 * saved connections): bounded, because a path may name /dev/zero or a runaway log, and strictly
 * UTF-8, because a replaced byte would reach configfs as U+FFFD.
 */
import { FailureError } from "./errors.ts";

/** The largest input file read, in bytes. A spec is kilobytes; 1024 namespaces are ~200 KiB. */
export const INPUT_MAX_BYTES = 16 * 1024 * 1024;

/** An input file is too large or not UTF-8 text (exit 1). */
export class InputError extends FailureError {
  /** What is wrong, without the file's name ("is not UTF-8 text: …"). */
  readonly reason: string;

  constructor(path: string, reason: string, options: { cause?: unknown; hint?: string }) {
    super(`'${path}' ${reason}`, options);
    this.reason = reason;
  }
}

/** Options of readInputText. */
export interface ReadInputOptions {
  /** Refuse files larger than this many bytes (default INPUT_MAX_BYTES). */
  maxBytes?: number;
}

/**
 * Reads a text file of at most `maxBytes` bytes, stopping there whatever the file is (a FIFO,
 * /dev/zero). Throws InputError when it is larger or not valid UTF-8, and Deno's own error when it
 * cannot be opened or read (callers tell NotFound apart).
 */
export function readInputText(path: string, options: ReadInputOptions = {}): string {
  const max = options.maxBytes ?? INPUT_MAX_BYTES;
  const bytes = readBounded(path, max);
  if (bytes === undefined) {
    throw new InputError(
      path,
      `is larger than ${max} bytes, the most nvmeof reads; nothing was read from it.`,
      { hint: "Name the right file: a spec or a configuration is a few kilobytes." },
    );
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (err) {
    const at = firstInvalidUtf8(bytes);
    const line = bytes.subarray(0, at).filter((b) => b === 0x0a).length + 1;
    throw new InputError(
      path,
      `is not UTF-8 text: line ${line} has an invalid byte (0x${
        bytes[at]?.toString(16).padStart(2, "0")
      } at offset ${at}).`,
      { cause: err, hint: "Save the file as UTF-8 (iconv -t UTF-8), or name the right file." },
    );
  }
}

/** The file's bytes, or undefined when it holds more than `max`. */
function readBounded(path: string, max: number): Uint8Array | undefined {
  using f = Deno.openSync(path, { read: true });
  const buf = new Uint8Array(Math.min(max + 1, 1 << 16));
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (total <= max) {
    const n = f.readSync(buf);
    if (n === null || n === 0) break;
    chunks.push(buf.slice(0, n));
    total += n;
  }
  if (total > max) return undefined;
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** The offset of the first byte that is not part of a well-formed UTF-8 sequence, or -1. */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    // The sequence length and the range of its second byte (RFC 3629's table).
    let len = 0, lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k < len; k++) {
      const d = b[i + k];
      if (d === undefined) return i;
      if (k === 1 ? d < lo || d > hi : d < 0x80 || d > 0xbf) return i;
    }
    i += len;
  }
  return -1;
}
