/**
 * The initiator on the real kernel (lab guest: nvme-rdma host, nvmet-rdma target, rxe on
 * 10.77.0.1). Each test builds its own target with plain configfs writes (independent of
 * `nvmeof target`), compares with nvme-cli where it can, and removes everything it made even
 * when it fails. Shell does the configfs and block I/O (the test needs no file permission on
 * /sys or /dev).
 */
import assert from "node:assert/strict";
import { nvmeof, sh } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-00000000e2e1";
const HI = "1e4a0000-0000-4000-8000-00000000e2e1";
const ADDR = "10.77.0.1";
const ID = ["-q", HQ, "-I", HI];

interface TargetSpec {
  /** Port id and TCP/RDMA port number (distinct per test). */
  port: number;
  trsvcid: number;
  subsystems: string[];
  /** Host NQN allowed on every subsystem; absent = allow any host. */
  allowedHost?: string;
  /** Create the port (listener) at all. */
  listen?: boolean;
}

const N = "/sys/kernel/config/nvmet";

function nullbName(spec: TargetSpec, i: number): string {
  return `nullb_i4_${spec.port}_${i}`;
}

/** Builds the target with configfs writes; returns a teardown that removes it in reverse order. */
async function target(spec: TargetSpec): Promise<AsyncDisposable> {
  const lines = ["set -e"];
  spec.subsystems.forEach((nqn, i) => {
    const nb = nullbName(spec, i);
    lines.push(
      `mkdir /sys/kernel/config/nullb/${nb}`,
      `cd /sys/kernel/config/nullb/${nb}; echo 64 > size; echo 1 > memory_backed; echo 1 > power`,
      `mkdir ${N}/subsystems/${nqn}`,
      `mkdir ${N}/subsystems/${nqn}/namespaces/1`,
      `echo /dev/${nb} > ${N}/subsystems/${nqn}/namespaces/1/device_path`,
      `echo 1 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
    );
    if (spec.allowedHost) {
      lines.push(
        `mkdir -p ${N}/hosts/${spec.allowedHost}`,
        `ln -s ${N}/hosts/${spec.allowedHost} ${N}/subsystems/${nqn}/allowed_hosts/${spec.allowedHost}`,
      );
    } else {
      lines.push(`echo 1 > ${N}/subsystems/${nqn}/attr_allow_any_host`);
    }
  });
  if (spec.listen !== false) {
    const p = `${N}/ports/${spec.port}`;
    lines.push(
      `mkdir ${p}`,
      `echo rdma > ${p}/addr_trtype; echo ipv4 > ${p}/addr_adrfam`,
      `echo ${ADDR} > ${p}/addr_traddr; echo ${spec.trsvcid} > ${p}/addr_trsvcid`,
      ...spec.subsystems.map((nqn) => `ln -s ${N}/subsystems/${nqn} ${p}/subsystems/${nqn}`),
    );
  }
  const teardown = async () => {
    const t = [
      // host side first: any controller of these subsystems
      ...spec.subsystems.map((nqn) =>
        `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${nqn}" ] && echo 1 > $c/delete_controller; done`
      ),
      ...spec.subsystems.map((nqn) => `rm -f ${N}/ports/${spec.port}/subsystems/${nqn}`),
      `rmdir ${N}/ports/${spec.port}`,
      ...spec.subsystems.flatMap((nqn, i) => [
        `echo 0 > ${N}/subsystems/${nqn}/namespaces/1/enable`,
        `rmdir ${N}/subsystems/${nqn}/namespaces/1`,
        ...(spec.allowedHost
          ? [`rm -f ${N}/subsystems/${nqn}/allowed_hosts/${spec.allowedHost}`]
          : []),
        `rmdir ${N}/subsystems/${nqn}`,
        `echo 0 > /sys/kernel/config/nullb/${nullbName(spec, i)}/power`,
        `rmdir /sys/kernel/config/nullb/${nullbName(spec, i)}`,
      ]),
      ...(spec.allowedHost ? [`rmdir ${N}/hosts/${spec.allowedHost}`] : []),
    ];
    await sh(t.map((l) => `${l} 2>/dev/null`).join("\n"));
  };
  const r = await sh(lines.join("\n"));
  if (r.code !== 0) {
    await teardown();
    throw new Error(`target setup failed: ${r.stderr}`);
  }
  return { [Symbol.asyncDispose]: teardown };
}

function fields(json: string) {
  return JSON.parse(json);
}

