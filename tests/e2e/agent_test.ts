/**
 * `nvmeof agent` on the real kernel (lab guest: nvmet-rdma target and nvme-rdma host on rxe,
 * 10.77.0.1): started against a port that offers one subsystem, it connects it through a
 * persistent discovery controller of its own; a second subsystem linked to the port afterwards
 * (plain configfs writes) reaches it as a Discovery Log Change uevent, and it connects that one
 * too, without a second controller for the first and with the periodic re-read off, so that
 * only the event can have caused it. The time from the link to the block device is measured and
 * printed. Two more linked back to back are both connected in a few scans, and nvme-cli's
 * `connect-all` beside it makes no second controller. A second test starts it beside a persistent discovery
 * controller made by `nvme discover -p` (used, not duplicated), then takes the port away and back
 * with a new subsystem linked meanwhile: only the discovery controller's reconnection
 * (`NVME_EVENT=rediscover`) can tell the agent; then a referral to a second discovery port, whose
 * subsystems it connects, including one linked there later (that port's own log change event).
 * A third checks the policies: a subsystem named in exclusions.conf is never connected; one that
 * leaves the log is left by default, and with --on-removal disconnect-unused taken away (also one
 * an earlier run connected) unless its filesystem is mounted, until it is unmounted; a path made
 * by nvme-cli is never touched. Everything made is removed even when a test fails.
 */
import assert from "node:assert/strict";
import { ROOT, sh, spawnNvmeof } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000c1";
const HI = "1e4a0000-0000-4000-8000-0000000000c1";
const ADDR = "10.77.0.1";
const SVC = "4491";
const N = "/sys/kernel/config/nvmet";
const PORT = `${N}/ports/91`;
/** A second discovery port, which PORT's log refers to (as another storage server would be). */
const SVC2 = "4492";
const PORT2 = `${N}/ports/92`;
const FIRST = "nqn.2024-01.io.nvmeof.e2e:agent-first";
const SECOND = "nqn.2024-01.io.nvmeof.e2e:agent-second";
/** Linked back to back: their log change events come while the agent scans. */
const BURST = ["nqn.2024-01.io.nvmeof.e2e:agent-third", "nqn.2024-01.io.nvmeof.e2e:agent-fourth"];
const DISCOVERY = "nqn.2014-08.org.nvmexpress.discovery";
/** From the configfs link to the second subsystem's block device, under TCG. */
const CHANGE_BOUND_MS = 20_000;

function subsystemUp(nqn: string, nb: string): string {
  return [
    `mkdir /sys/kernel/config/nullb/${nb}`,
    `cd /sys/kernel/config/nullb/${nb}; echo 64 > size; echo 1 > memory_backed; echo 1 > power`,
    `mkdir ${N}/subsystems/${nqn}`,
    `echo 1 > ${N}/subsystems/${nqn}/attr_allow_any_host`,
    `mkdir ${N}/subsystems/${nqn}/namespaces/1`,
    `echo /dev/${nb} > ${N}/subsystems/${nqn}/namespaces/1/device_path`,
    `echo 1 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
  ].join("\n");
}

function subsystemDown(nqn: string, nb: string): string {
  return [
    `rm -f ${PORT}/subsystems/${nqn}`,
    `echo 0 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
    `rmdir ${N}/subsystems/${nqn}/namespaces/1`,
    `rmdir ${N}/subsystems/${nqn}`,
    `echo 0 > /sys/kernel/config/nullb/${nb}/power`,
    `rmdir /sys/kernel/config/nullb/${nb}`,
  ].map((l) => `${l} 2>/dev/null`).join("\n");
}

/** The port at ADDR:SVC with the subsystems NQNS linked. */
function portUp(nqns: string[]): string {
  return [
    `mkdir ${PORT}`,
    `echo rdma > ${PORT}/addr_trtype; echo ipv4 > ${PORT}/addr_adrfam`,
    `echo ${ADDR} > ${PORT}/addr_traddr; echo ${SVC} > ${PORT}/addr_trsvcid`,
    ...nqns.map((q) => `ln -s ${N}/subsystems/${q} ${PORT}/subsystems/${q}`),
  ].join("\n");
}

const UP = [
  "set -e",
  "modprobe null_blk nr_devices=0",
  subsystemUp(FIRST, "nullb_agent1"),
  subsystemUp(SECOND, "nullb_agent2"),
  ...BURST.map((q, i) => subsystemUp(q, `nullb_agent${i + 3}`)),
  portUp([FIRST]),
].join("\n");

