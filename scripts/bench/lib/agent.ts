/**
 * The body of scripts/bench/agent.sh: time from a storage server's change to the block device on
 * every compute node, with the agent (`nvmeof agent` on host1 and host2) and with the Ansible
 * collection's site.yml (the fleet path without it), side by side in one lab fabric.
 *
 * Every round adds one subsystem (a 16 MiB image file) allowed to both compute nodes, through the
 * collection's storage play (`site.yml`, module nvmeof_target): for an Ansible round the whole
 * playbook (install, facts, the storage server, then the compute nodes' connect), for an agent
 * round `--tags target` (the storage server only) while the agents follow its discovery port.
 * Rounds alternate, Ansible first. Pollers inside the guests say when the storage server's port
 * serves the subsystem and when each compute node has its block device; the lines are dated as
 * they reach this machine, so both paths are measured with the same clock and the same lag.
 *
 * Figures per round and, at the end, median and max of: the change (the port serves the
 * subsystem) → the block device on each node; the playbook's start → the block device.
 */
import { ROOT } from "../../../tests/helpers.ts";
import { addr, HOSTS, must, type Node, NVMEOF, on } from "../../../tests/fabric/fabric.ts";
import { deleteControllers } from "../../../tests/fabric/plain_target.ts";
import { controller } from "../../../tests/fleet/ansible/controller.ts";

const ROUNDS = Number(Deno.env.get("ROUNDS") ?? "10");
const PREFIX = "nqn.2026-12.io.nvmeof.bench:agent-";
const IMAGES = "/var/lib/nvmeof-bench-agent";
const WORK = "/tmp/nvmeof-bench-agent";
const BOUND_S = 180;
const say = (s: string) => console.error(`bench: ${new Date().toISOString().slice(11, 19)} ${s}`);

