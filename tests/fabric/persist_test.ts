/**
 * Surviving reboots, across machines: the storage server brings its target back at boot
 * (`target enable`), a compute node brings its saved connections back at boot (`connect
 * --persist`, `enable-autoconnect`), and a host connected while the storage server loses power
 * reconnects when it is back, with the data written before the cut intact and the I/O in flight
 * completed. The target exports its second disk (/dev/vdb), which keeps what reached it.
 */
import assert from "node:assert/strict";
import { addr, boot, hostnqnOf, must, nvmeofOn, on, powerCut, withCleanup } from "./fabric.ts";
import { deleteControllers } from "./plain_target.ts";

const T = addr("target", 0);
const NQN = "nqn.2026-11.io.nvmeof.fab:persist";

/** The target spec and its boot unit on the storage server; undone by the cleanup. */
async function enabledTarget(
  hostnqn: string,
  defer: (c: () => Promise<unknown>) => void,
): Promise<void> {
  const spec = `hosts:
  - nqn: ${hostnqn}
subsystems:
  - nqn: ${NQN}
    hosts: [${hostnqn}]
    namespaces:
      - nsid: 1
        device: /dev/vdb
ports:
  - id: 7
    trtype: rdma
    adrfam: ipv4
    traddr: ${T}
    trsvcid: 4420
    subsystems: [${NQN}]
`;
  defer(async () => {
    await nvmeofOn("target", ["target", "disable"]);
    await nvmeofOn("target", ["target", "down", "-f", "/etc/nvmeof/target.yaml", "--force"]);
  });
  await must(
    "target",
    `mkdir -p /etc/nvmeof && cat > /etc/nvmeof/target.yaml <<'SPEC'\n${spec}SPEC`,
  );
  const en = await nvmeofOn("target", ["target", "enable"]);
  assert.equal(en.code, 0, en.stderr);
  const up = await nvmeofOn("target", ["target", "up", "-f", "/etc/nvmeof/target.yaml"]);
  assert.equal(up.code, 0, up.stderr);
}

/** host1's block device for the test's subsystem once its controller is live, within BOUND s. */
async function liveDevice(bound: number): Promise<string> {
  const r = await on(
    "host1",
    `for i in $(seq 1 ${bound * 2}); do
       for c in /sys/class/nvme/nvme*; do
         [ "$(cat $c/subsysnqn 2>/dev/null)" = "${NQN}" ] && [ "$(cat $c/state)" = live ] || continue
         for n in /sys/block/nvme*n1; do
           [ "$(cat $n/device/subsysnqn 2>/dev/null)" = "${NQN}" ] && [ -b /dev/\${n##*/} ] &&
             echo /dev/\${n##*/} && exit 0
         done
       done
       sleep 0.5
     done; exit 1`,
    { timeout: bound + 30 },
  );
  assert.equal(r.code, 0, `no live controller of ${NQN} on host1 within ${bound} s: ${r.stderr}`);
  return r.stdout.trim();
}

/** sha256 of MIB MiB of DEV on host1 from OFFSET MiB, read with direct I/O. */
async function sha(dev: string, offsetMiB: number, mib: number): Promise<string> {
  return (await must(
    "host1",
    `dd if=${dev} bs=1M skip=${offsetMiB} count=${mib} iflag=direct status=none | sha256sum | cut -c1-64`,
  )).trim();
}

/** Writes MIB MiB of fresh random data at OFFSET MiB of DEV on host1, synced; its sha256. */
async function writeRandom(dev: string, offsetMiB: number, mib: number): Promise<string> {
  return (await must(
    "host1",
    `set -e; head -c ${mib}M /dev/urandom > /root/w.${offsetMiB}
     dd if=/root/w.${offsetMiB} of=${dev} bs=1M seek=${offsetMiB} oflag=direct conv=fsync status=none
     sha256sum < /root/w.${offsetMiB} | cut -c1-64`,
  )).trim();
}

