/**
 * The kernel's uevents read straight from a NETLINK_KOBJECT_UEVENT socket bound to group 1 (the
 * kernel's own broadcasts), so no udevd is needed. The socket is non-blocking: a wait for the
 * next datagram is a poll(2) off the main thread (src/wait.ts); the reads are synchronous.
 */
import {
  AF_NETLINK,
  errno,
  libc,
  NETLINK_KOBJECT_UEVENT,
  SO_RCVBUF,
  SO_RCVBUFFORCE,
  SOCK_CLOEXEC,
  SOCK_NONBLOCK,
  SOCK_RAW,
  SOL_SOCKET,
} from "../../ffi/libc.ts";
import { SOCKADDR_NL } from "../../ffi/libc_structs.ts";
import { EINTR, ENOBUFS } from "../errno.ts";
import { NativeError } from "../errors.ts";
import { OwnedFd } from "../fd.ts";
import { type Canceller, waitReadable, wouldBlock } from "../wait.ts";
import { parseUevent, type Uevent } from "./uevent.ts";

/** The kernel's multicast group of uevents (udevd re-broadcasts on group 2). */
const KERNEL_GROUP = 1;
/** A receive queue large enough for the burst of a few hundred controllers appearing at once. */
const RCVBUF_BYTES = 4 * 1024 * 1024;
/** A uevent is at most UEVENT_BUFFER_SIZE (2048) bytes of environment plus its header. */
const DATAGRAM_BYTES = 8192;

/** What one read of the socket gave: the events, and whether the kernel dropped some. */
export interface UeventBatch {
  events: Uevent[];
  /** The receive queue overflowed (ENOBUFS): events were lost, so state must be read again. */
  overflowed: boolean;
}

/** A socket receiving the kernel's uevents. */
export class UeventSocket extends OwnedFd {
  /** Opens and binds the socket; throws NativeError (socket/bind) when it cannot. */
  constructor() {
    const c = libc();
    const fd = c.socket(
      AF_NETLINK,
      SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
      NETLINK_KOBJECT_UEVENT,
    );
    if (fd < 0) throw new NativeError("socket", errno());
    super(fd);
    try {
      const size = new Uint8Array(4);
      new DataView(size.buffer).setInt32(0, RCVBUF_BYTES, true);
      // Past rmem_max when root may; the plain option (capped at rmem_max) otherwise.
      if (c.setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, size, 4) < 0) {
        c.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, size, 4);
      }
      const sa = new Uint8Array(SOCKADDR_NL.$size);
      const dv = new DataView(sa.buffer);
      dv.setUint16(SOCKADDR_NL.nl_family, AF_NETLINK, true);
      dv.setUint32(SOCKADDR_NL.nl_groups, KERNEL_GROUP, true);
      if (c.bind(fd, sa, sa.length) < 0) throw new NativeError("bind", errno());
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** Reads every datagram queued now, without blocking. */
  drain(): UeventBatch {
    const c = libc();
    const buf = new Uint8Array(DATAGRAM_BYTES);
    const out: UeventBatch = { events: [], overflowed: false };
    while (this.isOpen) {
      const n = Number(c.recv(this.fd, buf, BigInt(buf.length), 0));
      if (n < 0) {
        const e = errno();
        if (e === ENOBUFS) {
          out.overflowed = true;
          continue;
        }
        if (e === EINTR) continue;
        if (wouldBlock(e)) break;
        throw new NativeError("recv", e);
      }
      const ev = parseUevent(buf.subarray(0, n));
      if (ev) out.events.push(ev);
    }
    return out;
  }

  /**
   * Waits up to `timeoutMs` for uevents (off the main thread), then reads them all. An empty
   * batch when the time ran out; CancelledError when `cancel` fired.
   */
  async next(timeoutMs: number, cancel?: Canceller): Promise<UeventBatch> {
    const ready = await waitReadable(this.fd, timeoutMs, cancel);
    return ready ? this.drain() : { events: [], overflowed: false };
  }
}
