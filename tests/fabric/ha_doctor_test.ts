/**
 * doctor on a compute node whose path is down: host1 connects both paths of one subsystem with
 * the HA profile, the link under the path on link 0 is blackholed at host1 (every packet in or
 * out dropped, carrier up), and while that path is `connecting` the doctor's path check names an
 * unanswered ARP for the target's address on fab0, the link, and the -104 each attempt logs; once
 * the link is back the path returns and the check is ok again. `list --paths` shows the same
 * unanswered ARP entry beside the path while it is down, and nothing once it is back. The target, connect and blackhole
 * are guest_faults.sh's helpers, the same code the benchmark (scripts/bench/ha.sh) measures with.
 */
import assert from "node:assert/strict";
import { keepingLinks, must, nvmeofOn, on } from "./fabric.ts";

const FAULTS = "tests/fabric/guest_faults.sh";
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

interface PathView {
  subsystems: Array<{
    subsysnqn: string;
    controllers: Array<
      {
        name: string;
        state: string;
        address: { traddr?: string };
        neighbour?: { state: string; device?: string };
      }
    >;
  }>;
}

/** `list --paths` on host1: its text and the controller of the path on link 0. */
async function listPaths(): Promise<
  { text: string; ctrl: PathView["subsystems"][0]["controllers"][0] }
> {
  const text = await nvmeofOn("host1", ["list", "--paths"]);
  assert.equal(text.code, 0, text.stderr);
  const json = await nvmeofOn("host1", ["list", "--paths", "-o", "json"]);
  assert.equal(json.code, 0, json.stderr);
  const s = (JSON.parse(json.stdout) as PathView).subsystems.find((x) =>
    x.subsysnqn.endsWith("ha:bench")
  );
  const ctrl = s?.controllers.find((c) => c.address.traddr === PATH_ADDR);
  assert.ok(ctrl, json.stdout);
  return { text: text.stdout, ctrl };
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

/** The test's run; keepingLinks then puts back a blackhole that outlived it, failing the test. */
async function blackholedPath(): Promise<void> {
  await must("target", `${FAULTS} target_up`);
  try {
    await must("host1", `${FAULTS} host_connect nvmeof numa`);
    await until(STATE, "live", 60);
    await must("host1", `${FAULTS} blackhole 0 on`);
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
      // list --paths says the same from the ARP table, without a probe.
      const view = await listPaths();
      assert.equal(view.ctrl.state, "connecting");
      assert.deepEqual([view.ctrl.neighbour?.state, view.ctrl.neighbour?.device], [
        "failed",
        "fab0",
      ]);
      assert.match(
        view.text,
        new RegExp(`${PATH_ADDR.replaceAll(".", "\\.")}:4420.* connecting.*ARP unanswered`),
      );
      assert.match(
        view.text,
        /\n {4}ARP for 10\.78\.0\.1 unanswered on fab0: the link to the target is down or blocked/,
      );
    } finally {
      await must("host1", `${FAULTS} blackhole 0 off`);
    }
    await until(STATE, "live", 120);
    const back = await pathsCheck();
    assert.equal(back.status, "ok", JSON.stringify(back));
    const after = await listPaths();
    assert.equal(after.ctrl.neighbour, undefined);
    assert.doesNotMatch(after.text, /ARP/);
  } finally {
    await on("host1", `${FAULTS} host_disconnect`);
    await on("target", `${FAULTS} target_down`);
  }
}

Deno.test(
  "doctor and list --paths: a path down because its link is blackholed names the unanswered ARP and the link; ok once back",
  () => keepingLinks("host1", blackholedPath),
);