const DOWN = [
  // The agent leaves its controllers (and its discovery controller): remove every one of this port.
  `for c in /sys/class/nvme/nvme*; do grep -qE "trsvcid=(${SVC}|${SVC2})" $c/address 2>/dev/null && echo 1 > $c/delete_controller; done`,
  `rmdir ${PORT}/referrals/r92 2>/dev/null`,
  ...BURST.map((q) => `rm -f ${PORT2}/subsystems/${q}`),
  `rmdir ${PORT2} 2>/dev/null`,
  ...BURST.map((q, i) => subsystemDown(q, `nullb_agent${i + 3}`)),
  subsystemDown(SECOND, "nullb_agent2"),
  subsystemDown(FIRST, "nullb_agent1"),
  `rmdir ${PORT} 2>/dev/null`,
].join("\n");

/** The controllers of `nqn` at this test's port (or service id `svc`): `nvme3` … */
async function controllersOf(nqn: string, svc = SVC): Promise<string[]> {
  const r = await sh(
    `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${nqn}" ] && ` +
      `grep -qE "trsvcid=${svc}(,|$)" $c/address && basename $c; done; true`,
  );
  return r.stdout.split("\n").filter(Boolean);
}

/** The first block device of `nqn`'s controller at this port, once it exists; "" before. */
async function blockDevice(nqn: string): Promise<string> {
  for (const c of await controllersOf(nqn)) {
    const r = await sh(
      `for n in /sys/class/nvme/${c}/nvme*n*; do b=$(basename $n | sed 's/c[0-9]*n/n/'); ` +
        `[ -b /dev/$b ] && echo /dev/$b && break; done; true`,
    );
    const dev = r.stdout.trim();
    if (dev) return dev;
  }
  return "";
}

interface Line {
  time?: string;
  action: string;
  trsvcid?: string;
  subnqn?: string;
  reason?: string;
  genctr?: number;
  device?: string;
  discovery_controller?: string;
  made?: boolean;
}

/** `nvmeof agent` at this test's port as this test's host, one I/O queue, JSON lines; and MORE. */
function agentArgs(more: string[]): string[] {
  return ["agent", "-a", ADDR, "-s", SVC, "-q", HQ, "-I", HI, "-i", "1", "-o", "json", ...more];
}