Deno.test("discover -o json lists the same entries as nvme discover -o json", async () => {
  const subs = ["nqn.2024-01.io.nvmeof.e2e:disc-a", "nqn.2024-01.io.nvmeof.e2e:disc-b"];
  await using _t = await target({ port: 51, trsvcid: 4431, subsystems: subs });
  const ours = await nvmeof(["discover", "-a", ADDR, "-s", "4431", ...ID, "-o", "json"]);
  assert.equal(ours.code, 0, ours.stderr);
  const peer = await sh(`nvme discover -t rdma -a ${ADDR} -s 4431 -q ${HQ} -I ${HI} -o json`);
  assert.equal(peer.code, 0, peer.stderr);
  assert.deepEqual(fields(ours.stdout), fields(peer.stdout));
  const nqns = fields(ours.stdout).records.map((r: { subnqn: string }) => r.subnqn);
  for (const s of subs) assert.ok(nqns.includes(s), `${s} missing from ${nqns}`);
  // the discovery controller was removed again
  const left = await sh("cat /sys/class/nvme/nvme*/subsysnqn 2>/dev/null");
  assert.doesNotMatch(left.stdout, /nvmexpress\.discovery/);
});

Deno.test("connect gives block devices whose data reads back; list agrees with nvme-cli; disconnect removes", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:data";
  const spec = { port: 52, trsvcid: 4432, subsystems: [nqn] };
  await using _t = await target(spec);
  const c = await nvmeof([
    "connect",
    "-a",
    ADDR,
    "-s",
    "4432",
    "-n",
    nqn,
    ...ID,
    "-i",
    "1",
    "-o",
    "json",
  ]);
  assert.equal(c.code, 0, c.stderr);
  const r = fields(c.stdout);
  assert.equal(r.existing, false);
  assert.equal(r.state, "live");
  assert.equal(r.namespaces.length, 1);
  const dev = r.namespaces[0].device;
  assert.equal(r.namespaces[0].size, 64 * 1024 * 1024);

  // data written through the fabrics device is on the target's null_blk, and reads back
  const io = await sh(`set -e
    head -c 1048576 /dev/urandom > /tmp/i4pattern
    dd if=/tmp/i4pattern of=${dev} bs=1M count=1 oflag=direct status=none
    dd if=${dev} bs=1M count=1 iflag=direct status=none | cmp - /tmp/i4pattern
    cmp -n 1048576 /dev/${nullbName(spec, 0)} /tmp/i4pattern`);
  assert.equal(io.code, 0, io.stderr + io.stdout);

  // list agrees with nvme list-subsys and sysfs
  const l = await nvmeof(["list", "-o", "json"]);
  assert.equal(l.code, 0, l.stderr);
  const ours = fields(l.stdout).subsystems.find((s: { subsysnqn: string }) => s.subsysnqn === nqn);
  assert.ok(ours, l.stdout);
  const peer = await sh("nvme list-subsys -o json");
  const peerSubs = fields(peer.stdout).flatMap((h: { Subsystems: unknown[] }) => h.Subsystems);
  const theirs = peerSubs.find((s: { NQN: string }) => s.NQN === nqn);
  assert.ok(theirs, peer.stdout);
  assert.equal(ours.name, theirs.Name);
  assert.deepEqual(
    ours.controllers.map((
      x: { name: string; transport: string; state: string },
    ) => [x.name, x.transport, x.state]),
    theirs.Paths.map((
      p: { Name: string; Transport: string; State: string },
    ) => [p.Name, p.Transport, p.State]),
  );
  assert.equal(ours.controllers[0].address.traddr, ADDR);
  assert.equal(ours.controllers[0].hostnqn, HQ);

  // a second connect reports the existing controller and adds none
  const again = await nvmeof(["connect", "-a", ADDR, "-s", "4432", "-n", nqn, ...ID, "-o", "json"]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(fields(again.stdout).existing, true);
  assert.equal(fields(again.stdout).device, r.device);
  const count = await sh(`grep -lx '${nqn}' /sys/class/nvme/nvme*/subsysnqn | wc -l`);
  assert.equal(count.stdout.trim(), "1");

  const d = await nvmeof(["disconnect", "-n", nqn]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, new RegExp(`disconnected ${r.device}`));
  const gone = await sh(`test -e /sys/class/nvme/${r.device} || test -e ${dev}`);
  assert.notEqual(gone.code, 0, `${r.device} or ${dev} still exists`);
});

