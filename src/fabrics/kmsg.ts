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
  /** Microseconds since boot (CLOCK_MONOTONIC) when the record was logged. */
  usec: number;
  message: string;
}

/** Parses one /dev/kmsg record (`prio,seq,usec,flags;message\n KEY=value…`). */
export function parseKmsgRecord(raw: string): KmsgRecord | undefined {
  const semi = raw.indexOf(";");
  if (semi < 0) return undefined;
  const [prio, seq, usec] = raw.slice(0, semi).split(",");
  const message = raw.slice(semi + 1).split("\n")[0];
  const p = Number(prio);
  const s = Number(seq);
  const u = Number(usec);
  if (!Number.isFinite(p) || !Number.isFinite(s) || !Number.isFinite(u)) return undefined;
  return { priority: p & 7, seq: s, usec: u, message };
}

/** True for records that are about NVMe-oF or RDMA connections. */
export function isFabricsRecord(message: string): boolean {
  return /\bnvme|nvmet|rdma|nvmf/i.test(message);
}

/** /dev/kmsg opened non-blocking (at its end, or at its oldest record), or -1 when it cannot be opened. */
function openKmsg(path: string, atEnd: boolean): number {
  try {
    const c = libc();
    const fd = c.open(new TextEncoder().encode(path + "\0"), O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd >= 0 && atEnd) c.lseek(fd, 0n, SEEK_END);
    return fd;
  } catch {
    return -1;
  }
}

/** The most records one read of the log takes (the kernel's buffer holds a few thousand). */
const MAX_RECORDS = 20000;

/**
 * The records readable from `fd` now, those `keep` accepts, oldest first. Each read(2) of
 * /dev/kmsg returns one record; a stand-in file returns many, split at their headers.
 */
function readRecords(fd: number, keep: (r: KmsgRecord) => boolean): KmsgRecord[] {
  if (fd < 0) return [];
  const c = libc();
  const buf = new Uint8Array(8192);
  const out: KmsgRecord[] = [];
  const dec = new TextDecoder();
  for (let records = 0; records < MAX_RECORDS;) {
    const n = Number(c.read(fd, buf, BigInt(buf.length)));
    if (n < 0) {
      if (errno() === EPIPE) continue; // records were overwritten; the next read resumes
      break; // EAGAIN: nothing more
    }
    if (n === 0) break;
    for (const raw of dec.decode(buf.subarray(0, n)).split(/\n(?=\d+,\d+,)/)) {
      records++;
      const rec = parseKmsgRecord(raw);
      if (rec && keep(rec)) out.push(rec);
    }
  }
  return out;
}

/**
 * The records still in the kernel log whose message `match` matches, oldest first; [] when the
 * log cannot be read (not root).
 */
export function kernelLog(path: string, match: RegExp): KmsgRecord[] {
  using log = new KmsgWatch(path, "oldest");
  return log.records((r) => match.test(r.message));
}

/**
 * Watches the kernel log: from the moment it is started (`now`), or from the oldest record the log
 * still holds (`oldest`). Each read takes only the records logged since the one before. Close it
 * (or `using`).
 */
export class KmsgWatch extends OwnedFd {
  /** Silently inactive when /dev/kmsg cannot be opened. */
  constructor(path: string, from: "now" | "oldest" = "now") {
    super(openKmsg(path, from === "now"));
  }

  /** True when the log could be opened. */
  get active(): boolean {
    return this.isOpen;
  }

  /** The records logged since the start (or the last read) that `keep` accepts, oldest first. */
  records(keep: (r: KmsgRecord) => boolean): KmsgRecord[] {
    return readRecords(this.fd, keep);
  }

  /** The records logged since the start (or the last read), fabrics-related ones only. */
  read(): string[] {
    return this.records((r) => isFabricsRecord(r.message)).map((r) => r.message);
  }
}
