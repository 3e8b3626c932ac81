/**
 * Reachability of an NVMe/TCP listener from user space: a TCP connect to the port (bounded), then
 * the ICReq a Linux host sends first, and whatever comes back, kept as it came. An ICResp is
 * followed by nothing: this side shuts its half (FIN) and waits briefly for the target to close
 * its own, so nvmet-tcp releases the queue at once rather than keeping a half-open one.
 * `classifyTcpProbe` turns the outcome into the verdict.
 */
import { hostPort } from "../net/address.ts";
import { ECONNREFUSED, ECONNRESET, EHOSTUNREACH, ENETUNREACH } from "../errno.ts";
import { errnoName } from "../errors.ts";
import {
  decodeIcResp,
  decodePduHeader,
  decodeTermReq,
  encodeIcReq,
  IC_PDU_SIZE,
  type IcResp,
  NVME_TCP_FES,
  NVME_TCP_PDU,
  NVME_TCP_PFV_1_0,
  PDU_HEADER_SIZE,
  TERM_PDU_HEADER_SIZE,
  type TermReq,
} from "../fabrics/tcp_pdu.ts";
import { type Check, check } from "./check.ts";
import { ipUp, type IpView } from "./ip_checks.ts";
import { timer } from "../timer.ts";

/** The smallest MAXH2CDATA a Linux host accepts (NVME_TCP_MIN_MAXH2CDATA); it must be a multiple of 4. */
export const MIN_MAXH2CDATA = 4096;

/** What happened, in order of how far the probe got. */
export type TcpProbeResult =
  /** The connect could not be attempted here (bad address, no socket). */
  | "local_error"
  /** RST to the SYN: nothing listens on the port. */
  | "refused"
  /** ICMP host/network unreachable, or no ARP answer. */
  | "unreachable"
  /** No answer to the SYN within the bound. */
  | "timeout"
  /** Connected; no byte came back to the ICReq within the bound. */
  | "silent"
  /** Connected; the peer closed (FIN) without a byte. */
  | "closed"
  /** Connected; the peer reset the connection without a byte. */
  | "reset"
  /** A C2HTermReq: an NVMe/TCP target that refused the ICReq. */
  | "term"
  /** Bytes that are not an ICResp. */
  | "not_icresp"
  /** An ICResp. */
  | "icresp";

/** What the probe saw. */
export interface TcpProbeOutcome {
  traddr: string;
  trsvcid: number;
  result: TcpProbeResult;
  /** The bound on the connect and on the wait for the answer. */
  timeoutMs: number;
  /** The errno name of a failed connect or read (ECONNREFUSED …). */
  errno?: string;
  /** Time to the connection, when there was one. */
  connectMs?: number;
  /** The first bytes that came back (at most 128). */
  bytes?: Uint8Array;
  icresp?: IcResp;
  term?: TermReq;
  /** Why the answer is not an ICResp. */
  notIcResp?: string;
  /**
   * After our FIN, how the target ended its side within timeoutMs: its own FIN, or a reset
   * (nvmet-tcp sets SO_LINGER 0 on its queues, so releasing one resets the connection); "open"
   * when it had done neither by then.
   */
  targetClose?: "fin" | "reset" | "open";
  /** How long after our FIN the target ended its side. */
  targetCloseMs?: number;
  /** A local failure before anything was sent. */
  localError?: string;
}

/** The errno name in a Deno network error (`code`), if any. */
function codeOf(err: unknown): string | undefined {
  const c = (err as { code?: unknown }).code;
  return typeof c === "string" ? c : undefined;
}

/** One read bounded by ms: the bytes read, "eof", "timeout", or the error's code. */
async function readWithin(
  conn: Deno.TcpConn,
  buf: Uint8Array,
  ms: number,
): Promise<number | "eof" | "timeout" | { error: string }> {
  const t = timer(ms);
  const read = conn.read(buf).then(
    (n) => n === null ? "eof" as const : n,
    (err) => ({ error: codeOf(err) ?? (err as Error).message }),
  );
  try {
    return await Promise.race([read, t.done.then(() => "timeout" as const)]);
  } finally {
    t.cancel();
  }
}

/**
 * Reads what answers the ICReq: a whole ICResp (128 bytes) or terminate request header (24), or
 * whatever else arrives first (up to 128 bytes). Stops at the deadline.
 */
