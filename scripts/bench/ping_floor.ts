/**
 * The floor under nvmeof's write ping: the ping's own connection and buffers
 * (src/rdma/ping.ts's clientSetup), then the smallest loop a Deno program can spin through FFI
 * for a write ping-pong, written inline: post the WRITE, spin on the echo's last byte, poll the
 * CQ every 16 spins. No Spinner, no event-loop turn, no payload check; what its round
 * trips cost over a C loop's is the runtime's (a JIT-compiled loop calling C through FFI), not the
 * ping's. For scripts/bench_ping_events.sh (FLOOR=1); writes its record in ping_tail.ts's form
 * for ping_events.ts.
 *
 *   deno run -A ping_floor.ts ADDR PORT COUNT SIZE WARMUP OUT.json
 */
import { checkCompletion } from "../../src/rdma/completion.ts";
import { connect, Trace } from "../../src/rdma/connection.ts";
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

const [addr, port, count, sizeArg, warmupArg, out] = Deno.args;
if (!out) {
  console.error("usage: ping_floor.ts ADDR PORT COUNT SIZE WARMUP OUT.json");
  Deno.exit(2);
}
const n = Number(count), size = Number(sizeArg), warmup = Number(warmupArg);
const total = warmup + n;
const buffers: ClientBuffers = {};
const conn = await connect(
  { host: addr, port: Number(port), timeoutMs: 10000, trace: new Trace(false) },
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
// Completions: those reaped (`done`) and those of the signalled posts (`signals`); a signalled
// post first waits for the ones before it, as the ping does, so the send queue stays bounded.
let done = 0, signals = 0;
/** Reaps the CQ: how many completions it held; throws on a failed one (the echo would never come). */
function reap(): number {
  const got = cq.poll();
  for (let k = 0; k < got; k++) checkCompletion(cq, k, "during the floor loop");
  return got;
}
for (let i = 0; i < total; i++) {
  const slot = i & 1, from = shift(i);
  const last = slot * size + size - 1, want = pat[from + size - 1];
  bytes[last] = want ^ 0xff;
  const signal = signalled(inline, i, total);
  if (signal) {
    while (done < signals) done += reap();
    signals++;
  }
  tx.set(expected[from], slot * size);
  const t0 = performance.now();
  qp.postSend(sends[signal ? 1 : 0][slot].address);
  let spins = 0;
  while (Atomics.load(bytes, last) !== want) if ((++spins & 15) === 0) done += reap();
  const ms = performance.now() - t0;
  const k = i - warmup;
  if (k >= 0) {
    starts[k] = t0;
    times[k] = ms;
  }
}
while (done < signals) done += reap();
conn.close();
Deno.writeTextFileSync(
  out,
  JSON.stringify({ yields: [], samples: Array.from(starts, (t, k) => [t, times[k]]) }),
);
