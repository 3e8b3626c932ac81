/**
 * `nvmeof target` on the storage server, with nvme-cli on a compute node as the independent peer
 * that discovers, connects and does I/O across the wire. Each test removes what it made (the
 * compute node's controllers, the target's configfs entries and devices), even when it fails.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { addr, hostnqnOf, must, nvmeofOn, on, withCleanup } from "./fabric.ts";
import { controllersOf, deleteControllers } from "./plain_target.ts";

const ADDR = addr("target", 0);
const SUB1 = "nqn.2026-10.pk.nextgen:fab-pool-1";
const SUB2 = "nqn.2026-10.pk.nextgen:fab-pool-2";
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

/** Disconnects host1 from the test's subsystems and clears nvmet (registered first: runs last). */
function clearAll(defer: (c: () => Promise<unknown>) => void): void {
  defer(async () => {
    await on("host1", deleteControllers([SUB1, SUB2]));
    const r = await nvmeofOn("target", ["target", "down", "--all", "--force"]);
    if (r.code !== 0) console.error(`cleanup: target down failed: ${r.stderr}`);
  });
}

/** Writes FILE on the target. */
async function writeOnTarget(file: string, text: string): Promise<void> {
  await must("target", `mkdir -p $(dirname ${file}) && cat > ${file} <<'SPEC'\n${text}SPEC`);
}

function spec(hostnqn: string, dev: { a: string; b: string; disk: string }) {
  return {
    hosts: [{ nqn: hostnqn }],
    subsystems: [
      {
        nqn: SUB1,
        hosts: [hostnqn],
        namespaces: [{ nsid: 1, device: dev.a }, { nsid: 2, device: dev.disk }],
      },
      { nqn: SUB2, hosts: [hostnqn], namespaces: [{ nsid: 1, device: dev.b }] },
    ],
    ports: [{
      id: 1,
      trtype: "rdma",
      adrfam: "ipv4",
      traddr: ADDR,
      trsvcid: 4420,
      subsystems: [SUB1, SUB2],
    }],
  };
}

/** host1's block device for NSID of SUBNQN (waits for the namespace scan). */
async function hostDevice(subnqn: string, nsid: number): Promise<string> {
  const out = await must(
    "host1",
    `for i in $(seq 1 100); do
       for c in /sys/class/nvme/nvme*; do
         [ "$(cat $c/subsysnqn 2>/dev/null)" = "${subnqn}" ] || continue
         for n in /sys/block/nvme*; do
           [ -e $n/device ] && [ "$(cat $n/device/subsysnqn 2>/dev/null)" = "${subnqn}" ] || continue
           [ "$(cat $n/nsid)" = "${nsid}" ] && [ -b /dev/\${n##*/} ] && echo /dev/\${n##*/} && exit 0
         done
       done
       sleep 0.1
     done; exit 1`,
  );
  return out.trim();
}

/** 1 MiB of random data written through DEV on host1 at SEEK MiB, read back and compared. */
async function roundTripIo(dev: string, seekMiB: number): Promise<void> {
  await must(
    "host1",
    `set -e; head -c 1048576 /dev/urandom > /root/io.in
     dd if=/root/io.in of=${dev} bs=1M count=1 seek=${seekMiB} oflag=direct conv=fsync status=none
     dd if=${dev} of=/root/io.out bs=1M count=1 skip=${seekMiB} iflag=direct status=none
     cmp /root/io.in /root/io.out`,
  );
}

function nvmeConnect(subnqn: string): Promise<string> {
  return must("host1", `nvme connect -t rdma -a ${ADDR} -s 4420 -n ${subnqn}`);
}

Deno.test("target up serves two subsystems across the wire: nvme-cli on host1 discovers, connects and does I/O; up again is a no-op; show round-trips; down empties configfs", async () => {
  await withCleanup(async (defer) => {
    clearAll(defer);
    const hostnqn = await hostnqnOf("host1");
    const dev = {
      a: await nullb("fnb_a", defer),
      b: await nullb("fnb_b", defer),
      disk: "/dev/vdb",
    };
    await writeOnTarget("/etc/nvmeof/t1.yaml", stringify(spec(hostnqn, dev)));

    const up = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/t1.yaml"]);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /^Apply the spec with \d+ step/);

    const disc = JSON.parse(
      await must("host1", `nvme discover -t rdma -a ${ADDR} -s 4420 -o json`),
    );
    const subs = (disc.records as { subtype: string; subnqn: string; trtype: string }[])
      .filter((r) => r.subtype === "nvme subsystem");
    assert.deepEqual(subs.map((r) => r.subnqn).sort(), [SUB1, SUB2]);
    assert.ok(subs.every((r) => r.trtype === "rdma"));

    await nvmeConnect(SUB1);
    await roundTripIo(await hostDevice(SUB1, 1), 3);
    await roundTripIo(await hostDevice(SUB1, 2), 5);

    const again = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/t1.yaml"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^No changes: configfs already matches the spec/);

    const shown = await nvmeofOn("target", ["target", "show"]);
    assert.equal(shown.code, 0, shown.stderr);
    await writeOnTarget("/etc/nvmeof/shown.yaml", shown.stdout);
    const round = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/shown.yaml"]);
    assert.equal(round.code, 0, round.stderr);
    assert.match(round.stdout, /^No changes/);

    await must("host1", `nvme disconnect -n ${SUB1}`);
    const down = await nvmeofOn("target", ["target", "down", "-f", "/etc/nvmeof/t1.yaml"]);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(
      await must(
        "target",
        `ls ${NVMET}/hosts ${NVMET}/subsystems ${NVMET}/ports | grep -v : | grep .; true`,
      ),
      "",
    );
  });
});