async function readAnswer(
  conn: Deno.TcpConn,
  deadline: number,
): Promise<{ bytes: Uint8Array; end?: "eof" | "timeout" | { error: string } }> {
  const buf = new Uint8Array(IC_PDU_SIZE);
  let got = 0;
  for (;;) {
    if (got >= PDU_HEADER_SIZE && got >= expected(buf.subarray(0, got))) {
      return { bytes: buf.slice(0, got) };
    }
    const r = await readWithin(conn, buf.subarray(got), Math.max(1, deadline - Date.now()));
    if (typeof r !== "number") return { bytes: buf.slice(0, got), end: r };
    got += r;
  }
}

/** How many bytes to read once the common header is in. */
function expected(b: Uint8Array): number {
  const h = decodePduHeader(b)!;
  if (h.type === NVME_TCP_PDU.ICRESP && h.hlen === IC_PDU_SIZE) return IC_PDU_SIZE;
  if (h.type === NVME_TCP_PDU.C2H_TERM && h.hlen === TERM_PDU_HEADER_SIZE) {
    return TERM_PDU_HEADER_SIZE;
  }
  return b.length; // something else: what came is what we judge
}

/**
 * Shuts our side (FIN) and waits up to ms for the peer to end its own, discarding what it still
 * sends: a FIN, or a reset (nvmet-tcp releases the queue and closes with SO_LINGER 0).
 */
async function closeCleanly(
  conn: Deno.TcpConn,
  ms: number,
): Promise<Pick<TcpProbeOutcome, "targetClose" | "targetCloseMs">> {
  const start = performance.now();
  const took = () => Math.round(performance.now() - start);
  try {
    await conn.closeWrite();
  } catch {
    return { targetClose: "reset", targetCloseMs: 0 };
  }
  const deadline = Date.now() + ms;
  const sink = new Uint8Array(4096);
  while (Date.now() < deadline) {
    const r = await readWithin(conn, sink, deadline - Date.now());
    if (r === "eof") return { targetClose: "fin", targetCloseMs: took() };
    if (typeof r === "object") return { targetClose: "reset", targetCloseMs: took() };
    if (r === "timeout") break;
  }
  return { targetClose: "open" };
}

/** The outcome of a connect that failed with `err`. */
function connectFailure(err: unknown): Pick<TcpProbeOutcome, "result" | "errno" | "localError"> {
  const code = codeOf(err);
  if (code === errnoName(ECONNREFUSED)) return { result: "refused", errno: code };
  if (code === errnoName(EHOSTUNREACH) || code === errnoName(ENETUNREACH)) {
    return { result: "unreachable", errno: code };
  }
  return { result: "local_error", errno: code, localError: (err as Error).message };
}

/** The outcome from the bytes that answered the ICReq. */
function judgeAnswer(bytes: Uint8Array): Partial<TcpProbeOutcome> {
  const term = decodeTermReq(bytes);
  if (term) return { result: "term", term };
  const r = decodeIcResp(bytes);
  if ("error" in r) return { result: "not_icresp", notIcResp: r.error };
  return { result: "icresp", icresp: r };
}

/**
 * Connects to traddr:trsvcid over TCP, sends an ICReq (no digests, as `nvme connect` asks by
 * default) and reads the answer; the connect, the answer and the target's close after ours are
 * each bounded by `timeoutMs`.
 */
