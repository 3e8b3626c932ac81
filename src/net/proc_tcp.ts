/**
 * TCP connections as the kernel lists them in /proc/net/tcp and /proc/net/tcp6 (kernel sockets,
 * such as nvmet-tcp's queues, included). Each line:
 *   `sl: LOCAL:PORT REMOTE:PORT ST …` with addresses in hex of the in-memory words (%08X of each
 *   32-bit word, so little-endian bytes come out reversed) and ports in hex host order.
 */
import { readText } from "../host/kfs.ts";
import { formatIp, type SocketAddress } from "./address.ts";

/** The `st` column of an established connection (TCP_ESTABLISHED in include/net/tcp_states.h). */
export const TCP_ESTABLISHED = 0x01;

/** The `st` column of a listening socket (TCP_LISTEN in include/net/tcp_states.h). */
export const TCP_LISTEN = 0x0a;

/** One connection. */
export interface TcpConnection {
  local: SocketAddress;
  remote: SocketAddress;
  /** The kernel's TCP state number (TCP_ESTABLISHED = 1, TCP_LISTEN = 10 …). */
  state: number;
}

function hexAddress(text: string): SocketAddress | undefined {
  const m = /^([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})$/.exec(text);
  if (!m) return undefined;
  const hex = m[1];
  const bytes = new Uint8Array(hex.length / 2);
  // Each 32-bit word was printed as a number: its bytes, in memory order, are reversed in the text.
  for (let w = 0; w < hex.length / 8; w++) {
    for (let b = 0; b < 4; b++) {
      bytes[w * 4 + b] = parseInt(hex.slice(w * 8 + (3 - b) * 2, w * 8 + (3 - b) * 2 + 2), 16);
    }
  }
  return { address: formatIp(bytes), port: parseInt(m[2], 16) };
}

/** The connections in the text of /proc/net/tcp or /proc/net/tcp6 (the header line is skipped). */
export function parseProcNetTcp(text: string): TcpConnection[] {
  const out: TcpConnection[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || !/^\d+:$/.test(f[0])) continue;
    const local = hexAddress(f[1]);
    const remote = hexAddress(f[2]);
    const state = parseInt(f[3], 16);
    if (local && remote && Number.isFinite(state)) out.push({ local, remote, state });
  }
  return out;
}

/** TCP sockets (IPv4 and IPv6) in state `state` below the procfs root `proc`; [] if unreadable. */
export function tcpSockets(proc: string, state: number): TcpConnection[] {
  const out: TcpConnection[] = [];
  for (const f of ["net/tcp", "net/tcp6"]) {
    let text: string;
    try {
      text = readText(`${proc}/${f}`, 1 << 24);
    } catch {
      continue;
    }
    out.push(...parseProcNetTcp(text).filter((c) => c.state === state));
  }
  return out;
}

/** Established TCP connections (IPv4 and IPv6) below the procfs root `proc`; [] if unreadable. */
export function establishedTcp(proc: string): TcpConnection[] {
  return tcpSockets(proc, TCP_ESTABLISHED);
}
