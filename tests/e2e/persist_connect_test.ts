/**
 * Saved connections on the real kernel (lab guest: nvmet-rdma target and nvme-rdma host on rxe,
 * 10.77.0.1): `connect --persist` saves, `disconnect-all` drops, `connect --saved` brings the
 * controller back; and `--saved` waits, with its backoff, for a target that comes up 10 s after
 * the first attempt failed. Targets are plain configfs writes over memory-backed null_blk
 * devices; everything is removed even when a test fails. nvmeof runs as few times as possible
 * (each start is slow under TCG).
 */
import assert from "node:assert/strict";
import { nvmeof, ROOT, sh } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000b8";
const HI = "1e4a0000-0000-4000-8000-0000000000b8";
const ADDR = "10.77.0.1";
const N = "/sys/kernel/config/nvmet";

/** The shell that builds one subsystem (null_blk namespace, HQ allowed) on its own RDMA port. */
function targetScript(nqn: string, port: number, trsvcid: number): { up: string; down: string } {
  const nb = `nullb_p8_${port}`;
  const p = `${N}/ports/${port}`;
  const up = [
    "set -e",
    `mkdir /sys/kernel/config/nullb/${nb}`,
    `cd /sys/kernel/config/nullb/${nb}; echo 64 > size; echo 1 > memory_backed; echo 1 > power`,
    `mkdir ${N}/subsystems/${nqn}`,
    `mkdir ${N}/subsystems/${nqn}/namespaces/1`,
    `echo /dev/${nb} > ${N}/subsystems/${nqn}/namespaces/1/device_path`,
    `echo 1 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
    `mkdir -p ${N}/hosts/${HQ}`,
    `ln -s ${N}/hosts/${HQ} ${N}/subsystems/${nqn}/allowed_hosts/${HQ}`,
    `mkdir ${p}`,
    `echo rdma > ${p}/addr_trtype; echo ipv4 > ${p}/addr_adrfam`,
    `echo ${ADDR} > ${p}/addr_traddr; echo ${trsvcid} > ${p}/addr_trsvcid`,
    `ln -s ${N}/subsystems/${nqn} ${p}/subsystems/${nqn}`,
  ].join("\n");
  const down = [
    `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${nqn}" ] && echo 1 > $c/delete_controller; done`,
    `rm -f ${p}/subsystems/${nqn}`,
    `rmdir ${p}`,
    `echo 0 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
    `rmdir ${N}/subsystems/${nqn}/namespaces/1`,
    `rm -f ${N}/subsystems/${nqn}/allowed_hosts/${HQ}`,
    `rmdir ${N}/subsystems/${nqn}`,
    `rmdir ${N}/hosts/${HQ}`,
    `echo 0 > /sys/kernel/config/nullb/${nb}/power`,
    `rmdir /sys/kernel/config/nullb/${nb}`,
  ].map((l) => `${l} 2>/dev/null`).join("\n");
  return { up, down };
}

/** Controllers of `nqn` now, from sysfs: `nvme3` … */
async function controllersOf(nqn: string): Promise<string[]> {
  const r = await sh(
    `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${nqn}" ] && basename $c; done; true`,
  );
  return r.stdout.split("\n").filter(Boolean);
}

async function etcDir(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "nvmeof-e2e-etc-" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }).catch(() => {}),
  };
}