Deno.test("wrong NQN, host not allowed, and no listener each give their own message in bounded time", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:guarded";
  await using _t = await target({
    port: 53,
    trsvcid: 4433,
    subsystems: [nqn],
    allowedHost: "nqn.2024-01.io.nvmeof.e2e:someone-else",
  });
  const cases: [string[], RegExp][] = [
    [
      ["-s", "4433", "-n", "nqn.2024-01.io.nvmeof.e2e:no-such"],
      /not exported on that port \(EIO\)[^]*invalid subsystem|Invalid Data Parameter/,
    ],
    [
      ["-s", "4433", "-n", nqn],
      /host 'nqn\.2014-08\.org\.nvmexpress:uuid:1e4a[^']*' is not allowed[^]*not allowed/,
    ],
    [
      ["-s", "4499", "-n", nqn],
      /nothing listens on that address and port[^]*\(ECONNRESET\)[^]*invalid service ID/,
    ],
  ];
  for (const [args, want] of cases) {
    const t0 = performance.now();
    const r = await nvmeof(["connect", "-a", ADDR, ...args, ...ID]);
    const secs = (performance.now() - t0) / 1000;
    assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, want);
    assert.ok(secs < 60, `${args.join(" ")} took ${secs.toFixed(1)} s`);
  }
});

Deno.test("connect-all connects every exported subsystem; disconnect-all removes them", async () => {
  const subs = ["nqn.2024-01.io.nvmeof.e2e:all-a", "nqn.2024-01.io.nvmeof.e2e:all-b"];
  await using _t = await target({ port: 54, trsvcid: 4434, subsystems: subs });
  const r = await nvmeof(["connect-all", "-a", ADDR, "-s", "4434", ...ID, "-i", "1", "-o", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const rows = fields(r.stdout).records;
  for (const s of subs) {
    const row = rows.find((x: { subnqn: string }) => x.subnqn === s);
    assert.equal(row?.status, "connected", r.stdout);
    assert.equal(row.namespaces.length, 1);
  }
  const again = await nvmeof(["connect-all", "-a", ADDR, "-s", "4434", ...ID, "-o", "json"]);
  assert.equal(again.code, 0, again.stderr);
  assert.ok(
    fields(again.stdout).records.every((x: { status: string }) => x.status === "already connected"),
    again.stdout,
  );
  const d = await nvmeof(["disconnect-all", "--transport", "rdma", "-o", "json"]);
  assert.equal(d.code, 0, d.stderr);
  const left = await sh(`cat /sys/class/nvme/nvme*/subsysnqn 2>/dev/null`);
  for (const s of subs) assert.ok(!left.stdout.includes(s), left.stdout);
});

Deno.test("time to block devices: nvmeof connect and nvme connect in the same guest", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.e2e:timing";
  await using _t = await target({ port: 55, trsvcid: 4435, subsystems: [nqn] });
  const t0 = performance.now();
  const ours = await nvmeof([
    "connect",
    "-a",
    ADDR,
    "-s",
    "4435",
    "-n",
    nqn,
    ...ID,
    "-i",
    "1",
    "-o",
    "json",
  ]);
  const oursWall = performance.now() - t0;
  assert.equal(ours.code, 0, ours.stderr);
  const o = fields(ours.stdout);
  await nvmeof(["disconnect", "-n", nqn]);
  const peer = await sh(`
    t0=$(date +%s%N)
    nvme connect -t rdma -a ${ADDR} -s 4435 -n ${nqn} -q ${HQ} -I ${HI} -i 1 >/dev/null || exit 1
    t1=$(date +%s%N)
    for i in $(seq 3000); do
      for c in /sys/class/nvme/nvme*; do
        [ "$(cat $c/subsysnqn)" = "${nqn}" ] || continue
        for n in $c/nvme*n*; do b=$(basename $n | sed 's/c[0-9]*n/n/'); [ -b /dev/$b ] && break 3; done
      done
      sleep 0.005
    done
    t2=$(date +%s%N)
    echo $(( (t1 - t0) / 1000000 )) $(( (t2 - t0) / 1000000 ))`);
  assert.equal(peer.code, 0, peer.stderr);
  const [peerCall, peerVisible] = peer.stdout.trim().split(" ").map(Number);
  console.log(
    `timing: nvmeof connect: kernel write ${o.timing_ms.connect} ms, block devices visible ` +
      `${o.timing_ms.ready} ms after the call, process wall ${Math.round(oursWall)} ms; ` +
      `nvme connect: process wall ${peerCall} ms, block devices visible ${peerVisible} ms after the call`,
  );
  assert.ok(o.timing_ms.ready >= o.timing_ms.connect);
  assert.ok(peerVisible >= peerCall);
});
