/**
 * The storage server at a reduced scale, with connections from two other machines (the CI run of
 * scripts/bench/scale.sh's correctness points): 16 subsystems, 64 allowed host NQNs (4 per
 * subsystem, none open to any host), an rdma and a tcp port serving every subsystem; host1 opens
 * 16 controllers over rdma and host2 16 over tcp, each as a host NQN and host ID of its own
 * (`nvmeof connect -q -I`, one I/O queue), so the storage server holds 32 controllers of 32 hosts.
 *
 * Checked under them: a second `up` plans nothing; host1's `list --paths` shows its 16
 * controllers live, one per host NQN; the storage server's metrics count every queue on each port; `down --all` and `up --prune`
 * of a connected subsystem refuse, name both machines and change nothing (every path, link and
 * attribute value of the nvmet tree compared); and once the hosts are gone, `show` → `down` → `up`
 * of what show printed rebuilds the same tree, and show prints the same spec, byte for byte.
 */
import assert from "node:assert/strict";
import { addr, must, type Node, NVMEOF, nvmeofOn, on, withCleanup } from "./fabric.ts";

const S = 16;
const HOSTS_PER_SUBSYSTEM = 4;
/** Controllers each compute node opens per subsystem it connects to. */
const PER_SUBSYSTEM = 2;
const ADDR = addr("target", 0);
const NVMET = "/sys/kernel/config/nvmet";
const SPEC = "/etc/nvmeof/scale.yaml";

const subNqn = (s: number) => `nqn.2026-10.pk.nextgen:scale-${String(s).padStart(4, "0")}`;
const hostNqn = (h: number) => `nqn.2026-10.pk.nextgen:compute-${String(h).padStart(5, "0")}`;
/** A host ID of its own per host NQN (the kernel refuses one ID under two NQNs). */
const hostId = (h: number) => `5ca1e000-0000-4000-8000-${String(h).padStart(12, "0")}`;

/** The spec: S subsystems (all but DROP), one null_blk namespace each, both ports serving all. */
function spec(drop?: number): string {
  const subs = Array.from({ length: S }, (_, i) => i + 1).filter((s) => s !== drop);
  const out = ["subsystems:"];
  for (const s of subs) {
    out.push(`  - nqn: ${subNqn(s)}`, "    hosts:");
    for (let k = 1; k <= HOSTS_PER_SUBSYSTEM; k++) {
      out.push(`      - ${hostNqn((s - 1) * HOSTS_PER_SUBSYSTEM + k)}`);
    }
    out.push("    namespaces:", `      - {nsid: 1, device: /dev/fnb_scale${s}}`);
  }
  out.push("ports:");
  for (const [id, trtype, svc] of [[1, "rdma", 4420], [2, "tcp", 4421]]) {
    out.push(`  - id: ${id}`, `    trtype: ${trtype}`, `    traddr: ${ADDR}`);
    out.push(`    trsvcid: ${svc}`, "    subsystems:");
    for (const s of subs) out.push(`      - ${subNqn(s)}`);
  }
  return out.join("\n") + "\n";
}

/** Every path, link target and readable attribute value of the nvmet tree, sorted. */
function nvmetTree(): Promise<string> {
  return must(
    "target",
    `cd ${NVMET} && { find . -printf '%p %l\\n'; grep -rs . . ; } | sort`,
  );
}

/** The compute nodes' share: host1 subsystems 1-8 over rdma, host2 9-16 over tcp. */
const SHARE: { node: Node; trtype: "rdma" | "tcp"; svc: number; subs: number[] }[] = [
  { node: "host1", trtype: "rdma", svc: 4420, subs: [1, 2, 3, 4, 5, 6, 7, 8] },
  { node: "host2", trtype: "tcp", svc: 4421, subs: [9, 10, 11, 12, 13, 14, 15, 16] },
];

/**
 * The connects of one compute node, one host NQN and ID each, in one script: `nvmeof connect`
 * (nvme-cli 2.3's libnvme calls a second host NQN to the same subsystem and address "already
 * connected", even with -D).
 */
function connectScript(p: typeof SHARE[number]): string {
  const lines = [`modprobe nvme-${p.trtype}`];
  for (const s of p.subs) {
    for (let k = 1; k <= PER_SUBSYSTEM; k++) {
      const h = (s - 1) * HOSTS_PER_SUBSYSTEM + k;
      lines.push(
        `${NVMEOF} connect -t ${p.trtype} -a ${ADDR} -s ${p.svc} -n ${subNqn(s)} ` +
          `-q ${hostNqn(h)} -I ${hostId(h)} -i 1 -Q 32 >/dev/null || exit 1`,
      );
    }
  }
  return lines.join("\n");
}

/** Disconnects every controller of the scale subsystems on NODE. */
function disconnectScript(): string {
  return `for s in /sys/class/nvme/nvme*; do case "$(cat $s/subsysnqn 2>/dev/null)" in ` +
    `nqn.2026-10.pk.nextgen:scale-*) echo 1 > $s/delete_controller ;; esac; done; true`;
}

