/**
 * doctor on a compute node whose path is down: host1 connects both paths of one subsystem with
 * the HA profile, the link under the path on link 0 is blackholed at host1 (every packet in or
 * out dropped, carrier up), and while that path is `connecting` the doctor's path check names an
 * unanswered ARP for the target's address on fab0, the link, and the -104 each attempt logs; once
 * the link is back the path returns and the check is ok again. The target, connect and blackhole
 * are scripts/bench_ha.sh's guest helpers, the same code the benchmark measures with.
 */
import assert from "node:assert/strict";
import { must, nvmeofOn, on } from "./fabric.ts";

const BENCH = "scripts/bench_ha.sh guest";
const PATH_ADDR = "10.78.0.1";

interface Check {
  id: string;
  status: "ok" | "warn" | "fail" | "skip";
  seen: string;
  fix?: string;
}

async function pathsCheck(): Promise<Check> {
  const r = await nvmeofOn("host1", ["doctor", "-o", "json"], { timeout: 300 });
  assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.stderr}`);
  const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
  const c = checks.filter((x) => x.id.startsWith("host.paths.") && x.seen.includes("ha:bench"));
  assert.equal(c.length, 1, checks.map((x) => `${x.id}:${x.status}`).join(", "));
  return c[0];
}

/** Polls SCRIPT on host1 (at most SECONDS) until it prints WANT. */
async function until(script: string, want: string, seconds: number): Promise<void> {
  const end = Date.now() + seconds * 1000;
  let got = "";
  while (Date.now() < end) {
    got = (await on("host1", script)).stdout.trim();
    if (got === want) return;
    await new Promise((r) => setTimeout(r, 2000));
  }
  throw new Error(`host1: ${script}: still '${got}' after ${seconds} s, wanted '${want}'`);
}

const STATE =
  `for c in /sys/class/nvme/nvme*; do grep -q "traddr=${PATH_ADDR}," $c/address 2>/dev/null && cat $c/state; done`;
/** 1 when /proc/net/arp has the address without ATF_COM (incomplete or failed), 0 otherwise. */
const ARP_UNANSWERED = `awk '$1 == "${PATH_ADDR}" { print ($3 == "0x0") ? 1 : 0 }' /proc/net/arp`;

Deno.test("doctor: a path down because its link is blackholed names the unanswered ARP and the link; ok once back", async () => {
  await must("target", `${BENCH} target_up`);
  try {
    await must("host1", `${BENCH} host_connect nvmeof numa`);
    await until(STATE, "live", 60);
    await must("host1", `${BENCH} blackhole 0 on`);
    try {
      await until(STATE, "connecting", 120);
      await until(ARP_UNANSWERED, "1", 120);
      const down = await pathsCheck();
      assert.equal(down.status, "warn", JSON.stringify(down));
      assert.match(
        down.seen,
        new RegExp(`connecting.*ARP for ${PATH_ADDR.replaceAll(".", "\\.")} unanswered on fab0`),
      );
      assert.match(
        down.fix!,
        /does not answer ARP on fab0: every reconnect attempt fails in address resolution/,
      );
      assert.match(down.fix!, /'rdma connection establishment failed \(-104\)'/);
      assert.match(down.fix!, /link to the target is still down/);
    } finally {
      await must("host1", `${BENCH} blackhole 0 off`);
    }
    await until(STATE, "live", 120);
    const back = await pathsCheck();
    assert.equal(back.status, "ok", JSON.stringify(back));
  } finally {
    await on("host1", `${BENCH} host_disconnect`);
    await on("target", `${BENCH} target_down`);
  }
});
