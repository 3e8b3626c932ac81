/**
 * The kernel's own reason for a failed connect: records appended to the kernel log (/dev/kmsg)
 * while we worked. Reading needs root (or CAP_SYSLOG); when it cannot be read we simply have no
 * reason to add.
 */
import { EPIPE } from "../errno.ts";
import { errno, libc, O_CLOEXEC, O_NONBLOCK, O_RDONLY, SEEK_END } from "../../ffi/libc.ts";
import { OwnedFd } from "../fd.ts";

/** One kernel log record. */
export interface KmsgRecord {
  priority: number;
  seq: number;
  message: string;
}

/** Parses one /dev/kmsg record (`prio,seq,usec,flags;message\n KEY=value…`). */
export function parseKmsgRecord(raw: string): KmsgRecord | undefined {
  const semi = raw.indexOf(";");
  if (semi < 0) return undefined;
  const [prio, seq] = raw.slice(0, semi).split(",");
  const message = raw.slice(semi + 1).split("\n")[0];
  const p = Number(prio);
  const s = Number(seq);
  if (!Number.isFinite(p) || !Number.isFinite(s)) return undefined;
  return { priority: p & 7, seq: s, message };
}

/** True for records that are about NVMe-oF or RDMA connections. */
export function isFabricsRecord(message: string): boolean {
  return /\bnvme|nvmet|rdma|nvmf/i.test(message);
}

/** /dev/kmsg opened non-blocking at its end, or -1 when it cannot be opened. */
function openAtEnd(path: string): number {
  try {
    const c = libc();
    const fd = c.open(new TextEncoder().encode(path + "\0"), O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd >= 0) c.lseek(fd, 0n, SEEK_END);
    return fd;
  } catch {
    return -1;
  }
}

/** The most bytes of the kernel log readKmsg reads (the largest log_buf_len is 32 MiB; most are 1 MiB). */
const KMSG_MAX_BYTES = 1 << 22;

/**
 * The messages the kernel log holds now, oldest first, that `keep` accepts ([] when /dev/kmsg at
 * `path` cannot be read: it needs CAP_SYSLOG where dmesg_restrict is set). Each read(2) of
 * /dev/kmsg returns one record; a stand-in file returns many, split at their headers.
 */
export function readKmsg(path: string, keep: (message: string) => boolean): string[] {
  let fd = -1;
  try {
    fd = libc().open(
      new TextEncoder().encode(path + "\0"),
      O_RDONLY | O_NONBLOCK | O_CLOEXEC,
      0,
    );
  } catch {
    return [];
  }
  if (fd < 0) return [];
  using owned = new OwnedFd(fd);
  const c = libc();
  const buf = new Uint8Array(8192);
  const dec = new TextDecoder();
  const out: string[] = [];
  for (let total = 0; total < KMSG_MAX_BYTES;) {
    const n = Number(c.read(owned.fd, buf, BigInt(buf.length)));
    if (n < 0) {
      if (errno() === EPIPE) continue; // records were overwritten; the next read resumes
      break; // EAGAIN: the end of the log
    }
    if (n === 0) break;
    total += n;
    for (const raw of dec.decode(buf.subarray(0, n)).split(/\n(?=\d+,\d+,)/)) {
      const rec = parseKmsgRecord(raw);
      if (rec && keep(rec.message)) out.push(rec.message);
    }
  }
  return out;
}

/** Watches the kernel log from the moment it is started. Close it (or `using`). */
export class KmsgWatch extends OwnedFd {
  /** Starts at the end of the log; silently inactive when /dev/kmsg cannot be opened. */
  constructor(path: string) {
    super(openAtEnd(path));
  }

  /** True when the log could be opened. */
  get active(): boolean {
    return this.isOpen;
  }

  /** The records logged since the start (or the last call), fabrics-related ones only. */
  read(): string[] {
    if (this.fd < 0) return [];
    const c = libc();
    const buf = new Uint8Array(8192);
    const out: string[] = [];
    const dec = new TextDecoder();
    for (let i = 0; i < 1000; i++) {
      const n = Number(c.read(this.fd, buf, BigInt(buf.length)));
      if (n < 0) {
        const e = errno();
        if (e === EPIPE) continue; // records were overwritten; the next read resumes
        break; // EAGAIN: nothing more
      }
      if (n === 0) break;
      const rec = parseKmsgRecord(dec.decode(buf.subarray(0, n)));
      if (rec && isFabricsRecord(rec.message)) out.push(rec.message);
    }
    return out;
  }
}
