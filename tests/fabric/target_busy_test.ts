/**
 * `nvmeof target down` on the storage server while a compute node (host1, another kernel) is
 * connected with nvme-cli: the storage server's 6.1 kernel has no nvmet debugfs, so the only
 * trace of host1 is nvmet's queues (RDMA CM ids, TCP connections). The removal must be refused,
 * naming host1's address, and configfs left as it was; once host1 disconnects it goes ahead.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { addr, hostnqnOf, must, nvmeofOn, on, withCleanup } from "./fabric.ts";

const ADDR = addr("target", 0);
const HOST1 = addr("host1", 0);
const NVMET = "/sys/kernel/config/nvmet";

/** A memory-backed null_blk of 64 MiB on the target, removed by the cleanup. */
async function nullb(name: string, defer: (c: () => Promise<unknown>) => void): Promise<string> {
  const d = `/sys/kernel/config/nullb/${name}`;
  await must(
    "target",
    `modprobe null_blk nr_devices=0; mkdir ${d} && echo 64 > ${d}/size && echo 1 > ${d}/memory_backed && echo 1 > ${d}/power`,
  );
  defer(() => on("target", `echo 0 > ${d}/power; rmdir ${d}`));
  return `/dev/${name}`;
}

/** The whole nvmet tree on the target, one path (and link target) a line. */
function nvmetTree(): Promise<string> {
  return must("target", `cd ${NVMET} && find . -printf '%p %l\\n' | sort`);
}

/** Waits until SCRIPT (a test on the target) succeeds, up to 20 s. */
async function waitOnTarget(script: string, what: string): Promise<void> {
  const r = await on(
    "target",
    `for i in $(seq 1 100); do ${script} && exit 0; sleep 0.2; done; exit 1`,
  );
  assert.equal(r.code, 0, `the target never saw ${what}`);
}

async function refusesWhileConnected(trtype: "rdma" | "tcp", svc: number, tag: string) {
  const subnqn = `nqn.2026-10.pk.nextgen:busy-${trtype}`;
  await withCleanup(async (defer) => {
    defer(async () => {
      await on("host1", `nvme disconnect -n ${subnqn}`);
      await nvmeofOn("target", ["target", "down", "--all", "--force"]);
    });
    const hostnqn = await hostnqnOf("host1");
    const dev = await nullb(`fnb_busy_${tag}`, defer);
    const spec = {
      hosts: [{ nqn: hostnqn }],
      subsystems: [{ nqn: subnqn, hosts: [hostnqn], namespaces: [{ nsid: 1, device: dev }] }],
      ports: [{ id: 1, trtype, adrfam: "ipv4", traddr: ADDR, trsvcid: svc, subsystems: [subnqn] }],
    };
    await must(
      "target",
      `mkdir -p /etc/nvmeof && cat > /etc/nvmeof/busy.yaml <<'SPEC'\n${stringify(spec)}SPEC`,
    );
    const up = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/busy.yaml"]);
    assert.equal(up.code, 0, up.stderr);
    await must(
      "host1",
      `modprobe nvme-${trtype} && nvme connect -t ${trtype} -a ${ADDR} -s ${svc} -n ${subnqn}`,
    );
    const before = await nvmetTree();

    const down = await nvmeofOn("target", ["target", "down", "--all"]);
    assert.equal(down.code, 1, down.stderr);
    assert.match(
      down.stderr,
      new RegExp(
        `Hosts are still connected to what this would remove: to port 1 \\(${trtype} ${ADDR}:${svc}, serving '${subnqn}'\\): ${HOST1}; nothing was changed`,
      ),
    );
    assert.match(down.stderr, /--force/);
    assert.equal(await nvmetTree(), before);

    await must("host1", `nvme disconnect -n ${subnqn}`);
    await waitOnTarget(
      trtype === "rdma"
        ? "! rdma res show cm_id | grep -q 'state CONNECT'"
        : `! ss -Htn state established '( sport = :${svc} )' | grep -q .`,
      "host1's queues go",
    );
    const after = await nvmeofOn("target", ["target", "down", "--all"]);
    assert.equal(after.code, 0, after.stderr);
    assert.equal(
      await must(
        "target",
        `ls ${NVMET}/hosts ${NVMET}/subsystems ${NVMET}/ports | grep -v : | grep .; true`,
      ),
      "",
    );
  });
}

Deno.test("target down --all on the storage server refuses while host1 is connected over rdma, naming 10.78.0.2; goes ahead after nvme disconnect", async () => {
  await refusesWhileConnected("rdma", 4420, "r");
});

Deno.test("target down --all on the storage server refuses while host1 is connected over nvmet-tcp, naming 10.78.0.2; goes ahead after nvme disconnect", async () => {
  await refusesWhileConnected("tcp", 4421, "t");
});