function hostCleanup(defer: (c: () => Promise<unknown>) => void): void {
  defer(async () => {
    await nvmeofOn("host1", ["disable-autoconnect"]);
    await nvmeofOn("host1", ["connections", "remove", "--all"]);
    await on("host1", deleteControllers([NQN]));
  });
}

Deno.test("host1 rebooted: its saved connection comes back at boot and the data it wrote reads back", async () => {
  await withCleanup(async (defer) => {
    const hostnqn = await hostnqnOf("host1");
    await enabledTarget(hostnqn, defer);
    hostCleanup(defer);
    const c = await nvmeofOn("host1", ["connect", "-a", T, "-n", NQN, "--persist"]);
    assert.equal(c.code, 0, c.stderr);
    const en = await nvmeofOn("host1", ["enable-autoconnect"]);
    assert.equal(en.code, 0, en.stderr);
    const dev = await liveDevice(30);
    const written = await writeRandom(dev, 8, 4);

    await powerCut("host1");
    await boot("host1");
    // The boot runs nvmeof-autoconnect.service's ExecStart: connect --saved.
    const back = await liveDevice(180);
    assert.equal(await sha(back, 8, 4), written);
    const log = await must("host1", "cat /var/log/nvmeof-boot/nvmeof-autoconnect.service.log");
    assert.match(log, new RegExp(`connected: nvme\\d+ to '${NQN.replaceAll(".", "\\.")}'`));
  });
});

Deno.test("the storage server loses power during I/O: host1 reconnects when it is back, the I/O in flight completes, data written before the cut is intact", async () => {
  await withCleanup(async (defer) => {
    const hostnqn = await hostnqnOf("host1");
    await enabledTarget(hostnqn, defer);
    hostCleanup(defer);
    // The kernel's defaults: reconnect every 10 s, give up after 600 s.
    const c = await nvmeofOn("host1", ["connect", "-a", T, "-n", NQN]);
    assert.equal(c.code, 0, c.stderr);
    const dev = await liveDevice(30);
    const before = await writeRandom(dev, 0, 8);
    const reconnects = () => on("host1", "dmesg | grep -c 'Successfully reconnected'; true");
    const reconnectsBefore = Number((await reconnects()).stdout.trim());

    // 16 MiB more, 1 MiB at a time, synced each time: in flight when the power goes.
    const inFlight = on(
      "host1",
      `set -e; head -c 16M /dev/urandom > /root/flight
       for i in $(seq 0 15); do
         dd if=/root/flight of=${dev} bs=1M skip=$i seek=$((32 + i)) count=1 oflag=direct conv=fsync status=none
       done
       sha256sum < /root/flight | cut -c1-64`,
      { timeout: 600 },
    );
    await new Promise((r) => setTimeout(r, 3000));
    await powerCut("target");
    await boot("target");
    // The storage server's boot runs nvmeof-target.service's ExecStart: target up.
    const tlog = await must(
      "target",
      "for i in $(seq 1 240); do [ -d /sys/kernel/config/nvmet/ports/7/subsystems/" + NQN +
        " ] && break; sleep 0.5; done; cat /var/log/nvmeof-boot/nvmeof-target.service.log",
    );
    assert.match(tlog, /Apply the spec|No changes/);
    await liveDevice(240);
    const flight = await inFlight;
    assert.equal(flight.code, 0, `the I/O in flight failed: ${flight.stderr}`);
    assert.equal(await sha(dev, 0, 8), before);
    assert.equal(await sha(dev, 32, 16), flight.stdout.trim());
    // The same controller lost its target and reconnected (not a new connection).
    const reconnectsAfter = Number((await reconnects()).stdout.trim());
    assert.equal(reconnectsAfter, reconnectsBefore + 1, "host1 reconnected once");
    const log = await must(
      "host1",
      "dmesg | grep -E 'identifiers changed|Removing ctrl' | tail -3; true",
    );
    assert.doesNotMatch(
      log,
      /identifiers changed/,
      "the namespace kept its identity across the reboot",
    );
  });
});