Deno.test("the storage server at 16 subsystems, 64 hosts, 32 controllers from two machines: no-op up, refusals naming both, show-down-up byte for byte", async () => {
  await withCleanup(async (defer) => {
    defer(async () => {
      for (const p of SHARE) await on(p.node, disconnectScript());
      await nvmeofOn("target", ["target", "down", "--all", "--force"]);
      await on(
        "target",
        `for s in $(seq ${S}); do d=/sys/kernel/config/nullb/fnb_scale$s; ` +
          `[ -d $d ] && { echo 0 > $d/power; rmdir $d; }; done; rm -f /etc/nvmeof/scale*.yaml; true`,
      );
    });
    // 16 null_blk disks (not memory backed: they hold no data) and the spec.
    await must(
      "target",
      `modprobe null_blk nr_devices=0 && for s in $(seq ${S}); do d=/sys/kernel/config/nullb/fnb_scale$s; ` +
        `mkdir $d && echo 64 > $d/size && echo 1 > $d/power || exit 1; done; mkdir -p /etc/nvmeof && ` +
        `cat > ${SPEC} <<'SPEC'\n${spec()}SPEC\ncat > /etc/nvmeof/scale_drop1.yaml <<'SPEC'\n${
          spec(1)
        }SPEC`,
    );
    const up = await nvmeofOn("target", ["target", "up", "-f", SPEC], { timeout: 600 });
    assert.equal(up.code, 0, up.stderr);

    // 32 controllers, 32 host NQNs, from two machines.
    await Promise.all(SHARE.map((p) => must(p.node, connectScript(p), { timeout: 600 })));
    const listed = JSON.parse(
      (await nvmeofOn("host1", ["list", "--paths", "-o", "json"])).stdout,
    ) as {
      subsystems: {
        subsysnqn: string;
        controllers: { hostnqn: string; state: string; address: { traddr?: string } }[];
      }[];
    };
    const mine = listed.subsystems.filter((s) =>
      s.subsysnqn.startsWith("nqn.2026-10.pk.nextgen:scale-")
    );
    assert.equal(mine.length, 8, JSON.stringify(mine.map((s) => s.subsysnqn)));
    const ctrls = mine.flatMap((s) => s.controllers);
    assert.equal(ctrls.length, 8 * PER_SUBSYSTEM);
    assert.ok(ctrls.every((c) => c.state === "live" && c.address.traddr === ADDR));
    assert.equal(new Set(ctrls.map((c) => c.hostnqn)).size, 8 * PER_SUBSYSTEM);

    // A second up plans nothing.
    const dry = await nvmeofOn("target", ["target", "up", "-f", SPEC, "--dry-run", "-o", "json"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(JSON.parse(dry.stdout).steps, []);
    const again = await nvmeofOn("target", ["target", "up", "-f", SPEC]);
    assert.match(again.stdout, /^No changes/);

    // The storage server's metrics see every queue: an admin and an I/O queue per controller.
    const metrics = (await nvmeofOn("target", ["metrics"])).stdout;
    for (const port of ["1", "2"]) {
      const m = new RegExp(
        `^nvmeof_target_port_connections\\{[^}]*port="${port}"[^}]*\\} (\\d+)$`,
        "m",
      )
        .exec(metrics);
      assert.ok(m, `no nvmeof_target_port_connections for port ${port}`);
      assert.equal(Number(m[1]), 8 * PER_SUBSYSTEM * 2, `port ${port}'s queues`);
    }

    // Refusals: named, and nothing changed.
    const before = await nvmetTree();
    const down = await nvmeofOn("target", ["target", "down", "--all"]);
    assert.equal(down.code, 1, down.stderr);
    assert.match(down.stderr, /Hosts are still connected to what this would remove/);
    assert.match(
      down.stderr,
      new RegExp(`port 1 \\(rdma ${ADDR}:4420[^)]*\\): ${addr("host1", 0)}`),
    );
    assert.match(
      down.stderr,
      new RegExp(`port 2 \\(tcp ${ADDR}:4421[^)]*\\): ${addr("host2", 0)}`),
    );
    assert.match(down.stderr, /nothing was changed/);
    const prune = await nvmeofOn("target", [
      "target",
      "up",
      "--prune",
      "-f",
      "/etc/nvmeof/scale_drop1.yaml",
    ]);
    assert.equal(prune.code, 1, prune.stderr);
    assert.match(prune.stderr, new RegExp(`${addr("host1", 0)}.*nothing was changed`, "s"));
    assert.equal(await nvmetTree(), before, "a refusal changed the tree");
    console.log(`down --all: ${down.stderr.trim()}\nup --prune: ${prune.stderr.trim()}`);

    // The hosts go; then show → down → up rebuilds the tree, and show prints the same.
    for (const p of SHARE) await must(p.node, disconnectScript());
    const gone = await on(
      "target",
      `for i in $(seq 150); do rdma res show cm_id | grep -q 'state CONNECT' || ` +
        `ss -Htn state established '( sport = :4421 )' | grep -q . || exit 0; sleep 0.2; done; exit 1`,
    );
    assert.equal(gone.code, 0, "the storage server still sees queues 30 s after the disconnects");
    const shown = await nvmeofOn("target", ["target", "show"]);
    assert.equal(shown.code, 0, shown.stderr);
    await must("target", `cat > /etc/nvmeof/scale_shown.yaml <<'SPEC'\n${shown.stdout}SPEC`);
    const tree = await nvmetTree();
    const gone2 = await nvmeofOn("target", ["target", "down", "--all"]);
    assert.equal(gone2.code, 0, gone2.stderr);
    assert.equal(
      await must(
        "target",
        `ls ${NVMET}/subsystems ${NVMET}/ports ${NVMET}/hosts | grep -v : | grep .; true`,
      ),
      "",
    );
    const back = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/scale_shown.yaml"], {
      timeout: 600,
    });
    assert.equal(back.code, 0, back.stderr);
    assert.equal(await nvmetTree(), tree, "the tree made from show's spec is not the one shown");
    const shownAgain = await nvmeofOn("target", ["target", "show"]);
    assert.equal(shownAgain.stdout, shown.stdout);
  });
});