export async function probeNvmeTcp(
  traddr: string,
  trsvcid: number,
  opts: { timeoutMs: number },
): Promise<TcpProbeOutcome> {
  const base = { traddr, trsvcid, timeoutMs: opts.timeoutMs };
  const abort = new AbortController();
  const t = timer(opts.timeoutMs);
  t.done.then(() => abort.abort());
  const start = performance.now();
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: traddr, port: trsvcid, signal: abort.signal });
  } catch (err) {
    if (abort.signal.aborted) return { ...base, result: "timeout" };
    return { ...base, ...connectFailure(err) };
  } finally {
    t.cancel();
  }
  const connectMs = Math.round(performance.now() - start);
  try {
    conn.setNoDelay(true);
    await conn.write(encodeIcReq());
    const { bytes, end } = await readAnswer(conn, Date.now() + opts.timeoutMs);
    const out: TcpProbeOutcome = { ...base, result: "silent", connectMs, bytes };
    if (bytes.length > 0) Object.assign(out, judgeAnswer(bytes));
    else if (end === "eof") out.result = "closed";
    else if (typeof end === "object") {
      out.result = end.error === errnoName(ECONNRESET) ? "reset" : "closed";
      out.errno = end.error;
    }
    if (end !== "timeout") Object.assign(out, await closeCleanly(conn, opts.timeoutMs));
    return out;
  } catch (err) {
    // The write failed: the peer reset the connection at once.
    const code = codeOf(err);
    return {
      ...base,
      connectMs,
      result: code === errnoName(ECONNRESET) ? "reset" : "closed",
      errno: code,
    };
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

/** Printable ASCII as text, anything else as hex. */
function showBytes(b: Uint8Array): string {
  const head = b.subarray(0, 32);
  const text = new TextDecoder().decode(head);
  if (/^[\x20-\x7e\r\n\t]+$/.test(text)) return `'${text.replace(/\r?\n/g, "\\n")}'`;
  return [...head].map((x) => x.toString(16).padStart(2, "0")).join(" ");
}

/** The ICResp in words. */
function icrespText(r: IcResp): string {
  const digests = r.hdgst || r.ddgst
    ? [r.hdgst && "header", r.ddgst && "data"].filter(Boolean).join(" and ") + " digest on"
    : "no digests";
  return `PFV ${r.pfv}${r.pfv === NVME_TCP_PFV_1_0 ? " (1.0)" : ""}, ${digests}, CPDA ${r.cpda}, ` +
    `MAXH2CDATA ${r.maxh2cdata} bytes`;
}

/** What a Linux host would refuse in this ICResp (drivers/nvme/host/tcp.c), asked for no digests. */
export function icrespProblems(r: IcResp): string[] {
  const p: string[] = [];
  if (r.pfv !== NVME_TCP_PFV_1_0) p.push(`PFV ${r.pfv} (only 0, version 1.0, exists)`);
  if (r.hdgst || r.ddgst) p.push("digests turned on that were not asked for");
  if (r.cpda !== 0) p.push(`CPDA ${r.cpda} (a Linux host takes only 0)`);
  if (r.maxh2cdata < MIN_MAXH2CDATA || r.maxh2cdata % 4 !== 0) {
    p.push(`MAXH2CDATA ${r.maxh2cdata} (at least ${MIN_MAXH2CDATA} and a multiple of 4)`);
  }
  return p;
}

/** The outcome as data for `-o json` (spec field names). */
export function tcpProbeFound(o: TcpProbeOutcome): Record<string, unknown> {
  return {
    trtype: "tcp",
    result: o.result,
    ...(o.errno ? { errno: o.errno } : {}),
    ...(o.connectMs !== undefined ? { connect_ms: o.connectMs } : {}),
    ...(o.icresp ? { icresp: o.icresp } : {}),
    ...(o.term ? { c2h_term: o.term } : {}),
    ...(o.result === "not_icresp" && o.bytes ? { reply: showBytes(o.bytes) } : {}),
    ...(o.targetClose ? { target_close: o.targetClose } : {}),
    ...(o.targetCloseMs !== undefined ? { target_close_ms: o.targetCloseMs } : {}),
  };
}

/**
 * The probe's outcome as the `reach.listener` check. `ip` (the ICMP echo and ARP evidence) tells
 * a firewall that drops the port from an address nobody answers for.
 */
export function classifyTcpProbe(o: TcpProbeOutcome, ip?: IpView): Check {
  const id = "reach.listener";
  const where = hostPort(o.traddr, o.trsvcid);
  const found = tcpProbeFound(o);
  const c = (status: Check["status"], seen: string, fix?: string): Check => ({
    ...check(id, status, seen, fix),
    found,
  });
  const portFix =
    `on the target, create a tcp port for ${o.traddr} ${o.trsvcid} and link a subsystem to it (nvmeof ` +
    `target up with a port of trtype tcp, or: mkdir /sys/kernel/config/nvmet/ports/1; cd there; echo tcp > ` +
    `addr_trtype; echo ${
      o.traddr.includes(":") ? "ipv6" : "ipv4"
    } > addr_adrfam; echo ${o.traddr} > ` +
    `addr_traddr; echo ${o.trsvcid} > addr_trsvcid; ln -s /sys/kernel/config/nvmet/subsystems/NQN ` +
    `subsystems/NQN; nvmet binds the port when the first subsystem is linked), or connect to the port ` +
    `it does listen on (grep . /sys/kernel/config/nvmet/ports/*/addr_* on the target)`;
  const whoListens =
    `on the target: ss -ltnp 'sport = :${o.trsvcid}' names the program on that port ` +
    "(nvmet-tcp's listener is a kernel socket and shows no process)";
  const after = o.targetClose === undefined
    ? ""
    : o.targetClose === "open"
    ? `; closed this side, but the target had not closed its own ${o.timeoutMs} ms later ` +
      "(it may still be releasing the queue)"
    : `; closed again: the target ended its side ${o.targetCloseMs} ms after this one ` +
      `(${
        o.targetClose === "fin" ? "FIN" : "reset, as nvmet-tcp closes a queue"
      }): no queue left behind`;
  switch (o.result) {
    case "local_error":
      return c("skip", `could not open a TCP connection to ${where}: ${o.localError}`);
    case "refused":
      return c(
        "fail",
        `nothing listens at ${where}: the TCP connect was refused (${o.errno}): the host is up, but ` +
          `no socket is bound to port ${o.trsvcid} on ${o.traddr} (the target's tcp port is not enabled, ` +
          "is for another address or port, or a firewall rejects it with a TCP reset)",
        portFix,
      );
    case "unreachable":
      return c(
        "fail",
        `cannot reach ${where}: the TCP connect failed with ${o.errno} (no route or no ARP answer, or ` +
          "a firewall rejecting with ICMP host-prohibited)",
        `check the route and the address: ip route get ${o.traddr}; ping -c 3 ${o.traddr}; on the ` +
          "target: nft list ruleset (a reject rule)",
      );
    case "timeout": {
      const up = ip ? ipUp(ip) : undefined;
      if (up?.up) {
        return c(
          "fail",
          `TCP port ${o.trsvcid} blocked: ${o.traddr} ${up.how}, but the TCP connect to ${where} got ` +
            `no answer within ${o.timeoutMs} ms (no SYN-ACK, no reset): a firewall drops it, on the ` +
            "target or between",
          `on the target: nft list ruleset | grep ${o.trsvcid} (or iptables -S | grep ${o.trsvcid}); ` +
            `allow tcp dport ${o.trsvcid} from this host, and check the ACLs of the switches between`,
        );
      }
      if (up) {
        return c(
          "fail",
          `no answer from ${where}: the TCP connect timed out after ${o.timeoutMs} ms and ${o.traddr} ` +
            `${up.how}: the address is wrong or the target is down (see reach.address)`,
          `check the address: on the target, ip -br addr | grep -w ${o.traddr}; from here, ping -c 3 ${o.traddr}`,
        );
      }
      return c(
        "fail",
        `no answer from ${where}: the TCP connect timed out after ${o.timeoutMs} ms: a firewall drops ` +
          "the port, or nobody has that address",
        `ping -c 3 ${o.traddr}; on the target: nft list ruleset | grep ${o.trsvcid}`,
      );
    }
    case "silent":
      return c(
        "fail",
        `something accepted the TCP connection at ${where} (in ${o.connectMs} ms) but sent nothing back ` +
          `to the NVMe/TCP ICReq within ${o.timeoutMs} ms: it is not an NVMe/TCP target (another ` +
          "service, or a proxy, holds that port)",
        `${whoListens}; connect to the port the NVMe/TCP target listens on (4420 for I/O, 8009 for discovery)`,
      );
    case "closed":
    case "reset":
      return c(
        "fail",
        `the TCP connection to ${where} was accepted, then ${
          o.result === "reset" ? `reset (${o.errno ?? "ECONNRESET"})` : "closed"
        } without an answer to the ICReq: nvmet-tcp does this when it refuses the ICReq, and when ` +
          "the port requires TLS (addr_tsas tls); another service does it on bytes it does not expect",
        `on the target: dmesg | grep nvmet_tcp (the reason it refused), grep . ` +
          `/sys/kernel/config/nvmet/ports/*/addr_tsas; ${whoListens}`,
      );
    case "term": {
      const t = o.term!;
      return c(
        "fail",
        `an NVMe/TCP target listens at ${where} but ended the connection with a terminate request: ` +
          `FES ${t.fes} (${NVME_TCP_FES[t.fes] ?? "unknown"}), FEI ${t.fei}${after}`,
        "the target refused a standard Linux host ICReq: read its kernel log (dmesg | grep nvmet_tcp)",
      );
    }
    case "not_icresp":
      return c(
        "fail",
        `something other than an NVMe/TCP target listens at ${where}: it answered the ICReq with ` +
          `${o.bytes!.length} byte(s) that are not an ICResp (${o.notIcResp}): ${
            showBytes(o.bytes!)
          }`,
        `${whoListens}; connect to the port the NVMe/TCP target listens on (4420 for I/O, 8009 for discovery)`,
      );
    case "icresp": {
      const r = o.icresp!;
      const problems = icrespProblems(r);
      if (problems.length) {
        return c(
          "fail",
          `an NVMe/TCP target answers at ${where}, but with an ICResp a Linux host refuses: ` +
            `${problems.join("; ")} (${icrespText(r)})${after}`,
          "the target does not follow the NVMe/TCP spec for these fields: update its software, or " +
            "use a host that accepts them",
        );
      }
      return c(
        "ok",
        `an NVMe/TCP target answers at ${where}: ICResp ${icrespText(r)} (connected in ` +
          `${o.connectMs} ms)${after}`,
      );
    }
  }
}
