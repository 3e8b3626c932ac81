/**
 * The floor under nvmeof's write ping: the ping's own connection and buffers (clientSetup in
 * src/rdma/ping.ts, answerHello in src/rdma/ping_server.ts), then the smallest loops a Deno program
 * can spin through FFI for a write ping-pong, written inline. The client posts the WRITE and spins
 * on the echo's last byte; the server spins on the write's last byte, re-arms the other slot and
 * posts the echo; both poll the CQ every 16 spins. No Spinner, no event-loop turn, no payload
 * check: what their round trips cost over C loops' is the runtime's (a JIT-compiled loop calling
 * C through FFI), not the ping's. For scripts/bench_ping_events.sh (FLOOR=1); the client writes
 * its record in ping_tail.ts's form for ping_events.ts, the server says "listening" on stderr.
 *
 *   deno run -A ping_floor.ts client ADDR PORT COUNT SIZE WARMUP OUT.json
 *   deno run -A ping_floor.ts server ADDR PORT CLIENTS
 */
import { checkCompletion } from "../../src/rdma/completion.ts";
import { accept, connect, type Connection, Listener, Trace } from "../../src/rdma/connection.ts";
import { type ClientBuffers, clientSetup } from "../../src/rdma/ping.ts";
import {
  decodeHello,
  isInline,
  pattern,
  payloads,
  shift,
  signalled,
  slotSends,
} from "../../src/rdma/ping_protocol.ts";
import { type Accepted, answerHello } from "../../src/rdma/ping_server.ts";
import { servedClient } from "../../src/rdma/serve.ts";
import type { CompletionQueue } from "../../src/rdma/verbs.ts";

const TIMEOUT_MS = 10000;

/** Reaps the CQ: how many completions it held; throws on a failed one (no echo would come). */
function reap(cq: CompletionQueue): number {
  const got = cq.poll();
  for (let k = 0; k < got; k++) checkCompletion(cq, k, "during the floor loop");
  return got;
}

/** The client's loop: `warmup` untimed iterations, then `n` timed; [start, ms] of each. */
async function client(addr: string, port: number, n: number, size: number, warmup: number) {
  const total = warmup + n;
  const buffers: ClientBuffers = {};
  const conn = await connect(
    { host: addr, port, timeoutMs: TIMEOUT_MS, trace: new Trace(false) },
    clientSetup("write", size, total, buffers),
  );
  const peer = decodeHello(conn.peerData);
  if (!peer) throw new Error("the server's reply is not an nvmeof ping reply");
  const { cq, qp } = conn.ep;
  const inline = isInline(conn.ep, size);
  const sends = slotSends(conn.ep, buffers.tx!, size, peer);
  const expected = payloads(size), pat = pattern(size);
  const bytes = buffers.rx!.bytes, tx = buffers.tx!.bytes;
  const starts = new Float64Array(n), times = new Float64Array(n);
  // Completions reaped (`done`) and signalled posts (`signals`): a signalled post first waits for
  // the ones before it, as the ping does, so the send queue stays bounded.
  let done = 0, signals = 0;
  for (let i = 0; i < total; i++) {
    const slot = i & 1, from = shift(i);
    const last = slot * size + size - 1, want = pat[from + size - 1];
    bytes[last] = want ^ 0xff;
    const signal = signalled(inline, i, total);
    if (signal) {
      while (done < signals) done += reap(cq);
      signals++;
    }
    tx.set(expected[from], slot * size);
    const t0 = performance.now();
    qp.postSend(sends[signal ? 1 : 0][slot].address);
    let spins = 0;
    while (Atomics.load(bytes, last) !== want) if ((++spins & 15) === 0) done += reap(cq);
    const ms = performance.now() - t0;
    const k = i - warmup;
    if (k >= 0) {
      starts[k] = t0;
      times[k] = ms;
    }
  }
  while (done < signals) done += reap(cq);
  conn.close();
  return Array.from(starts, (t, k) => [t, times[k]]);
}

/** The server's echo loop for one accepted write client. */
function echo(conn: Connection, { hello: h, mr }: Accepted): void {
  const { cq, qp } = conn.ep;
  const size = h.size, total = h.count;
  const echoes = slotSends(conn.ep, mr, size, h);
  const inline = isInline(conn.ep, size);
  const pat = pattern(size);
  const bytes = mr.bytes;
  let done = 0, signals = 0;
  for (let i = 0; i < total; i++) {
    const slot = i & 1, from = shift(i);
    const signal = signalled(inline, i, total);
    if (signal) {
      while (done < signals) done += reap(cq);
      signals++;
    }
    const last = slot * size + size - 1, want = pat[from + size - 1];
    let spins = 0;
    while (Atomics.load(bytes, last) !== want) if ((++spins & 15) === 0) done += reap(cq);
    // The other slot's echo has reached the client once it wrote this one: re-arm it for i+1.
    if (i + 1 < total) bytes[(1 - slot) * size + size - 1] = pat[shift(i + 1) + size - 1] ^ 0xff;
    qp.postSend(echoes[signal ? 1 : 0][slot].address);
  }
  while (done < signals) done += reap(cq);
}

/** Serves `clients` write clients in turn. */
async function server(addr: string, port: number, clients: number): Promise<void> {
  using listener = new Listener(addr, port);
  console.error(`floor server listening on ${addr}:${port}`);
  for (let c = 1; c <= clients; c++) {
    const entry = servedClient(c);
    let accepted: Accepted | undefined;
    const conn = await accept(
      listener,
      { timeoutMs: TIMEOUT_MS, trace: new Trace(false) },
      (data) => answerHello(data, entry, (a) => accepted = a),
    );
    if (!conn) throw new Error(`client ${c} rejected: ${entry.error}`);
    try {
      if (accepted!.hello.op !== "write") throw new Error("the floor serves write pings only");
      echo(conn, accepted!);
      if (!await conn.waitDisconnected(TIMEOUT_MS)) throw new Error("no DISCONNECTED in time");
    } finally {
      conn.close();
    }
  }
}

if (import.meta.main) {
  const [mode, addr, port, ...rest] = Deno.args;
  if (mode === "client" && rest.length === 4) {
    const [count, size, warmup, out] = rest;
    const samples = await client(addr, Number(port), Number(count), Number(size), Number(warmup));
    Deno.writeTextFileSync(out, JSON.stringify({ yields: [], samples }));
  } else if (mode === "server" && rest.length === 1) {
    await server(addr, Number(port), Number(rest[0]));
  } else {
    console.error(
      "usage: ping_floor.ts client ADDR PORT COUNT SIZE WARMUP OUT.json\n" +
        "       ping_floor.ts server ADDR PORT CLIENTS",
    );
    Deno.exit(2);
  }
}