/** Starts SCRIPT on NODE; resolves with this machine's clock when it prints its first line. */
function firstLine(node: Node, script: string): { at: Promise<number>; kill(): void } {
  const child = new Deno.Command(`${ROOT}/scripts/lab/lab`, {
    args: ["fabric", "exec", "--timeout", String(BOUND_S + 60), node, "--", "bash", "-c", script],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const at = (async () => {
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    const t = performance.now();
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    if (!value || value.length === 0) throw new Error(`${node}: the poller ended silently`);
    return t;
  })();
  return {
    at,
    kill: () => {
      try {
        child.kill("SIGKILL");
      } catch { /* ended */ }
    },
  };
}

/** The port serving NQN on the storage server. */
function served(nqn: string) {
  return firstLine(
    "target",
    `for i in $(seq ${
      BOUND_S * 20
    }); do [ -L /sys/kernel/config/nvmet/ports/1/subsystems/${nqn} ] && echo y && exit 0; sleep 0.05; done; exit 1`,
  );
}

/** A block device of NQN on NODE. */
function device(node: Node, nqn: string) {
  return firstLine(
    node,
    `for i in $(seq ${BOUND_S * 20}); do
       for n in /sys/block/nvme*n1; do case \${n##*/} in nvme*c*n1) continue ;; esac
         [ "$(cat $n/device/subsysnqn 2>/dev/null || cat $n/device/device/subsysnqn 2>/dev/null)" = "${nqn}" ] && [ -b /dev/\${n##*/} ] && echo y && exit 0
       done; sleep 0.05
     done; exit 1`,
  );
}

interface Round {
  kind: "ansible" | "agent";
  nqn: string;
  wall: number;
  /** From the playbook's start: the port serves it; each node has its device. */
  served: number;
  devices: number[];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function startAgents(): Promise<void> {
  for (const node of HOSTS) {
    await must(
      node,
      `mkdir -p ${WORK}; (exec ${NVMEOF} agent -t rdma -a ${
        addr("target", 0)
      } -s 4420 --rescan-interval 0 -o json) </dev/null >>${WORK}/agent.log 2>&1 & echo $! >${WORK}/agent.pid`,
    );
  }
  // Each has read the log and connected what exists before the change.
  for (const node of HOSTS) {
    await must(
      node,
      `for i in $(seq 600); do grep -q '"following"' ${WORK}/agent.log && sleep 2 && exit 0; sleep 0.1; done; exit 1`,
    );
  }
}

async function stopAgents(): Promise<void> {
  for (const node of HOSTS) {
    await on(
      node,
      `p=$(cat ${WORK}/agent.pid 2>/dev/null) && kill "$p"; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done; true`,
    );
  }
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-bench-agent-" });
  const c = await controller(dir, {
    nvmeof_source_checkout: ROOT,
    nvmeof_referrals: [],
  });
  const nqns: string[] = [];
  const rounds: Round[] = [];
  try {
    await must(
      "target",
      `mkdir -p ${IMAGES} && for i in $(seq 0 ${
        2 * ROUNDS
      }); do truncate -s 16M ${IMAGES}/$i.img; done`,
    );
    for (let i = 0; i < 2 * ROUNDS; i++) {
      const kind = i % 2 === 0 ? "ansible" : "agent";
      const nqn = `${PREFIX}${String(i).padStart(2, "0")}`;
      nqns.push(nqn);
      if (kind === "agent") await startAgents();
      const port = served(nqn);
      const devs = HOSTS.map((n) => device(n, nqn));
      const t0 = performance.now();
      const r = await c.play(
        "site.yml",
        kind === "agent" ? ["--tags", "target"] : [],
        { nvmeof_subsystem: nqn, nvmeof_namespaces: [{ nsid: 1, device: `${IMAGES}/${i}.img` }] },
      );
      const wall = (performance.now() - t0) / 1000;
      if (r.code !== 0) {
        throw new Error(`site.yml (${kind}): exit ${r.code}\n${r.stdout}${r.stderr}`);
      }
      const [s, ...d] = await Promise.all([port.at, ...devs.map((x) => x.at)]);
      if (kind === "agent") await stopAgents();
      const round: Round = {
        kind,
        nqn,
        wall,
        served: (s - t0) / 1000,
        devices: d.map((t) => (t - t0) / 1000),
      };
      rounds.push(round);
      say(
        `${kind.padEnd(7)} ${nqn}: playbook ${wall.toFixed(1)} s; served at ${
          round.served.toFixed(1)
        } s; devices at ${round.devices.map((x) => x.toFixed(1)).join(", ")} s`,
      );
    }
  } finally {
    await stopAgents();
    for (const node of HOSTS) {
      // The subsystems' controllers, then the agents' discovery controllers at the port.
      await on(
        node,
        `${deleteControllers(nqns)}\n` +
          `for c in /sys/class/nvme/nvme*; do grep -q "traddr=${
            addr("target", 0)
          },trsvcid=4420" $c/address 2>/dev/null && echo 1 > $c/delete_controller; done; rm -rf ${WORK}; true`,
      );
    }
    await on("target", `${NVMEOF} target down --all --force; rm -rf ${IMAGES}; true`);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const table: string[] = [
    "| path | rounds | change → block device, median / max (s) | playbook start → block device, median / max (s) | playbook wall, median (s) |",
    "| --- | --- | --- | --- | --- |",
  ];
  const stats: Record<string, number> = {};
  for (const kind of ["ansible", "agent"] as const) {
    const rs = rounds.filter((r) => r.kind === kind);
    if (rs.length === 0) continue;
    const change = rs.flatMap((r) => r.devices.map((d) => d - r.served));
    const start = rs.flatMap((r) => r.devices);
    stats[kind] = median(change);
    table.push(
      `| ${
        kind === "agent" ? "nvmeof agent (site.yml --tags target)" : "site.yml (whole)"
      } | ${rs.length} | ${median(change).toFixed(1)} / ${Math.max(...change).toFixed(1)} | ${
        median(start).toFixed(1)
      } / ${Math.max(...start).toFixed(1)} | ${median(rs.map((r) => r.wall)).toFixed(1)} |`,
    );
  }
  console.log(table.join("\n"));
  if (stats.agent && stats.ansible) {
    console.log(
      `change → block device, median: agent ${stats.agent.toFixed(1)} s, Ansible ${
        stats.ansible.toFixed(1)
      } s (agent / Ansible ${(stats.agent / stats.ansible).toFixed(2)})`,
    );
  }
}

await main();
