/**
 * Failover on host1's multipath head: two rdma paths to one subsystem (link 0 and link 1),
 * connected by `nvmeof connect -a A -a B` (the HA profile), verified random writes (fio, direct,
 * QD 16) while the link of the path carrying the I/O (a) loses carrier at both ends or (b) is
 * blackholed, then (d) comes back. Each run: zero fio errors and data verified, the pause bounded,
 * the cut path's states (live → connecting → live) and back within a bound.
 *
 * The fio run, the path poller and the figures are scripts/bench_ha.sh's guest helpers, the same
 * code the benchmark measures with. Bounds are generous (TCG on a shared machine): the kernel's
 * defaults (keep-alive 5 s, reconnect every 10 s) measured 10-15 s of pause and 10-20 s until the
 * path was back; the bounds sit below the pause and above the HA profile's spread.
 */
import assert from "node:assert/strict";
import { must, on, setLink } from "./fabric.ts";

const BENCH = "scripts/bench_ha.sh guest";
/** Seconds each fault lasts. */
const CUT = 15;
/** The pause the HA profile must stay under (the kernel's defaults: 10-15 s). */
const PAUSE_BOUND_MS = 8000;
/** Seconds after the link is back by which the cut path must be live again. */
const BACK_BOUND_S = 30;

interface Report {
  errors: number | string;
  writes: number;
  verified: number;
  clat_max_ms: number;
  pause_cut_ms: number;
  pause_back_ms: number;
  back_s: number | "never";
  tx_back_kib: number;
  states: [number, string][];
}

async function failover(
  tag: string,
  fault: (link: 0 | 1) => Promise<[string, string]>,
): Promise<Report> {
  await must("target", `${BENCH} target_up`);
  try {
    const dev = (await must("host1", `${BENCH} host_connect nvmeof numa`)).trim();
    assert.match(dev, /^\/dev\/nvme\d+n1$/);
    // Both paths live before the fault.
    const before = await must(
      "host1",
      `${BENCH} ctrls | while read n a; do echo "$a $(cat /sys/class/nvme/$n/state)"; done`,
    );
    assert.deepEqual(before.trim().split("\n").sort(), ["10.78.0.1 live", "10.78.1.1 live"]);
    const work = `/tmp/ha_test/${tag}`;
    await must("host1", `rm -rf ${work}; ${BENCH} io_start ${dev} ${work} 400`);
    await new Promise((r) => setTimeout(r, 8000));
    const link = Number((await must("host1", `${BENCH} busy_link ${work}`)).trim()) as 0 | 1;
    const addr = `10.78.${link}.1`;
    const [cutAt, backAt] = await fault(link);
    await must("host1", `${BENCH} io_finish ${work} ${addr} 90`, { timeout: 600 });
    const r = JSON.parse(
      await must("host1", `${BENCH} report ${work} ${cutAt} ${backAt} ${addr}`),
    ) as Report;
    console.log(`${tag}: link ${link}: ${JSON.stringify(r)}`);
    return r;
  } finally {
    await on("host1", `pkill -INT -x fio; ${BENCH} host_disconnect`);
    await on("target", `${BENCH} target_down`);
  }
}

function assertCommon(r: Report): void {
  assert.equal(r.errors, 0, "fio saw an error");
  assert.ok(r.writes > 0 && r.verified > 0, `writes ${r.writes}, verified ${r.verified}`);
  assert.ok(
    r.pause_cut_ms < PAUSE_BOUND_MS,
    `no completion for ${r.pause_cut_ms} ms during the cut (bound ${PAUSE_BOUND_MS})`,
  );
  assert.notEqual(r.back_s, "never", "the cut path never came back");
  assert.ok((r.back_s as number) < BACK_BOUND_S, `path back after ${r.back_s} s`);
  // The cut path was live, left live during the cut, and was live again at the end.
  const states = r.states.map(([, s]) => s);
  assert.equal(states[0], "live");
  assert.ok(states.some((s) => s === "connecting" || s === "resetting"), states.join(" "));
  assert.equal(states[states.length - 1], "live");
}

Deno.test("(a) carrier loss on the busy path's link at both ends: no error, pause bounded, the path comes back", async () => {
  const r = await failover("carrier", async (link) => {
    await setLink("target", link, false, "host1");
    await setLink("host1", link, false);
    await new Promise((res) => setTimeout(res, CUT * 1000));
    await setLink("target", link, true, "host1");
    await setLink("host1", link, true);
    return ["carrier", "carrier"];
  });
  assertCommon(r);
});

Deno.test("(b) the busy path's link blackholed (carrier up): no error, pause bounded, the path comes back", async () => {
  const r = await failover("blackhole", async (link) => {
    const cut = (await must("host1", `${BENCH} blackhole ${link} on`)).trim();
    await new Promise((res) => setTimeout(res, CUT * 1000));
    const back = (await must("host1", `${BENCH} blackhole ${link} off`)).trim();
    return [cut, back];
  });
  assertCommon(r);
});
