/**
 * `nvmeof agent` across machines: host1 and host2 each run the agent against the storage server's
 * discovery port on link 0 (the periodic re-read off, so that only the kernel's events can move
 * it), and the storage server changes only through `nvmeof target up`. Each subsystem added for
 * both hosts reaches a block device on both; one allowed to host1 only reaches host1 and never
 * host2; no host ever holds two controllers of one subsystem. The time from `target up`'s return
 * to each block device (polled from this machine, so an upper bound) is printed, median and max.
 * A second test follows the storage server through what a fleet lives with: both hosts follow
 * both links' discovery ports from /etc/nvme/discovery.conf, the second not answering at start
 * (said once, retried); a port added there gives each host the second path (one block device);
 * the storage server's power cut and boot, its spec (applied by its unit at boot) adding a
 * subsystem meanwhile: both hosts end with every subsystem on both paths within 60 s, and one
 * discovery controller per link, with the HA profile's keep-alive and reconnect delay. Before
 * that, host1's link 0 is blackholed for 20 s while it writes to the first subsystem: the I/O
 * completes over link 1, nothing is disconnected, and a subsystem added once the link is back
 * reaches both hosts on both links. host2's power cut and boot: its agent,
 * an enabled unit, connects it all again, every path with connect's HA profile (its start read
 * both logs before connecting). A third test makes host2 a second storage server that the first
 * refers to: host1's agent connects both servers' subsystems, and one added on the second server
 * later, from that server's own log change event. Everything made (agents, units, controllers, the target, its devices and files) is
 * removed whether the tests pass or not.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import {
  addr,
  boot,
  hostnqnOf,
  keepingLinks,
  must,
  netem,
  type Node,
  NVMEOF,
  nvmeofOn,
  on,
  powerCut,
  withCleanup,
} from "./fabric.ts";

const HOSTS = ["host1", "host2"] as const;
const TRADDR = addr("target", 0);
const PREFIX = "nqn.2026-12.io.nvmeof.fab:agent-";
const SPEC = "/etc/nvmeof/agent-test.yaml";
const WORK = "/tmp/agent_test";
/** From `target up`'s return to a block device on a compute node, under TCG. */
const CHANGE_BOUND_S = 40;
/** How long host2 is watched for the subsystem it may not use. */
const NOT_THERE_S = 8;

const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

interface Sub {
  nqn: string;
  hosts: string[];
}

/** The spec: every subsystem SUBS, a 64 MiB null_blk each, all on one rdma port at TRADDR. */
function spec(subs: Sub[], hostnqns: string[]): object {
  return {
    hosts: hostnqns.map((nqn) => ({ nqn })),
    subsystems: subs.map((s, i) => ({
      nqn: s.nqn,
      hosts: s.hosts,
      namespaces: [{ nsid: 1, device: `/dev/nullb_agent${i}` }],
    })),
    ports: [{
      id: 1,
      trtype: "rdma",
      adrfam: "ipv4",
      traddr: TRADDR,
      trsvcid: 4420,
      subsystems: subs.map((s) => s.nqn),
    }],
  };
}

/** Applies SUBS on the storage server; returns when `target up` has returned. */
async function up(subs: Sub[], hostnqns: string[]): Promise<void> {
  await must(
    "target",
    `mkdir -p /etc/nvmeof && cat > ${SPEC} <<'SPEC'\n${stringify(spec(subs, hostnqns))}SPEC`,
  );
  const r = await nvmeofOn("target", ["target", "up", "-f", SPEC]);
  assert.equal(r.code, 0, `target up: ${r.stderr}`);
}

/** NODE's controllers of this test's subsystems: "nqn block-device-or-empty" per controller. */
async function controllers(node: Node): Promise<string[]> {
  const out = await must(
    node,
    `for c in /sys/class/nvme/nvme*; do
       n=$(cat $c/subsysnqn 2>/dev/null) || continue
       case "$n" in ${PREFIX}*) ;; *) continue ;; esac
       b=""
       for p in $c/nvme*n*; do [ -e "$p" ] || continue; b=/dev/$(basename $p | sed 's/c[0-9]*n/n/'); [ -b "$b" ] && break; b=""; done
       echo "$n $b"
     done | sort`,
  );
  return out.split("\n").filter(Boolean);
}

