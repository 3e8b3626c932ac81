/**
 * A netlink socket to the kernel, through libc: open, send one request, read its answer (a dump
 * ends with NLMSG_DONE, anything else with NLMSG_ERROR). The kernel answers in the send and
 * recv calls themselves, so reading blocks only briefly; a receive timeout bounds it anyway.
 */
import { NLM_F, NLMSG } from "../../ffi/enums.ts";
import {
  AF_NETLINK,
  errno,
  libc,
  SO_RCVTIMEO,
  SOCK_CLOEXEC,
  SOCK_RAW,
  SOL_SOCKET,
} from "../../ffi/libc.ts";
import { SOCKADDR_NL, TIMEVAL } from "../../ffi/libc_structs.ts";
import { errnoName, NativeError } from "../errors.ts";
import { OwnedFd } from "../fd.ts";
import { encodeMessage, messageErrno, type NetlinkMessage, parseMessages } from "./netlink.ts";

const RECV_BYTES = 65536;
const RECV_TIMEOUT_S = 5;

/** A netlink socket of one protocol (NETLINK_RDMA …), bound to an address the kernel picks. */
export class NetlinkSocket extends OwnedFd {
  #seq = Math.floor(Date.now() / 1000);

  /** Opens and binds the socket; throws NativeError (socket/bind/setsockopt) when it cannot. */
  constructor(protocol: number) {
    const c = libc();
    const fd = c.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    if (fd < 0) throw new NativeError("socket", errno());
    super(fd);
    try {
      const sa = new Uint8Array(SOCKADDR_NL.$size);
      new DataView(sa.buffer).setUint16(SOCKADDR_NL.nl_family, AF_NETLINK, true);
      if (c.bind(fd, sa, sa.length) < 0) throw new NativeError("bind", errno());
      const tv = new Uint8Array(TIMEVAL.$size);
      new DataView(tv.buffer).setBigInt64(TIMEVAL.tv_sec, BigInt(RECV_TIMEOUT_S), true);
      if (c.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv, tv.length) < 0) {
        throw new NativeError("setsockopt", errno());
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * Sends a request of `type` with the attributes and NLM_F_REQUEST | NLM_F_DUMP, and returns
   * the messages of the dump (without NLMSG_DONE). An error the kernel reports is a NativeError
   * named after `what` (e.g. "RDMA_NLDEV_CMD_RES_CM_ID_GET").
   */
  dump(type: number, attrs: Uint8Array[], what: string): NetlinkMessage[] {
    if (this.fd < 0) throw new Error("the netlink socket is closed");
    const c = libc();
    const seq = ++this.#seq;
    const req = encodeMessage({ type, flags: NLM_F.REQUEST | NLM_F.DUMP, seq }, attrs);
    const sent = Number(c.send(this.fd, req, BigInt(req.length), 0));
    if (sent < 0) {
      const e = errno();
      throw new NativeError("send", e, {
        message: `${what}: send() failed: ${errnoName(e)} (${e})`,
      });
    }
    const out: NetlinkMessage[] = [];
    const buf = new Uint8Array(RECV_BYTES);
    for (;;) {
      const n = Number(c.recv(this.fd, buf, BigInt(buf.length), 0));
      if (n < 0) {
        const e = errno();
        throw new NativeError("recv", e, {
          message: `${what}: recv() failed: ${errnoName(e)} (${e})`,
        });
      }
      if (n === 0) return out;
      for (const m of parseMessages(buf.slice(0, n))) {
        if (m.seq !== seq) continue;
        const e = messageErrno(m);
        if (e > 0) throw new NativeError(what, e);
        if (m.type === NLMSG.DONE || m.type === NLMSG.ERROR) return out;
        if (m.type !== NLMSG.NOOP) out.push(m);
      }
    }
  }
}
