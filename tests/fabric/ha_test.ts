/**
 * Failover on host1's multipath head: two rdma paths to one subsystem (link 0 and link 1),
 * connected by `nvmeof connect -a A -a B` (the HA profile), verified random writes (fio, direct,
 * QD 16) while the link of the path carrying the I/O (a) loses carrier at both ends or (b) is
 * blackholed, then (d) comes back. Each run: zero fio errors and data verified, the pause bounded,
 * the cut path's states (live → connecting → live) and back within a bound.
 *
 * The fio run, the path poller and the figures are guest_faults.sh's helpers, the same
 * code the benchmark (scripts/bench/ha.sh) measures with. The kernel's defaults (keep-alive 5 s, reconnect every 10 s)
 * measured 10-15 s of pause and 10-20 s until the path was back; the keep-alive of 1 s alone
 * 4.4-4.8 s; the HA profile with its 2 s I/O timeout on each path 1.9-2.1 s. The pause bound sits
 * between the last two, so it fails when the I/O timeout does not act; connecting also checks that
 * each path's queue has it.
 */
import assert from "node:assert/strict";
import { must, setLink } from "./fabric.ts";
import { assertIoClean, failover, FAULTS, FAULTS_RIG, type Report } from "./ha.ts";

/** Seconds each fault lasts. */
const CUT = 15;
/** The pause the HA profile must stay under (its I/O timeout: 2-3 s; keep-alive alone: 4.4-4.8 s). */
const PAUSE_BOUND_MS = 4000;
/** Seconds after the link is back by which the cut path must be live again. */
const BACK_BOUND_S = 30;

function assertCommon(r: Report): void {
  assertIoClean(r, PAUSE_BOUND_MS);
  assert.notEqual(r.back_s, "never", "the cut path never came back");
  assert.ok((r.back_s as number) < BACK_BOUND_S, `path back after ${r.back_s} s`);
  // The cut path was live, left live during the cut, and was live again at the end.
  const states = r.states.map(([, s]) => s);
  assert.equal(states[0], "live");
  assert.ok(states.some((s) => s === "connecting" || s === "resetting"), states.join(" "));
  assert.equal(states[states.length - 1], "live");
}

Deno.test("(a) carrier loss on the busy path's link at both ends: no error, pause bounded, the path comes back", async () => {
  const r = await failover("carrier", FAULTS_RIG, async (link) => {
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
  const r = await failover("blackhole", FAULTS_RIG, async (link) => {
    const cut = (await must("host1", `${FAULTS} blackhole ${link} on`)).trim();
    await new Promise((res) => setTimeout(res, CUT * 1000));
    const back = (await must("host1", `${FAULTS} blackhole ${link} off`)).trim();
    return [cut, back];
  });
  assertCommon(r);
});
