/**
 * ICMP echo without spawning `ping`: a ping socket (SOCK_DGRAM, IPPROTO_ICMP; allowed when the
 * caller's group is in net.ipv4.ping_group_range) or, refused that, a raw socket (root), connected
 * to the target, with "don't fragment" set so a probe of N bytes tells whether the path carries N.
 * Waits are bounded polls off the main thread.
 */
import {
  AF_INET,
  AF_INET6,
  errno,
  IP_MTU_DISCOVER,
  IP_PMTUDISC_DO,
  IPPROTO_ICMP,
  IPPROTO_ICMPV6,
  IPV6_MTU_DISCOVER,
  libc,
  SOCK_CLOEXEC,
  SOCK_DGRAM,
  SOCK_NONBLOCK,
  SOCK_RAW,
  SOL_IP,
  SOL_IPV6,
} from "../../ffi/libc.ts";
import { EACCES, EAGAIN, EPERM } from "../errno.ts";
import { errnoName, NativeError } from "../errors.ts";
import { OwnedFd } from "../fd.ts";
import { isIpv4, sockaddr } from "./address.ts";
import { waitReadable } from "../wait.ts";
import { echoRequest, type IpFamily, parseEchoReply, payloadForIpSize } from "./icmp.ts";

/** Room for any reply to a probe (the largest IP packet). */
const RECV_BUFFER = 65536;
const SIXTEEN_BITS = 0xffff;
/** Round trip times are reported to 0.1 ms. */
const RTT_DECIMALS = 10;

/** An ICMP echo socket connected to one address. */
export class EchoSocket extends OwnedFd {
  readonly family: IpFamily;
  /** "ping": SOCK_DGRAM, the kernel matches replies; "raw": SOCK_RAW, replies carry the IP header. */
  readonly kind: "ping" | "raw";
  readonly #id = Math.floor(Math.random() * SIXTEEN_BITS);
  readonly #buf = new Uint8Array(RECV_BUFFER);

  private constructor(fd: number, family: IpFamily, kind: "ping" | "raw") {
    super(fd);
    this.family = family;
    this.kind = kind;
  }

  /** Opens a ping socket (else a raw one) to `addr`, DF set. Throws NativeError when neither opens. */
  static open(addr: string): EchoSocket {
    const family: IpFamily = isIpv4(addr) ? 4 : 6;
    const c = libc();
    const domain = family === 4 ? AF_INET : AF_INET6;
    const proto = family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
    let kind: "ping" | "raw" = "ping";
    let fd = c.socket(domain, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
    let e = fd < 0 ? errno() : 0;
    if (fd < 0 && (e === EACCES || e === EPERM)) {
      kind = "raw";
      fd = c.socket(domain, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
      e = fd < 0 ? errno() : 0;
    }
    if (fd < 0) {
      throw new NativeError("socket", e, {
        message: `Cannot open an ICMP echo socket: ${errnoName(e)} (${e}).`,
        hint: "A ping socket needs the caller's group in net.ipv4.ping_group_range " +
          "(sysctl net.ipv4.ping_group_range='0 2147483647'); a raw socket needs root (CAP_NET_RAW).",
      });
    }
    const s = new EchoSocket(fd, family, kind);
    try {
      const opt = new Int32Array([IP_PMTUDISC_DO]);
      const level = family === 4 ? SOL_IP : SOL_IPV6;
      const name = family === 4 ? IP_MTU_DISCOVER : IPV6_MTU_DISCOVER;
      if (c.setsockopt(fd, level, name, new Uint8Array(opt.buffer), opt.byteLength) < 0) {
        const e = errno();
        throw new NativeError("setsockopt", e, {
          message: `Cannot set "don't fragment" on the ICMP socket: ${errnoName(e)} (${e}).`,
        });
      }
      const sa = sockaddr(addr.split("%")[0], 0);
      if (c.connect(fd, sa, sa.length) < 0) {
        const e = errno();
        throw new NativeError("connect", e, {
          message: `Cannot address ICMP echo to ${addr}: ${errnoName(e)} (${e}).`,
        });
      }
    } catch (err) {
      s.close();
      throw err;
    }
    return s;
  }

  /** Sends echo request `seq` as an IP packet of `ipSize` bytes; returns 0 or the errno. */
  send(seq: number, ipSize: number): number {
    const pkt = echoRequest({
      family: this.family,
      id: this.#id,
      seq,
      payload: Math.max(0, payloadForIpSize(ipSize, this.family)),
    });
    const n = libc().send(this.fd, pkt, BigInt(pkt.length), 0);
    return n < 0 ? errno() : 0;
  }

  /**
   * Waits up to `timeoutMs` for the reply to `seq`. Returns its payload size, an errno the kernel
   * reported on the socket (EHOSTUNREACH when the neighbour did not answer), or undefined.
   */
  async receive(
    seq: number,
    timeoutMs: number,
  ): Promise<{ payload: number } | { errno: number } | undefined> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      if (!await waitReadable(this.fd, Math.ceil(left))) return undefined;
      const n = Number(libc().recv(this.fd, this.#buf, BigInt(this.#buf.length), 0));
      if (n < 0) {
        const e = errno();
        if (e === EAGAIN) continue;
        return { errno: e };
      }
      const r = parseEchoReply(this.#buf.subarray(0, n), {
        family: this.family,
        ipHeader: this.kind === "raw" && this.family === 4,
      });
      if (!r || r.seq !== (seq & SIXTEEN_BITS)) continue;
      if (this.kind === "raw" && r.id !== this.#id) continue;
      return { payload: r.payload };
    }
  }
}

/** What one echo probe of a given size saw. */
export interface EchoOutcome {
  /** IP packet size sent, DF set. */
  ipSize: number;
  answered: boolean;
  rttMs?: number;
  /** errno name when sending failed (EMSGSIZE: bigger than the route's MTU) or the kernel reported one. */
  error?: string;
  /** IP fragments reassembled while waiting: the reply came back in pieces. */
  fragments?: number;
}

let nextSeq = 1;

/**
 * Sends up to `tries` echo requests of `ipSize` bytes, each waited for `timeoutMs`; stops at the
 * first reply. `reassembled` reads a counter of fragments received (to see a fragmented reply).
 */
export async function echo(
  s: EchoSocket,
  ipSize: number,
  o: { tries: number; timeoutMs: number; reassembled?: () => number | undefined },
): Promise<EchoOutcome> {
  let error: string | undefined;
  for (let i = 0; i < o.tries; i++) {
    const seq = nextSeq++;
    const before = o.reassembled?.();
    const t0 = performance.now();
    const e = s.send(seq, ipSize);
    if (e) return { ipSize, answered: false, error: errnoName(e) };
    const r = await s.receive(seq, o.timeoutMs);
    if (r && "payload" in r) {
      const after = o.reassembled?.();
      const out: EchoOutcome = {
        ipSize,
        answered: true,
        rttMs: Math.round((performance.now() - t0) * RTT_DECIMALS) / RTT_DECIMALS,
      };
      if (before !== undefined && after !== undefined && after > before) {
        out.fragments = after - before;
      }
      return out;
    }
    if (r) error = errnoName(r.errno);
  }
  return error ? { ipSize, answered: false, error } : { ipSize, answered: false };
}
