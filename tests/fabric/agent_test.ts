/**
 * `nvmeof agent` across machines: host1 and host2 each run the agent against the storage server's
 * discovery port on link 0 (the periodic re-read off, so that only the kernel's events can move
 * it), and the storage server changes only through `nvmeof target up`. Each subsystem added for
 * both hosts reaches a block device on both; one allowed to host1 only reaches host1 and never
 * host2; no host ever holds two controllers of one subsystem. The time from `target up`'s return
 * to each block device (polled from this machine, so an upper bound) is printed, median and max.
 * Everything made (agents, controllers, the target, null_blk devices) is removed whether the test
 * passes or not.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { addr, hostnqnOf, must, type Node, NVMEOF, nvmeofOn, on, withCleanup } from "./fabric.ts";

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

/** No host holds two controllers of one subsystem. */
async function assertNoDuplicates(): Promise<void> {
  for (const node of HOSTS) {
    const nqns = (await controllers(node)).map((l) => l.split(" ")[0]);
    assert.deepEqual(nqns, [...new Set(nqns)], `${node}: a subsystem with two controllers`);
  }
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
      defer(() =>
        on(
          node,
          `for c in /sys/class/nvme/nvme*; do grep -q "traddr=${TRADDR},trsvcid=4420" $c/address 2>/dev/null && echo 1 > $c/delete_controller; done; true`,
        )
      );
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
