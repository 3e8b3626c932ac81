/**
 * The Ansible collection (integrations/ansible, nvmeof.fabric) driving the fabric from this
 * machine over SSH, as a fleet would be driven: each node's sshd is reachable only through its
 * 127.0.0.1 port forward (scripts/lab/lab fabric ssh-config --inventory), with this run's key.
 *
 * One playbook (playbooks/site.yml) installs nvmeof on every node, exports the storage server's
 * second disk to the compute nodes (its port with a referral) and connects them; data written on
 * one reads back on the other; the same playbook again changes nothing; check mode with a
 * namespace added reports the steps as a diff and leaves configfs alone; absent.yml takes
 * everything away; a compute node without RDMA devices fails with nvmeof's message while the
 * others go on.
 *
 * Each task's per-host duration is logged (tests/fleet/ansible/timing.py) and printed at the end.
 */
import assert from "node:assert/strict";
import { ROOT, tempDir } from "../helpers.ts";
import { controller, output, type PlayRun, type TaskLine } from "./ansible/controller.ts";
import { addr, HOSTS, must, type Node, nvmeofOn, on, withCleanup } from "../fabric/fabric.ts";

const NQN = "nqn.2026-12.io.nvmeof.fab:ansible";
const NODES: Node[] = ["target", ...HOSTS];
const REFERRAL = addr("host2", 0);

/** The variables of every run: the pool this test exports and connects. */
const VARS = {
  nvmeof_source_checkout: ROOT,
  nvmeof_subsystem: NQN,
  nvmeof_namespaces: [{ nsid: 1, device: "/dev/vdb" }],
  // The storage server's discovery port refers hosts to another discovery controller (host2's
  // address, as if it were a second storage server: tests/fabric/referrals_test.ts makes it one).
  nvmeof_referrals: [{ traddr: REFERRAL, trsvcid: 4420 }],
};

const timings: PlayRun[] = [];

function changedOn(lines: TaskLine[], host: string): TaskLine[] {
  return lines.filter((l) => l.host === host && l.changed);
}

/** The block device of NQN's namespace 1 on NODE. */
async function deviceOf(node: Node): Promise<string> {
  return (await must(
    node,
    // With native multipath /sys/block also lists each path (nvme0c0n1), which has no /dev node:
    // only the head (nvme0n1) is a block device to read and write.
    `for n in /sys/block/nvme*n1; do case \${n##*/} in nvme*c*n1) continue ;; esac; [ "$(cat $n/device/subsysnqn 2>/dev/null || cat $n/device/device/subsysnqn 2>/dev/null)" = "${NQN}" ] && [ -b /dev/\${n##*/} ] && echo /dev/\${n##*/} && exit 0; done; exit 1`,
  )).trim();
}

function printTimings() {
  console.log("per-host seconds of each task (wall seconds of each run):");
  for (const t of timings) {
    console.log(`  ${t.run}: ${t.wall.toFixed(0)} s`);
    for (const l of t.lines) {
      if (l.status === "skipped") continue;
      console.log(
        `    ${l.host.padEnd(7)} ${String(l.seconds).padStart(7)} s  ${l.status}${
          l.changed ? " changed" : ""
        }  ${l.play} / ${l.task}`,
      );
    }
  }
}

Deno.test("fabric ssh: every node's sshd is forwarded from 127.0.0.1 only, through restricted user networking", async () => {
  for (const node of NODES) {
    const port = (await Deno.readTextFile(
      `${
        (await output(`${ROOT}/scripts/lab/lab`, ["fabric", "dir"])).stdout.trim()
      }/${node}/ssh.port`,
    )).trim();
    const ss = await output("ss", ["-Htln", `sport = :${port}`]);
    const locals = ss.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/)[3]);
    assert.deepEqual(locals, [`127.0.0.1:${port}`], `${node}: ${ss.stdout}`);
    const pid = (await Deno.readTextFile(
      `${
        (await output(`${ROOT}/scripts/lab/lab`, ["fabric", "dir"])).stdout.trim()
      }/${node}/qemu.pid`,
    )).trim();
    const cmdline = (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0");
    const user = cmdline.filter((a) => a.startsWith("user,"));
    assert.deepEqual(user.length, 1, `${node}: ${user}`);
    assert.match(user[0], /restrict=on/);
    assert.match(user[0], new RegExp(`hostfwd=tcp:127\\.0\\.0\\.1:${port}-`));
    // Inside, sshd listens on the forwarded NIC's address alone (not on the fabric links).
    const inside = await must(node, "ss -Htln 'sport = :22'");
    assert.deepEqual(inside.trim().split("\n").map((l) => l.trim().split(/\s+/)[3]), [
      "10.0.2.15:22",
    ]);
  }
});