Deno.test("a saved connection comes back with connect --saved after disconnect-all", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:persist-back";
  const t = targetScript(nqn, 81, 4481);
  await using etc = await etcDir();
  const env = { NVMEOF_ETC: etc.path };
  try {
    const made = await sh(t.up);
    assert.equal(made.code, 0, `target setup failed: ${made.stderr}`);
    const c = await nvmeof(
      ["connect", "-a", ADDR, "-s", "4481", "-n", nqn, "-q", HQ, "-I", HI, "-i", "1", "--persist"],
      { env },
    );
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /saved in .*connections\.yaml/);
    const saved = await Deno.readTextFile(`${etc.path}/connections.yaml`);
    assert.match(saved, new RegExp(`nqn: ${nqn.replaceAll(".", "\\.")}`));
    assert.match(saved, /hostid: 1e4a0000-0000-4000-8000-0000000000b8/);
    assert.equal((await controllersOf(nqn)).length, 1);

    const off = await nvmeof(["disconnect-all"], { env });
    assert.equal(off.code, 0, off.stderr);
    assert.deepEqual(await controllersOf(nqn), [], "disconnect-all removed the controller");

    const back = await nvmeof(["connect", "--saved", "--retry-for", "30", "-o", "json"], { env });
    assert.equal(back.code, 0, back.stderr);
    const data = JSON.parse(back.stdout);
    assert.equal(data.records.length, 1);
    assert.equal(data.records[0].status, "connected");
    assert.equal(data.records[0].subnqn, nqn);
    assert.equal(data.attempts, 1);
    const ctrls = await controllersOf(nqn);
    assert.deepEqual(ctrls, [data.records[0].device]);
    const ns: string = data.records[0].namespaces[0]; // "/dev/nvme3n1"
    const blk = await sh(`test -b ${ns} && cat /sys/block/${ns.replace("/dev/", "")}/size`);
    assert.equal(blk.code, 0, `no block device ${ns}`);
    assert.equal(blk.stdout.trim(), String(64 * 2048), "the 64 MiB null_blk namespace");
  } finally {
    await sh(t.down);
  }
});

Deno.test("--saved waits for a target that comes up 10 s after the first failed attempt", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:persist-late";
  const t = targetScript(nqn, 82, 4482);
  await using etc = await etcDir();
  await Deno.writeTextFile(
    `${etc.path}/connections.yaml`,
    `connections:
  - transport: rdma
    traddr: ${ADDR}
    trsvcid: "4482"
    nqn: ${nqn}
    hostnqn: ${HQ}
    hostid: ${HI}
    nr_io_queues: 1
`,
  );
  const BOUND_S = 90;
  let late: Deno.ChildProcess | undefined;
  try {
    const child = new Deno.Command(`${ROOT}/scripts/nvmeof`, {
      args: ["connect", "--saved", "--retry-for", String(BOUND_S), "-o", "json"],
      env: { NVMEOF_ETC: etc.path },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const started = performance.now();
    // Watch stderr: once the first attempt has failed, bring the target up 10 s later from a
    // background process.
    let stderr = "";
    let failedAt = 0;
    const dec = new TextDecoder();
    const reader = (async () => {
      for await (const chunk of child.stderr) {
        stderr += dec.decode(chunk);
        if (!late && /attempt 1: /.test(stderr)) {
          failedAt = performance.now();
          late = new Deno.Command("sh", {
            args: ["-c", `sleep 10\n${t.up}`],
            stdout: "null",
            stderr: "piped",
          }).spawn();
        }
      }
    })();
    const stdoutText = new Response(child.stdout).text();
    const status = await child.status;
    const out = { code: status.code, stdout: await stdoutText };
    await reader;
    const elapsed = performance.now() - started;
    assert.ok(late, `the first attempt never failed; stderr: ${stderr}`);
    const upStatus = await late.output();
    assert.equal(upStatus.code, 0, `late target setup failed: ${dec.decode(upStatus.stderr)}`);
    assert.equal(out.code, 0, stderr);
    const data = JSON.parse(out.stdout);
    assert.equal(data.records[0].status, "connected", stderr);
    assert.ok(data.attempts >= 2, `connected on attempt ${data.attempts}`);
    assert.ok(
      performance.now() - failedAt >= 10_000,
      "it connected only after the target came up",
    );
    assert.ok(data.elapsed_ms < BOUND_S * 1000, `took ${data.elapsed_ms} ms, bound ${BOUND_S} s`);
    assert.ok(elapsed < (BOUND_S + 60) * 1000);
    assert.match(stderr, /retrying in \d+\.\d s \(giving up in \d+ s\)/);
    assert.deepEqual(await controllersOf(nqn), [data.records[0].device]);
  } finally {
    if (late) await late.status.catch(() => {});
    await sh(t.down);
  }
});