function lines(stdout: string): Line[] {
  return stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const end = performance.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (performance.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("agent connects a subsystem linked to the port while it runs, from the log change event", async () => {
  try {
    const up = await sh(UP);
    assert.equal(up.code, 0, `target setup failed: ${up.stderr}`);
    await using agent = spawnNvmeof(
      agentArgs(["--rescan-interval", "0"]),
      { env: { NVMEOF_ETC_NVME: "/nonexistent" } },
    );
    const started = agent.t0;
    const first = await until("the first subsystem connected", 60_000, () => {
      if (agent.exited) throw new Error(`the agent exited: ${agent.stderr}`);
      return Promise.resolve(
        lines(agent.stdout).find((l) => l.action === "connected" && l.subnqn === FIRST),
      );
    }).catch((err) => {
      throw new Error(`${err.message}\nstdout: ${agent.stdout}\nstderr: ${agent.stderr}`);
    });
    console.log(
      `agent: first subsystem connected ${
        Math.round(performance.now() - started)
      } ms after the start`,
    );
    assert.equal(first.reason, "start");
    const following = lines(agent.stdout).find((l) => l.action === "following");
    assert.ok(following?.made, "the agent made its persistent discovery controller");
    const dc = following!.discovery_controller!;
    const attrs = await sh(
      `cd /sys/class/nvme/${dc} && cat kato reconnect_delay cntrltype`,
    );
    console.log(
      `agent: discovery controller ${dc}: kato, reconnect_delay, cntrltype = ${
        attrs.stdout.split("\n").join(" ")
      }`,
    );
    // The HA profile's keep-alive and reconnect delay (1 s each), not nvme-cli's 30 s and the
    // kernel's 10 s: a storage server's return is read on the clock of its paths.
    assert.equal(attrs.stdout, "1\n1\ndiscovery\n", "keep-alive 1 s, reconnect delay 1 s");

    const t0 = performance.now();
    const wall0 = Date.now();
    const link = await sh(`ln -s ${N}/subsystems/${SECOND} ${PORT}/subsystems/${SECOND}`);
    assert.equal(link.code, 0, link.stderr);
    const dev = await until("the second subsystem's block device", CHANGE_BOUND_MS, async () => {
      if (agent.exited) throw new Error(`the agent exited: ${agent.stderr}`);
      return await blockDevice(SECOND) || undefined;
    }).catch((err) => {
      throw new Error(`${err.message}\nstdout: ${agent.stdout}\nstderr: ${agent.stderr}`);
    });
    const ms = Math.round(performance.now() - t0);
    console.log(`agent: change -> block device ${dev}: ${ms} ms`);
    const second = await until(
      "the agent's line for the second subsystem",
      10_000,
      () =>
        Promise.resolve(
          lines(agent.stdout).find((l) => l.action === "connected" && l.subnqn === SECOND),
        ),
    );
    assert.equal(second.reason, "log-changed", agent.stdout);
    assert.ok((second.genctr ?? 0) > 0);
    // The agent says 'connected' once the block devices exist (connect waits for them).
    console.log(`agent: change -> its 'connected' line: ${Date.parse(second.time!) - wall0} ms`);

    assert.equal((await controllersOf(FIRST)).length, 1, "no second controller for the first");
    assert.equal((await controllersOf(SECOND)).length, 1);
    assert.equal((await controllersOf(DISCOVERY)).length, 1, "one discovery controller");

    // Two links back to back: each sends a log change event (re-armed by the agent's next read);
    // both are connected, none lost, in a few scans.
    const burst = await sh(
      BURST.map((q) => `ln -s ${N}/subsystems/${q} ${PORT}/subsystems/${q}`).join(" && "),
    );
    assert.equal(burst.code, 0, burst.stderr);
    await until("both subsystems of the burst connected", 30_000, () =>
      Promise.resolve(
        BURST.every((q) =>
          lines(agent.stdout).some((l) => l.action === "connected" && l.subnqn === q)
        ) ||
          undefined,
      )).catch((err) => {
        throw new Error(`${err.message}\nstdout: ${agent.stdout}\nstderr: ${agent.stderr}`);
      });
    // The state file is written once the scan that said them has ended.
    const state = await until("the state file after the burst", 10_000, async () => {
      const st = JSON.parse(await Deno.readTextFile("/run/nvmeof/agent.json"));
      return st.connected.length === 4 ? st : undefined;
    }).catch(async (err) => {
      throw new Error(`${err.message}: ${await Deno.readTextFile("/run/nvmeof/agent.json")}`);
    });
    console.log(
      `agent: after the burst: ${state.scans} scans, ${state.uevents} uevents, ` +
        `generation ${state.endpoints[0].genctr}`,
    );
    assert.equal(state.endpoints[0].state, "following");
    assert.equal(state.connected.length, 4);
    assert.ok(state.scans <= 6, `${state.scans} scans for start, one change and a burst of two`);
    // The agent's families, as the exporter and `nvmeof metrics` give them, from that state.
    const m = await sh(`${ROOT}/scripts/nvmeof metrics | grep '^nvmeof_agent_'`);
    assert.equal(m.code, 0, m.stderr);
    console.log(`agent: its families:\n${m.stdout}`);
    assert.match(m.stdout, /^nvmeof_agent_up 1$/m);
    assert.match(m.stdout, /^nvmeof_agent_connects_total 4$/m);
    assert.match(m.stdout, /^nvmeof_agent_connected_paths 4$/m);
    const ep = state.endpoints[0].endpoint;
    assert.ok(
      m.stdout.includes(`nvmeof_agent_endpoint_following{endpoint="${ep}"} 1\n`),
      m.stdout,
    );
    assert.ok(
      m.stdout.includes(
        `nvmeof_agent_endpoint_generation{endpoint="${ep}"} ${state.endpoints[0].genctr}\n`,
      ),
      m.stdout,
    );
    assert.match(m.stdout, /^nvmeof_agent_endpoint_last_change_timestamp_seconds\{.*\} \d/m);

    // nvme-cli's connect-all beside the agent (the independent peer; nvmeof's shares the agent's
    // connect path) makes no second controller.
    const all = await sh(`nvme connect-all -t rdma -a ${ADDR} -s ${SVC} -q ${HQ} -I ${HI} 2>&1`);
    console.log(
      `agent: nvme connect-all beside it: exit ${all.code}, ${all.stdout.trim() || "silent"}`,
    );
    for (const q of [FIRST, SECOND, ...BURST]) assert.equal((await controllersOf(q)).length, 1, q);

    const end = await agent.stop("SIGTERM", 15_000);
    assert.equal(end.code, 0, end.stderr);
    assert.equal(lines(end.stdout).at(-1)?.action, "stopped");
    assert.equal((await controllersOf(SECOND)).length, 1, "stopping leaves the controllers");
    console.log(`agent stdout:\n${end.stdout}`);
  } finally {
    await sh(DOWN);
  }
});

Deno.test("agent uses nvme-cli's persistent discovery controller and reads the log again on rediscover", async () => {
  try {
    const up = await sh(UP);
    assert.equal(up.code, 0, `target setup failed: ${up.stderr}`);
    // A persistent discovery controller nvme-cli made: the agent must use it, not make a second.
    const p = await sh(
      `nvme discover -t rdma -a ${ADDR} -s ${SVC} -q ${HQ} -I ${HI} -p -k 30 >/dev/null && ` +
        `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${DISCOVERY}" ] && ` +
        `grep -q "trsvcid=${SVC}" $c/address && basename $c; done; true`,
    );
    const cli = p.stdout.trim();
    assert.match(cli, /^nvme\d+$/, `nvme discover -p made no discovery controller: ${p.stderr}`);
    await using agent = spawnNvmeof(
      agentArgs(["--rescan-interval", "0"]),
      { env: { NVMEOF_ETC_NVME: "/nonexistent" } },
    );
    const fail = (err: Error) => {
      throw new Error(`${err.message}\nstdout: ${agent.stdout}\nstderr: ${agent.stderr}`);
    };
    await until("the first subsystem connected", 60_000, () =>
      Promise.resolve(
        lines(agent.stdout).find((l) => l.action === "connected" && l.subnqn === FIRST),
      )).catch(fail);
    const following = lines(agent.stdout).find((l) => l.action === "following")!;
    assert.equal(following.discovery_controller, cli, "it follows through nvme-cli's controller");
    assert.equal(following.made, false);
    const dc = cli;
    // The port goes away: the host's controllers there lose their connection and reconnect.
    const gone = await sh(`rm ${PORT}/subsystems/${FIRST} && rmdir ${PORT}`);
    assert.equal(gone.code, 0, gone.stderr);
    await until("the discovery controller reconnecting", 20_000, async () => {
      const st = await sh(`cat /sys/class/nvme/${dc}/state`);
      return st.stdout.trim() !== "live" || undefined;
    }).catch(fail);
    // Back, with the second subsystem linked while no discovery controller was connected.
    const t0 = performance.now();
    const back = await sh(portUp([FIRST, SECOND]));
    assert.equal(back.code, 0, back.stderr);
    const second = await until("the second subsystem connected", 45_000, () =>
      Promise.resolve(
        lines(agent.stdout).find((l) => l.action === "connected" && l.subnqn === SECOND),
      )).catch(fail);
    const ms = Math.round(performance.now() - t0);
    const after = await sh(`cat /sys/class/nvme/${dc}/state /sys/class/nvme/${dc}/kato`);
    console.log(
      `agent: port back -> second subsystem connected: ${ms} ms (reason ${second.reason}); ` +
        `discovery controller ${dc} after its reconnect: state, kato = ${
          after.stdout.split("\n").join(" ")
        }`,
    );
    assert.equal(second.reason, "rediscover", agent.stdout);
    assert.equal((await controllersOf(DISCOVERY)).length, 1, "still one discovery controller");
    assert.equal((await controllersOf(FIRST)).length, 1, "the first reconnected, not duplicated");

    // A referral to a second discovery port: followed through a persistent discovery controller
    // of its own, so that a subsystem linked there later is connected from that port's event.
    const [third, fourth] = BURST;
    const refer = await sh([
      "set -e",
      `mkdir ${PORT2}`,
      `echo rdma > ${PORT2}/addr_trtype; echo ipv4 > ${PORT2}/addr_adrfam`,
      `echo ${ADDR} > ${PORT2}/addr_traddr; echo ${SVC2} > ${PORT2}/addr_trsvcid`,
      `ln -s ${N}/subsystems/${third} ${PORT2}/subsystems/${third}`,
      `mkdir ${PORT}/referrals/r92`,
      `cd ${PORT}/referrals/r92; echo rdma > addr_trtype; echo ipv4 > addr_adrfam`,
      `echo ${ADDR} > addr_traddr; echo ${SVC2} > addr_trsvcid; echo 1 > enable`,
    ].join("\n"));
    assert.equal(refer.code, 0, refer.stderr);
    const viaReferral = await until(
      "the referred port's subsystem connected",
      30_000,
      () =>
        Promise.resolve(
          lines(agent.stdout).find((l) => l.action === "connected" && l.subnqn === third),
        ),
    ).catch(fail);
    assert.equal(viaReferral.trsvcid, SVC2);
    const referred = lines(agent.stdout).find((l) =>
      l.action === "following" && l.discovery_controller !== cli
    );
    assert.ok(referred?.made, `a discovery controller made for the referral: ${agent.stdout}`);
    const t1 = Date.now();
    const link = await sh(`ln -s ${N}/subsystems/${fourth} ${PORT2}/subsystems/${fourth}`);
    assert.equal(link.code, 0, link.stderr);
    const later = await until(
      "the subsystem linked on the referred port",
      30_000,
      () =>
        Promise.resolve(
          lines(agent.stdout).find((l) => l.action === "connected" && l.subnqn === fourth),
        ),
    ).catch(fail);
    console.log(
      `agent: referred port's change -> its 'connected' line: ${Date.parse(later.time!) - t1} ms`,
    );
    assert.equal(later.reason, "log-changed");
    assert.equal(
      (await controllersOf(DISCOVERY, SVC2)).length,
      1,
      "one discovery controller there",
    );
    assert.equal((await controllersOf(third, SVC2)).length, 1);

    const end = await agent.stop("SIGTERM", 15_000);
    assert.equal(end.code, 0, end.stderr);
    console.log(`agent stdout:\n${end.stdout}`);
  } finally {
    await sh(DOWN);
  }
});

Deno.test("agent's policies: the exclusion list keeps a subsystem out; what leaves the log is left by default, and with disconnect-unused taken away unless mounted, never what it did not connect", async () => {
  const [third, fourth] = BURST;
  // Stays on the port throughout: nvmet disables a port once its last subsystem is unlinked,
  // and the discovery controller there goes with it (then no log can be read, and the agent
  // rightly changes nothing).
  const keep = "nqn.2024-01.io.nvmeof.e2e:agent-keep";
  const etc = await Deno.makeTempDir({ prefix: "nvmeof-agent-etc-" });
  const mnt = await Deno.makeTempDir({ prefix: "nvmeof-agent-mnt-" });
  try {
    const up = await sh(
      UP + "\n" + subsystemUp(keep, "nullb_agent5") + "\n" +
        [SECOND, ...BURST, keep].map((q) => `ln -s ${N}/subsystems/${q} ${PORT}/subsystems/${q}`)
          .join(
            "\n",
          ),
    );
    assert.equal(up.code, 0, `target setup failed: ${up.stderr}`);
    await Deno.writeTextFile(`${etc}/exclusions.conf`, `# kept out\n--nqn=${fourth}\n`);
    // A saved connection (as `connect --persist` writes it) for KEEP's path, keep-alive 17 s.
    await Deno.writeTextFile(
      `${etc}/connections.yaml`,
      `connections:\n  - transport: rdma\n    traddr: ${ADDR}\n    trsvcid: "${SVC}"\n` +
        `    nqn: ${keep}\n    hostnqn: ${HQ}\n    hostid: ${HI}\n    keep_alive_tmo: 17\n`,
    );
    const said = (agent: { stdout: string }, action: string, nqn: string) =>
      lines(agent.stdout).find((l) => l.action === action && l.subnqn === nqn);
    const wait = (agent: { stdout: string; stderr: string }, action: string, nqn: string) =>
      until(`'${action}' for ${nqn}`, 45_000, () => Promise.resolve(said(agent, action, nqn)))
        .catch((err) => {
          throw new Error(`${err.message}\nstdout: ${agent.stdout}\nstderr: ${agent.stderr}`);
        });

    // The default policy: the excluded subsystem is never connected; one that leaves is left.
    // With --no-ha, the discovery controller it makes is nvme-cli's `discover -p`'s.
    {
      await using agent = spawnNvmeof(agentArgs(["--rescan-interval", "0", "--no-ha"]), {
        env: { NVMEOF_ETC_NVME: etc, NVMEOF_ETC: etc },
      });
      for (const q of [FIRST, SECOND, third, keep]) await wait(agent, "connected", q);
      const following = lines(agent.stdout).find((l) => l.action === "following");
      assert.ok(following?.made, agent.stdout);
      const dc = await sh(
        `cd /sys/class/nvme/${following!.discovery_controller} && cat kato reconnect_delay`,
      );
      assert.equal(dc.stdout, "30\n10\n", "--no-ha: keep-alive 30 s, the kernel's 10 s delay");
      // The saved connection's options for its path; the others keep the kernel's (5 s).
      const kato = await sh(
        [keep, FIRST].map((q) =>
          `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${q}" ] && cat $c/kato; done`
        ).join("; "),
      );
      assert.deepEqual(kato.stdout.trim().split("\n"), ["17", "5"], "saved kato, default kato");
      const skipped = await wait(agent, "skipped", fourth);
      assert.match(
        (skipped as Line & { error: string }).error,
        new RegExp(`^excluded by '${etc}/exclusions.conf' line 2$`),
      );
      assert.equal((await controllersOf(fourth)).length, 0, "the excluded one is not connected");
      const unlink = await sh(`rm ${PORT}/subsystems/${third}`);
      assert.equal(unlink.code, 0, unlink.stderr);
      const left = await wait(agent, "left", third);
      assert.equal(left.reason, "log-changed");
      assert.equal((await controllersOf(third)).length, 1, "leave: its controller stays");
      const end = await agent.stop("SIGTERM", 15_000);
      assert.equal(end.code, 0, end.stderr);
      console.log(`agent (leave) stdout:\n${end.stdout}`);
    }

    // A path made by hand (nvme-cli), to a subsystem the agent never connected.
    const hand = await sh(
      `nvme connect -t rdma -a ${ADDR} -s ${SVC} -n ${fourth} -q ${HQ} -I ${HI} -i 1 2>&1`,
    );
    assert.equal(hand.code, 0, `nvme connect: ${hand.stdout}`);
    assert.equal((await controllersOf(fourth)).length, 1);
    // FIRST's namespace mounted (read-only: nothing to write back once its path is gone).
    const dev = await blockDevice(FIRST);
    assert.ok(dev, "FIRST has a block device");
    const fs = await sh(`mkfs.ext4 -q -F ${dev} && mount -o ro ${dev} ${mnt}`);
    assert.equal(fs.code, 0, fs.stderr);

    // disconnect-unused, in a second run: what the first run connected is still the agent's.
    await using agent = spawnNvmeof(
      agentArgs(["--rescan-interval", "3", "--on-removal", "disconnect-unused"]),
      { env: { NVMEOF_ETC_NVME: etc, NVMEOF_ETC: etc } },
    );
    const gone = await wait(agent, "disconnected", third);
    assert.equal(gone.reason, "start", "the earlier run's path, taken away at this run's start");
    assert.equal((await controllersOf(third)).length, 0);

    const t0 = Date.now();
    const unlink = await sh(
      [FIRST, SECOND, fourth].map((q) => `rm ${PORT}/subsystems/${q}`).join(" && "),
    );
    assert.equal(unlink.code, 0, unlink.stderr);
    const second = await wait(agent, "disconnected", SECOND);
    console.log(
      `agent: unlink -> unused subsystem disconnected: ${Date.parse(second.time!) - t0} ms`,
    );
    assert.equal((await controllersOf(SECOND)).length, 0);
    const kept = await wait(agent, "kept", FIRST) as Line & { users: string[] };
    assert.deepEqual(kept.users, [`${dev.slice(5)} mounted at ${mnt}`]);
    assert.equal((await controllersOf(FIRST)).length, 1, "mounted: it stays");
    // A few scans later (the 3 s re-read), the mounted one is still there, said once.
    await new Promise((r) => setTimeout(r, 7_000));
    assert.equal((await controllersOf(FIRST)).length, 1);
    assert.equal(lines(agent.stdout).filter((l) => l.action === "kept").length, 1);
    assert.equal((await controllersOf(fourth)).length, 1, "the hand-made path is never touched");
    assert.ok(!said(agent, "disconnected", fourth), agent.stdout);

    const um = await sh(`timeout 60 umount ${mnt}`);
    assert.equal(um.code, 0, `umount: ${um.stderr}`);
    await wait(agent, "disconnected", FIRST);
    assert.equal((await controllersOf(FIRST)).length, 0, "unmounted: it goes at the next scan");
    assert.equal((await controllersOf(fourth)).length, 1, "still never touched");
    const end = await agent.stop("SIGTERM", 15_000);
    assert.equal(end.code, 0, end.stderr);
    console.log(`agent (disconnect-unused) stdout:\n${end.stdout}`);
  } finally {
    await sh(`umount ${mnt} 2>/dev/null; true`);
    await sh(subsystemDown(keep, "nullb_agent5"));
    await sh(DOWN);
    await Deno.remove(etc, { recursive: true }).catch(() => {});
    await Deno.remove(mnt, { recursive: true }).catch(() => {});
  }
});