/** Seconds until NODE has a block device of NQN (polled), or throws after CHANGE_BOUND_S. */
async function untilDevice(node: Node, nqn: string, t0: number): Promise<number> {
  for (;;) {
    const have = await controllers(node);
    if (have.some((l) => l.startsWith(`${nqn} /dev/`))) return (performance.now() - t0) / 1000;
    if ((performance.now() - t0) / 1000 > CHANGE_BOUND_S) {
      throw new Error(`${node}: no block device of ${nqn} within ${CHANGE_BOUND_S} s: ${have}`);
    }
    await sleep(0.2);
  }
}

/** NODE holds no two controllers of one subsystem. */
async function assertNoDuplicatesOn(node: Node): Promise<void> {
  const nqns = (await controllers(node)).map((l) => l.split(" ")[0]);
  assert.deepEqual(nqns, [...new Set(nqns)], `${node}: a subsystem with two controllers`);
}

/** No host holds two controllers of one subsystem. */
async function assertNoDuplicates(): Promise<void> {
  for (const node of HOSTS) await assertNoDuplicatesOn(node);
}

/** A script deleting every controller at ADDRS' port 4420 (discovery and I/O). */
function deleteAll(addrs: string[]): string {
  return addrs.map((a) =>
    `for c in /sys/class/nvme/nvme*; do grep -q "traddr=${a},trsvcid=4420" $c/address 2>/dev/null && echo 1 > $c/delete_controller; done`
  ).join("; ") + "; true";
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

Deno.test("agent on two compute nodes: what the storage server adds reaches the hosts it allows, and only those", async () => {
  await withCleanup(async (defer) => {
    const [hq1, hq2] = [await hostnqnOf("host1"), await hostnqnOf("host2")];
    const both = [hq1, hq2];
    const subs: Sub[] = [];
    const nullbs = [0, 1, 2, 3, 4].map((i) => `nullb_agent${i}`);
    defer(() =>
      on(
        "target",
        nullbs.map((n) =>
          `echo 0 > /sys/kernel/config/nullb/${n}/power; rmdir /sys/kernel/config/nullb/${n}`
        )
          .join("; ") + "; true",
      )
    );
    await must(
      "target",
      "modprobe null_blk nr_devices=0; " + nullbs.map((n) => {
        const d = `/sys/kernel/config/nullb/${n}`;
        return `mkdir ${d} && echo 64 > ${d}/size && echo 1 > ${d}/memory_backed && echo 1 > ${d}/power`;
      }).join(" && "),
    );
    defer(() => nvmeofOn("target", ["target", "down", "-f", SPEC, "--force"]));
    subs.push({ nqn: `${PREFIX}0`, hosts: both });
    await up(subs, both);

    // The agents: their controllers (discovery and I/O, all at TRADDR:4420) go with them.
    for (const node of HOSTS) {
      defer(() => on(node, deleteAll([TRADDR])));
      defer(() =>
        on(
          node,
          `p=$(cat ${WORK}/agent.pid 2>/dev/null) && kill "$p"; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done; echo "--- agent on ${node}"; tail -n 40 ${WORK}/agent.log; true`,
        ).then((r) => console.log(r.stdout))
      );
      await must(
        node,
        `mkdir -p ${WORK}; (exec ${NVMEOF} agent -t rdma -a ${TRADDR} -s 4420 --rescan-interval 0 -o json) </dev/null >${WORK}/agent.log 2>&1 & echo $! >${WORK}/agent.pid`,
      );
    }
    // At its start each agent reads the log and connects the first subsystem.
    for (const node of HOSTS) await untilDevice(node, subs[0].nqn, performance.now());

    // Three subsystems for both hosts, one change at a time.
    const times: number[] = [];
    for (const i of [1, 2, 3]) {
      subs.push({ nqn: `${PREFIX}${i}`, hosts: both });
      await up(subs, both);
      const t0 = performance.now();
      const got = await Promise.all(HOSTS.map((n) => untilDevice(n, subs[i].nqn, t0)));
      console.log(
        `${subs[i].nqn}: block device on host1 after ${got[0].toFixed(1)} s, host2 ${
          got[1].toFixed(1)
        } s`,
      );
      times.push(...got);
      await assertNoDuplicates();
    }
    console.log(
      `change → block device (target up returned → device seen, ${times.length} samples): median ${
        median(times).toFixed(1)
      } s, max ${Math.max(...times).toFixed(1)} s`,
    );

    // One for host1 only: host1 connects it, host2 never does.
    subs.push({ nqn: `${PREFIX}4`, hosts: [hq1] });
    await up(subs, both);
    const t0 = performance.now();
    const s1 = await untilDevice("host1", subs[4].nqn, t0);
    console.log(`${subs[4].nqn} (host1 only): host1 after ${s1.toFixed(1)} s`);
    await sleep(NOT_THERE_S);
    const host2 = await controllers("host2");
    assert.ok(!host2.some((l) => l.startsWith(subs[4].nqn)), `host2 connected ${subs[4].nqn}`);
    assert.equal(host2.length, 4, `host2: ${host2}`);
    assert.equal((await controllers("host1")).length, 5);
    await assertNoDuplicates();
  });
});

const BOOT_PREFIX = "nqn.2026-12.io.nvmeof.fab:agent-boot-";
const IMAGES = "/var/lib/nvmeof-agent-test";

/** NODE's controllers of BOOT_PREFIX subsystems and the discovery subsystem: "nqn traddr state". */
async function pathsOf(node: Node): Promise<string[]> {
  const out = await must(
    node,
    `for c in /sys/class/nvme/nvme*; do
       n=$(cat $c/subsysnqn 2>/dev/null) || continue
       case "$n" in ${BOOT_PREFIX}*|nqn.2014-08.org.nvmexpress.discovery) ;; *) continue ;; esac
       a=$(sed 's/.*traddr=\\([^,]*\\).*/\\1/' $c/address)
       echo "$n $a $(cat $c/state)"
     done | sort`,
  );
  return out.split("\n").filter(Boolean);
}

/** Until NODE has a live path to each of NQNS at each of ADDRS (and no second one), in s. */
async function untilPaths(node: Node, nqns: string[], addrs: string[], bound: number, t0: number) {
  const want = nqns.flatMap((n) => addrs.map((a) => `${n} ${a} live`)).sort();
  for (;;) {
    const have = (await pathsOf(node)).filter((l) => l.startsWith(BOOT_PREFIX));
    if (JSON.stringify(have) === JSON.stringify(want)) return (performance.now() - t0) / 1000;
    if ((performance.now() - t0) / 1000 > bound) {
      throw new Error(
        `${node}: want ${want.join("; ")} within ${bound} s; have ${have.join("; ")}`,
      );
    }
    await sleep(0.5);
  }
}

/** The storage server's spec at the unit's path: SUBS subsystems on PORTS (1: link 0, 2: link 1). */
function bootSpec(subs: number, ports: number, hostnqns: string[]): string {
  const nqns = Array.from({ length: subs }, (_, i) => `${BOOT_PREFIX}${i}`);
  return stringify({
    hosts: hostnqns.map((nqn) => ({ nqn })),
    subsystems: nqns.map((nqn, i) => ({
      nqn,
      hosts: hostnqns,
      // The first on the storage server's second disk, which the I/O step writes to (a file
      // on the guests' overlay root is exported with size 0); the others are files.
      namespaces: [{ nsid: 1, device: i === 0 ? "/dev/vdb" : `${IMAGES}/${i}.img` }],
    })),
    ports: Array.from({ length: ports }, (_, p) => ({
      id: p + 1,
      trtype: "rdma",
      adrfam: "ipv4",
      traddr: addr("target", p as 0 | 1),
      trsvcid: 4420,
      subsystems: nqns,
    })),
  });
}

Deno.test("agent follows a second port it could not reach at start, the storage server's power cut and boot (a subsystem added meanwhile), and starts at a compute node's boot", async () => {
  await withCleanup(async (defer) => {
    const hostnqns = [await hostnqnOf("host1"), await hostnqnOf("host2")];
    const links = [addr("target", 0), addr("target", 1)];
    const nqns = [0, 1].map((i) => `${BOOT_PREFIX}${i}`);
    let t0 = performance.now();
    const writeSpec = (subs: number, ports: number) =>
      must(
        "target",
        `mkdir -p /etc/nvmeof ${IMAGES} && truncate -s 64M ${IMAGES}/0.img ${IMAGES}/1.img ${IMAGES}/2.img && ` +
          `cat > /etc/nvmeof/target.yaml <<'SPEC'\n${bootSpec(subs, ports, hostnqns)}SPEC\nsync`,
      );
    defer(() => on("target", `rm -rf ${IMAGES}; true`));
    defer(async () => {
      await nvmeofOn("target", ["target", "disable"]);
      await nvmeofOn("target", ["target", "down", "-f", "/etc/nvmeof/target.yaml", "--force"]);
    });
    await writeSpec(1, 1);
    for (const args of [["target", "enable"], ["target", "up"]]) {
      const r = await nvmeofOn("target", args);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }

    // Both hosts follow both links' discovery ports from discovery.conf; link 1 has no port yet.
    const conf = links.map((a) => `--transport=rdma --traddr=${a} --trsvcid=4420`).join("\n");
    for (const node of HOSTS) {
      defer(() => on(node, deleteAll(links)));
      defer(async () => {
        await nvmeofOn(node, ["agent", "disable"]);
        await on(node, "rm -f /etc/nvme/discovery.conf");
      });
      defer(() =>
        on(
          node,
          `p=$(cat ${WORK}/boot-agent.pid 2>/dev/null) && kill "$p"; pkill -f 'main[.]ts agent'; sleep 1; echo "--- agent on ${node}"; tail -n 30 ${WORK}/boot-agent.log; tail -n 30 /var/log/nvmeof-boot/nvmeof-agent.service.log 2>/dev/null; true`,
        ).then((r) => console.log(r.stdout))
      );
      await must(
        node,
        `printf '%s\\n' '${conf.replaceAll("\n", "' '")}' > /etc/nvme/discovery.conf && ` +
          `mkdir -p ${WORK}; (exec ${NVMEOF} agent --rescan-interval 0 -o json) </dev/null ` +
          `>${WORK}/boot-agent.log 2>&1 & echo $! >${WORK}/boot-agent.pid`,
      );
    }
    // host2's agent is also a unit, which the lab starts at boot as systemd would.
    const en = await nvmeofOn("host2", ["agent", "enable"]);
    assert.equal(en.code, 0, en.stderr);
    for (const node of HOSTS) await untilPaths(node, [nqns[0]], [links[0]], 60, performance.now());
    for (const node of HOSTS) {
      const log = await must(node, `cat ${WORK}/boot-agent.log`);
      const unreachable = log.split("\n").filter((l) =>
        l.includes('"unreachable"') && l.includes(links[1])
      );
      assert.equal(unreachable.length, 1, `${node}: the silent endpoint said once: ${log}`);
    }

    // A second port (link 1) for the subsystem: both hosts gain its second path (retry back-off).
    await writeSpec(1, 2);
    const up = await nvmeofOn("target", ["target", "up"]);
    assert.equal(up.code, 0, up.stderr);
    t0 = performance.now();
    const second = await Promise.all(HOSTS.map((n) => untilPaths(n, [nqns[0]], links, 90, t0)));
    console.log(
      `second port -> second path: host1 ${second[0].toFixed(1)} s, host2 ${
        second[1].toFixed(1)
      } s`,
    );
    for (const node of HOSTS) {
      const heads = await must(node, `ls /sys/block | grep -cE '^nvme[0-9]+n1$'`);
      assert.equal(heads.trim(), "1", `${node}: two paths, one block device`);
    }

    // host1's link 0 (its discovery controller there and one path) is cut while I/O runs on the
    // subsystem: the I/O goes on over link 1, nothing is disconnected; once the link is back, the
    // next change (a second subsystem) reaches host1 on both links.
    const dev = (await must(
      "host1",
      `for n in /sys/block/nvme*n1; do case \${n##*/} in nvme*c*n1) continue ;; esac; [ "$(cat $n/device/subsysnqn 2>/dev/null || cat $n/device/device/subsysnqn)" = "${
        nqns[0]
      }" ] && echo /dev/\${n##*/}; done`,
    )).trim();
    assert.match(dev, /^\/dev\/nvme\d+n1$/);
    await keepingLinks("host1", async () => {
      const io = on(
        "host1",
        `set -e; head -c 16M /dev/urandom > /root/agent-io; for i in $(seq 0 15); do
           dd if=/root/agent-io of=${dev} bs=1M skip=$i seek=$i count=1 oflag=direct conv=fsync status=none; sleep 1
         done; dd if=${dev} bs=1M count=16 iflag=direct status=none | cmp - /root/agent-io && echo same`,
        { timeout: 300 },
      );
      await sleep(3);
      // A blackhole (every packet host1 sends on link 0 dropped; the carrier stays up).
      const hole = await netem("host1", 0, "loss 100%");
      await sleep(20);
      const during = (await pathsOf("host1")).filter((l) => l.startsWith(BOOT_PREFIX));
      await hole.undo();
      assert.equal(during.length, 2, `host1 keeps both paths while link 0 is cut: ${during}`);
      const r = await io;
      assert.equal(r.code, 0, `I/O during the cut: ${r.stderr}`);
      assert.equal(r.stdout.trim(), "same", "what was written during the cut reads back");
    });
    t0 = performance.now();
    await untilPaths("host1", [nqns[0]], links, 120, t0);
    await must(
      "host1",
      `for i in $(seq 240); do n=0; for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = nqn.2014-08.org.nvmexpress.discovery ] && [ "$(cat $c/state)" = live ] && n=$((n+1)); done; [ $n = 2 ] && exit 0; sleep 0.5; done; exit 1`,
      { timeout: 150 },
    );
    console.log(
      `host1's link 0 back -> both paths and discovery controllers live: ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s`,
    );
    await writeSpec(2, 2);
    const upB = await nvmeofOn("target", ["target", "up"]);
    assert.equal(upB.code, 0, upB.stderr);
    t0 = performance.now();
    const changeB = await Promise.all(HOSTS.map((n) => untilPaths(n, nqns, links, 90, t0)));
    console.log(
      `after the cut, a subsystem added -> on both paths: host1 ${changeB[0].toFixed(1)} s, host2 ${
        changeB[1].toFixed(1)
      } s`,
    );

    // The storage server loses power; the spec it boots with adds a third subsystem.
    nqns.push(`${BOOT_PREFIX}2`);
    await writeSpec(3, 2);
    await powerCut("target");
    await boot("target");
    t0 = performance.now();
    // The agent's discovery controllers have the HA profile's keep-alive and reconnect delay: they
    // come back with the paths, and their `rediscover` has the log read then (with nvme-cli's
    // 30 s keep-alive and the kernel's 10 s delay, 65-80 s after the boot in earlier runs).
    const back = await Promise.all(HOSTS.map((n) => untilPaths(n, nqns, links, 60, t0)));
    console.log(
      `storage server booted -> every subsystem on both paths: host1 ${
        back[0].toFixed(1)
      } s, host2 ${back[1].toFixed(1)} s`,
    );
    for (const node of HOSTS) {
      const dcs = (await pathsOf(node)).filter((l) => !l.startsWith(BOOT_PREFIX));
      assert.equal(dcs.length, 2, `${node}: one discovery controller per link: ${dcs}`);
      const timeouts = await must(
        node,
        `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = nqn.2014-08.org.nvmexpress.discovery ] && echo "$(cat $c/kato) $(cat $c/reconnect_delay)"; done; true`,
      );
      assert.equal(timeouts, "1 1\n1 1\n", `${node}: discovery controllers' kato, reconnect_delay`);
    }

    // host2 loses power and boots: its agent starts as a unit and connects everything again.
    await must("host2", "sync");
    await powerCut("host2");
    await boot("host2");
    t0 = performance.now();
    const again = await untilPaths("host2", nqns, links, 180, t0);
    console.log(
      `host2 booted -> its agent connected every subsystem on both paths: ${again.toFixed(1)} s`,
    );
    const unitLog = await must("host2", "cat /var/log/nvmeof-boot/nvmeof-agent.service.log");
    assert.match(unitLog, /connected nqn\.2026-12\.io\.nvmeof\.fab:agent-boot-1 via rdma/);
    // Its start read both logs before connecting: every subsystem has two paths, each connected
    // with connect's HA profile (kato, reconnect_delay, ctrl_loss_tmo, fast_io_fail_tmo).
    const settings = await must(
      "host2",
      `for c in /sys/class/nvme/nvme*; do case "$(cat $c/subsysnqn)" in ${BOOT_PREFIX}*) ;; *) continue ;; esac
         echo "$(cat $c/kato) $(cat $c/reconnect_delay) $(cat $c/ctrl_loss_tmo) $(cat $c/fast_io_fail_tmo)"
       done`,
    );
    console.log(
      `host2's paths (kato reconnect_delay ctrl_loss_tmo fast_io_fail_tmo):\n${settings}`,
    );
    assert.deepEqual(settings.trim().split("\n"), Array(6).fill("1 1 off 30"));
  });
});

Deno.test("agent follows a referral to a second storage server and that server's own changes", async () => {
  await withCleanup(async (defer) => {
    const hq1 = await hostnqnOf("host1");
    const [subA, subB, subB2] = ["ref-a", "ref-b", "ref-b2"].map((n) => `${PREFIX}${n}`);
    // host2 serves here as the second storage server (nvmet is on every node).
    const servers: [Node, string[]][] = [["target", ["ref_a"]], ["host2", ["ref_b", "ref_b2"]]];
    for (const [node, devs] of servers) {
      defer(() =>
        on(
          node,
          devs.map((n) =>
            `echo 0 > /sys/kernel/config/nullb/nullb_${n}/power; rmdir /sys/kernel/config/nullb/nullb_${n}`
          ).join("; ") + "; true",
        )
      );
      await must(
        node,
        "modprobe null_blk nr_devices=0; " + devs.map((n) => {
          const d = `/sys/kernel/config/nullb/nullb_${n}`;
          return `mkdir ${d} && echo 64 > ${d}/size && echo 1 > ${d}/memory_backed && echo 1 > ${d}/power`;
        }).join(" && "),
      );
      defer(() =>
        nvmeofOn(node, ["target", "down", "-f", "/etc/nvmeof/agent-referral.yaml", "--force"])
      );
    }
    const upOn = async (node: Node, subs: string[], devs: string[], referTo?: string) => {
      const spec = {
        hosts: [{ nqn: hq1 }],
        subsystems: subs.map((nqn, i) => ({
          nqn,
          hosts: [hq1],
          namespaces: [{ nsid: 1, device: `/dev/nullb_${devs[i]}` }],
        })),
        ports: [{
          id: 1,
          trtype: "rdma",
          adrfam: "ipv4",
          traddr: addr(node, 0),
          trsvcid: 4420,
          subsystems: subs,
          ...(referTo ? { referrals: [{ traddr: referTo, trsvcid: 4420 }] } : {}),
        }],
      };
      await must(
        node,
        `mkdir -p /etc/nvmeof && cat > /etc/nvmeof/agent-referral.yaml <<'SPEC'\n${
          stringify(spec)
        }SPEC`,
      );
      const r = await nvmeofOn(node, ["target", "up", "-f", "/etc/nvmeof/agent-referral.yaml"]);
      assert.equal(r.code, 0, `${node}: target up: ${r.stderr}`);
    };
    await upOn("host2", [subB], ["ref_b"]);
    await upOn("target", [subA], ["ref_a"], addr("host2", 0));

    defer(() => on("host1", deleteAll([addr("target", 0), addr("host2", 0)])));
    defer(() =>
      on(
        "host1",
        `p=$(cat ${WORK}/referral-agent.pid 2>/dev/null) && kill "$p"; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done; echo "--- agent on host1"; cat ${WORK}/referral-agent.log; true`,
      ).then((r) => console.log(r.stdout))
    );
    await must(
      "host1",
      `mkdir -p ${WORK}; (exec ${NVMEOF} agent -t rdma -a ${
        addr("target", 0)
      } -s 4420 --rescan-interval 0 -o json) </dev/null >${WORK}/referral-agent.log 2>&1 & echo $! >${WORK}/referral-agent.pid`,
    );
    let t0 = performance.now();
    for (const nqn of [subA, subB]) await untilDevice("host1", nqn, t0);
    // The second server changes: its own discovery port's log change event reaches host1's agent
    // through the persistent discovery controller it made for the referral.
    await upOn("host2", [subB, subB2], ["ref_b", "ref_b2"]);
    t0 = performance.now();
    const s = await untilDevice("host1", subB2, t0);
    console.log(`second storage server's change -> block device on host1: ${s.toFixed(1)} s`);
    const log = (await must("host1", `cat ${WORK}/referral-agent.log`)).split("\n")
      .filter(Boolean).map((l) => JSON.parse(l));
    const referred = log.find((l) => l.action === "following" && l.referred_by);
    assert.ok(referred, "a discovery controller followed for the referral");
    assert.match(
      referred.endpoint,
      new RegExp(`^rdma ${addr("host2", 0).replaceAll(".", "\\.")}:4420`),
    );
    const b2 = log.find((l) => l.action === "connected" && l.subnqn === subB2);
    assert.equal(b2?.reason, "log-changed");
    assert.equal(b2?.traddr, addr("host2", 0));
    await assertNoDuplicatesOn("host1");
  });
});