Deno.test("ansible: up, idempotent, check mode with diff, absent, and a host that cannot connect", async () => {
  await using dir = await tempDir("nvmeof-ansible-");
  const c = await controller(dir.path, VARS, (r) => timings.push(r));
  await withCleanup(async (defer) => {
    defer(async () => {
      for (const h of HOSTS) await nvmeofOn(h, ["disconnect", "-n", NQN]);
      await nvmeofOn("target", ["target", "down", "--all", "--force"]);
      printTimings();
    });

    // 1. One playbook: install, target up on the storage server, both compute nodes connected.
    const up = await c.play("site.yml");
    assert.equal(up.code, 0, up.stdout + up.stderr);
    for (const node of NODES) {
      assert.ok(
        up.lines.some((l) => l.host === node && l.status === "ok"),
        `${node} ran no task: ${up.stdout}`,
      );
    }
    assert.ok(changedOn(up.lines, "target").some((l) => l.task === "The target from the spec"));
    const dev1 = await deviceOf("host1");
    const dev2 = await deviceOf("host2");
    const written = (await must(
      "host1",
      `head -c 1048576 /dev/urandom > /tmp/a.bin && dd if=/tmp/a.bin of=${dev1} bs=1M count=1 oflag=direct status=none && sha256sum < /tmp/a.bin | cut -c1-64`,
    )).trim();
    const read = (await must(
      "host2",
      `dd if=${dev2} bs=1M count=1 iflag=direct status=none | sha256sum | cut -c1-64`,
    )).trim();
    assert.equal(read, written, "what host1 wrote reads back on host2");
    assert.equal(
      (await must(
        "target",
        "cd /sys/kernel/config/nvmet/ports/1/referrals && for r in *; do echo $(cat $r/addr_traddr $r/addr_trsvcid $r/enable); done",
      )).trim(),
      `${REFERRAL} 4420 1`,
      "the spec's referral is on the storage server's port",
    );
    for (const node of ["host1", "host2"] as const) {
      assert.equal(
        (await must(
          node,
          // A path's namespace: nvmeXcYn1 under native multipath, else nvmeXn1.
          "for f in /sys/class/nvme/nvme*/nvme*n1/queue/io_timeout; do cat $f; done | sort -u",
        )).trim(),
        "2000",
        `${node}: site.yml's io_timeout (2 s) on its path's namespace queue, as the kernel reads it`,
      );
    }

    // 2. The same playbook again: changed=0 on every host.
    const again = await c.play("site.yml");
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.deepEqual(again.lines.filter((l) => l.changed), [], again.stdout);

    // 3. Check mode with one namespace added: changed, a diff listing the steps, configfs as it was.
    await must("target", "truncate -s 64M /var/tmp/ns2.img");
    const tree = "find /sys/kernel/config/nvmet -printf '%p %l\\n' | sort";
    const before = await must("target", tree);
    const check = await c.play("site.yml", ["--check", "--diff", "--tags", "target"], {
      nvmeof_namespaces: [{ nsid: 1, device: "/dev/vdb" }, { nsid: 2, device: "/var/tmp/ns2.img" }],
    });
    assert.equal(check.code, 0, check.stdout + check.stderr);
    const t = check.lines.find((l) => l.task === "The target from the spec")!;
    assert.ok(t.changed, JSON.stringify(t));
    const diff = JSON.stringify(t.diff);
    assert.match(diff, /mkdir +subsystems\/nqn\.2026-12\.io\.nvmeof\.fab:ansible\/namespaces\/2/);
    assert.match(diff, /namespaces\/2\/device_path = '\/var\/tmp\/ns2\.img'/);
    assert.match(check.stdout, /namespaces\/2/, "the diff is shown to the user");
    assert.equal(await must("target", tree), before, "check mode wrote nothing to configfs");

    // 4. state absent everywhere: hosts disconnected, target empty.
    const absent = await c.play("absent.yml");
    assert.equal(absent.code, 0, absent.stdout + absent.stderr);
    for (const h of HOSTS) {
      assert.ok(changedOn(absent.lines, h).length > 0, `${h} disconnected`);
      assert.equal(
        (await must(h, `grep -lx '${NQN}' /sys/class/nvme/nvme*/subsysnqn 2>/dev/null; true`))
          .trim(),
        "",
      );
    }
    assert.equal(
      (await must(
        "target",
        "ls /sys/kernel/config/nvmet/subsystems /sys/kernel/config/nvmet/ports",
      ))
        .replace(/\/sys\S+:|\s/g, ""),
      "",
    );

    // 5. host2 has no RDMA device: it fails with nvmeof's message; target and host1 go on.
    defer(() =>
      on(
        "host2",
        "rdma link add rxe0 type rxe netdev fab0; rdma link add rxe1 type rxe netdev fab1",
      )
    );
    await must("host2", "rdma link delete rxe0 && rdma link delete rxe1");
    const broken = await c.play("site.yml", ["--tags", "target,connect"]);
    assert.notEqual(broken.code, 0, "a failed host makes the run fail");
    const h2 = broken.lines.find((l) =>
      l.host === "host2" && l.task === "The pool, on every path"
    )!;
    assert.equal(h2.status, "failed", JSON.stringify(h2));
    assert.match(h2.msg ?? "", /RDMA|rdma|route|device/i, JSON.stringify(h2));
    assert.equal(h2.rc !== undefined && h2.rc !== 0, true);
    const h1 = broken.lines.find((l) =>
      l.host === "host1" && l.task === "The pool, on every path"
    )!;
    assert.equal(h1.status, "ok", JSON.stringify(h1));
    assert.ok(h1.changed);
    await deviceOf("host1");
    assert.match(broken.stdout, /host1 +: ok=\d+ +changed=1 .*failed=0/);
    assert.match(broken.stdout, /host2 +: ok=\d+ +changed=0 .*failed=1/);
  });
});
