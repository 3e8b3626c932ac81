/**
 * The storage server's NIC set down and up (`ip link set fabL down; sleep 15; ip link set fabL up`,
 * an administrator's flap, not a carrier loss) under verified I/O on host1's multipath head
 * (guest_faults.sh's two-port target, `nvmeof connect -a A -a B`, the HA profile).
 *
 * On Linux 6.1's Soft-RoCE the flap leaves the target's rxe device deaf to RDMA-CM: a send on its
 * QP1 while the link was down (the disconnect of a failed queue) found no route and left QP1's
 * receive side in error (docs/nic_flap.md). So the test asserts what the kernel does: no I/O error, the
 * path still not live 20 s after the NIC came back; then the doctor's verdict on the target (the
 * NIC, the times, the exact step), the step applied (the rxe device made anew, the port relinked)
 * and the path live again within 30 s of it. Whatever happens, the target's rxe device on that link
 * is made anew at the end, so the tests after this one find a working one.
 */
import assert from "node:assert/strict";
import { must, nvmeofOn, on } from "./fabric.ts";
import { assertIoClean, failover, FAULTS, FAULTS_RIG, hostClock } from "./ha.ts";

/** Seconds the NIC stays down (the report's). */
const DOWN_S = 15;
/** Seconds after the NIC is back at which the path is checked (the kernel's reconnect runs every 2-10 s). */
const STILL_DOWN_AFTER_S = 20;
/** Seconds after the step by which the path must be live again. */
const BACK_BOUND_S = 30;
/** The pause the HA profile must stay under while the NIC is down (ha_test's bound). */
const PAUSE_BOUND_MS = 4000;

interface Check {
  id: string;
  status: string;
  seen: string;
  fix?: string;
}

/** The state of host1's path to ADDR (its controller's sysfs state). */
async function pathState(addr: string): Promise<string> {
  const out = await must(
    "host1",
    `${FAULTS} ctrls | while read n a; do [ "$a" = ${addr} ] && cat /sys/class/nvme/$n/state; done; true`,
  );
  return out.trim();
}

/** Seconds until host1's path to ADDR is live (polled every 0.5 s), or "never" within BOUND s. */
async function untilLive(addr: string, bound: number): Promise<number | "never"> {
  const t0 = Date.now();
  while (Date.now() - t0 < bound * 1000) {
    if (await pathState(addr) === "live") return (Date.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 500));
  }
  return "never";
}

Deno.test("the storage server's NIC down and up: no I/O error; doctor names the stale listener and its step; the path is back after it", async () => {
  let flapped: 0 | 1 | undefined;
  const figures: Record<string, unknown> = {};
  try {
    const r = await failover("nic-flap", FAULTS_RIG, async (link) => {
      const addr = `10.78.${link}.1`;
      const port = link === 0 ? 91 : 92;
      flapped = link;
      const cutAt = await hostClock();
      await must("target", `ip link set fab${link} down`);
      await new Promise((res) => setTimeout(res, DOWN_S * 1000));
      await must("target", `ip link set fab${link} up`);
      const upAt = Date.now();
      // The kernel's log of it: rxe's port events, a down and then an active.
      const log = await must("target", `dmesg | grep 'infiniband rxe${link}: set'`);
      assert.ok(
        log.lastIndexOf(`rxe${link}: set down`) >= 0 &&
          log.lastIndexOf(`rxe${link}: set active`) > log.lastIndexOf(`rxe${link}: set down`),
        log,
      );
      await new Promise((res) => setTimeout(res, STILL_DOWN_AFTER_S * 1000));
      figures.state_after_up = await pathState(addr);
      assert.notEqual(
        figures.state_after_up,
        "live",
        "the path came back by itself: the doctor's verdict is moot",
      );

      // The doctor on the storage server names the NIC, the times and the step.
      const d = await nvmeofOn("target", ["doctor", "-o", "json", "--timeout", "3000"], {
        timeout: 300,
      });
      const checks = (JSON.parse(d.stdout) as { checks: Check[] }).checks;
      const c = checks.find((x) => x.id === `target.port.${port}.listening`);
      assert.ok(c, checks.map((x) => x.id).join(", "));
      assert.equal(c.status, "fail", c.seen);
      assert.match(
        c.seen,
        new RegExp(`NIC fab${link} \\(rxe${link}\\) went down at .* and came back at `),
      );
      const step =
        `rdma link delete rxe${link} && rdma link add rxe${link} type rxe netdev fab${link}`;
      assert.ok(c.fix?.includes(step), c.fix);
      const relink = c.fix!.slice(c.fix!.indexOf(step) + step.length + 2).split(" (drops")[0];
      assert.match(relink, new RegExp(`^rm /sys/kernel/config/nvmet/ports/${port}/subsystems/`));

      // The step, as the doctor names it, then the path.
      const stepAt = Date.now();
      await must("target", `${step} && sleep 1 && ${relink}`);
      figures.back_after_step_s = await untilLive(addr, BACK_BOUND_S);
      figures.back_after_nic_s = figures.back_after_step_s === "never"
        ? "never"
        : (stepAt - upAt) / 1000 + (figures.back_after_step_s as number);
      return [cutAt, await hostClock()];
    });
    console.log(`nic flap: ${JSON.stringify(figures)}`);
    assertIoClean(r, PAUSE_BOUND_MS);
    assert.notEqual(
      figures.back_after_step_s,
      "never",
      "the path did not come back after the step",
    );
    assert.ok((figures.back_after_step_s as number) < BACK_BOUND_S);
  } finally {
    if (flapped !== undefined) {
      // A working rxe device on the link for the tests that follow, whatever happened above.
      await on(
        "target",
        `ip link set fab${flapped} up; rdma link delete rxe${flapped}; ` +
          `rdma link add rxe${flapped} type rxe netdev fab${flapped}`,
      );
    }
  }
});