Deno.test("changing one subsystem's namespace on the target leaves host1 connected to the other subsystem doing I/O", async () => {
  await withCleanup(async (defer) => {
    clearAll(defer);
    const hostnqn = await hostnqnOf("host1");
    const dev = {
      a: await nullb("fnb_c", defer),
      b: await nullb("fnb_d", defer),
      disk: "/dev/vdb",
    };
    const s = spec(hostnqn, dev);
    await writeOnTarget("/etc/nvmeof/t2.yaml", stringify(s));
    const up = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/t2.yaml"]);
    assert.equal(up.code, 0, up.stderr);
    await nvmeConnect(SUB2);
    const dev2 = await hostDevice(SUB2, 1);
    const [ctrl2] = await controllersOf("host1", SUB2);
    await roundTripIo(dev2, 1);

    const other = await nullb("fnb_e", defer);
    s.subsystems[0].namespaces[0].device = other;
    await writeOnTarget("/etc/nvmeof/t2.yaml", stringify(s));
    const dry = await nvmeofOn("target", [
      "target",
      "up",
      "-f",
      "/etc/nvmeof/t2.yaml",
      "--dry-run",
      "-o",
      "json",
    ]);
    const steps = JSON.parse(dry.stdout).steps.map((
      x: { op: string; path: string; value?: string },
    ) => `${x.op} ${x.path}${x.value !== undefined ? " = " + x.value : ""}`);
    const ns = `subsystems/${SUB1}/namespaces/1`;
    assert.deepEqual(steps, [
      `write ${ns}/enable = 0`,
      `write ${ns}/device_path = ${other}`,
      `write ${ns}/enable = 1`,
    ]);
    const r = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/t2.yaml"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await must("target", `cat ${NVMET}/${ns}/device_path`)).trim(), other);

    await roundTripIo(dev2, 2);
    const state = (await must("host1", `cat /sys/class/nvme/${ctrl2}/state`)).trim();
    assert.equal(state, "live", "the other subsystem's controller never reconnected");
  });
});

Deno.test("an unknown device and an address the storage server does not have are refused with its tree unchanged", async () => {
  await withCleanup(async (defer) => {
    clearAll(defer);
    const hostnqn = await hostnqnOf("host1");
    const dev = {
      a: await nullb("fnb_f", defer),
      b: await nullb("fnb_g", defer),
      disk: "/dev/vdb",
    };
    const s = spec(hostnqn, dev);
    await writeOnTarget("/etc/nvmeof/t3.yaml", stringify(s));
    assert.equal((await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/t3.yaml"])).code, 0);
    const tree = () => must("target", `find ${NVMET} | sort; cat ${NVMET}/ports/*/addr_traddr`);
    const before = await tree();

    const bad = structuredClone(s);
    bad.subsystems[1].namespaces[0].device = "/dev/fnb_missing";
    await writeOnTarget("/etc/nvmeof/bad-dev.yaml", stringify(bad));
    const r1 = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/bad-dev.yaml"]);
    assert.equal(r1.code, 1);
    assert.match(
      r1.stderr,
      /subsystems\[1\]\.namespaces\[0\]\.device: device '\/dev\/fnb_missing' does not exist/,
    );
    assert.equal(await tree(), before);

    // host1's address is on the same subnet, but it is another machine's: nvmet cannot listen.
    const moved = structuredClone(s) as ReturnType<typeof spec> & {
      ports: Record<string, unknown>[];
    };
    moved.ports.push({
      id: 2,
      trtype: "rdma",
      adrfam: "ipv4",
      traddr: addr("host1", 0),
      trsvcid: 4420,
      subsystems: [SUB2],
    });
    moved.subsystems[0].namespaces.push({ nsid: 3, device: dev.b });
    await writeOnTarget("/etc/nvmeof/bad-addr.yaml", stringify(moved));
    const r2 = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/bad-addr.yaml"]);
    assert.equal(r2.code, 1, r2.stdout);
    assert.match(
      r2.stderr,
      /EADDRNOTAVAIL \(99\)\. The \d+ earlier step\(s\) of this run were rolled back; configfs is as before\./,
    );
    assert.match(r2.stderr, /not an address configured on this host/);
    assert.equal(await tree(), before);
  });
});

Deno.test("the one-line form exports a device that nvme-cli on host1 connects to, and down --all removes it", async () => {
  await withCleanup(async (defer) => {
    clearAll(defer);
    const hostnqn = await hostnqnOf("host1");
    const dev = await nullb("fnb_h", defer);
    const args = ["target", "up", "--nqn", SUB1, "--device", dev, "--traddr", ADDR];
    const up = await nvmeofOn("target", [...args, "--allow-host", hostnqn]);
    assert.equal(up.code, 0, up.stderr);
    assert.match(
      (await nvmeofOn("target", [...args, "--allow-host", hostnqn])).stdout,
      /^No changes/,
    );
    await nvmeConnect(SUB1);
    await roundTripIo(await hostDevice(SUB1, 1), 0);
    await must("host1", `nvme disconnect -n ${SUB1}`);
    const down = await nvmeofOn("target", ["target", "down", "--all"]);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(await must("target", `ls ${NVMET}/subsystems`), "");
  });
});
