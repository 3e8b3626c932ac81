/**
 * NVMe/RDMA from user space on a compute node (`probe`, `bench`, no nvme-rdma involved) against
 * the storage server's nvmet-rdma, with the kernel initiator on the same compute node as the
 * peer that reads what bench wrote. The target is plain configfs writes (plain_target.ts).
 */
import assert from "node:assert/strict";
import { hostnqnOf, jsonOn, must, nvmeofOn, on } from "./fabric.ts";
import { plainTargetOn } from "./plain_target.ts";
import { checkPattern, fillPattern } from "../../src/nvme/bench.ts";

const NQN = "nqn.2026-11.io.nvmeof.fab:userspace";

Deno.test("probe from host1: the discovery log equals nvme discover's, the identity equals nvme id-ctrl's", async () => {
  const hostnqn = await hostnqnOf("host1");
  await using t = await plainTargetOn({
    tag: "fprobe",
    port: 61,
    svc: 4441,
    subsystems: [{ nqn: NQN, allowedHost: hostnqn }],
  });
  const disc = await jsonOn<{ records: { subnqn: string; trsvcid: string }[] }>(
    "host1",
    ["probe", "-a", t.traddr, "-s", "4441"],
  );
  const peer = JSON.parse(
    await must("host1", `nvme discover -t rdma -a ${t.traddr} -s 4441 -o json`),
  );
  assert.deepEqual(
    disc.records.map((r) => r.subnqn).sort(),
    peer.records.map((r: { subnqn: string }) => r.subnqn).sort(),
  );
  const p = await jsonOn<{
    controller: { model: string; serial: string; firmware: string; mdts: number; sgls: number };
    namespaces: { size_bytes: number }[];
  }>(
    "host1",
    ["probe", "-a", t.traddr, "-s", "4441", "-n", NQN],
  );
  await must("host1", `nvme connect -t rdma -a ${t.traddr} -s 4441 -n ${NQN}`);
  try {
    const ctrl = (await must(
      "host1",
      `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${NQN}" ] && basename $c; done`,
    )).trim();
    const kid = JSON.parse(await must("host1", `nvme id-ctrl /dev/${ctrl} -o json`));
    assert.equal(p.controller.model, String(kid.mn).trim());
    assert.equal(p.controller.serial, String(kid.sn).trim());
    assert.equal(p.controller.firmware, String(kid.fr).trim());
    assert.equal(p.controller.mdts, kid.mdts);
    assert.equal(p.controller.sgls, kid.sgls);
    assert.deepEqual(p.namespaces.map((n) => n.size_bytes), [64 * 1024 * 1024]);
  } finally {
    await must("host1", `nvme disconnect -n ${NQN}`);
  }
});

Deno.test("bench from host1: written data reads back through the kernel initiator; verify at QD 32 is clean", async () => {
  const hostnqn = await hostnqnOf("host1");
  await using t = await plainTargetOn({
    tag: "fbench",
    port: 62,
    svc: 4442,
    subsystems: [{ nqn: NQN, allowedHost: hostnqn }],
  });
  const flags = ["-a", t.traddr, "-s", "4442", "-n", NQN];
  const WRITE_IOS = 512; // 2 MiB of 4 KiB writes from LBA 0
  const w = await jsonOn<{ passes: { ios: number }[]; lba_size: number }>(
    "host1",
    ["bench", ...flags, "--rw", "write", "--ios", String(WRITE_IOS), "--allow-write"],
  );
  assert.equal(w.passes[0].ios, WRITE_IOS);
  console.log(`bench write across the wire: ${JSON.stringify(w.passes[0])}`);

  // The kernel initiator on host1 reads the pattern back; the host sees the bytes here.
  const bytes = WRITE_IOS * 4096 + 4096;
  await must("host1", `nvme connect -t rdma -a ${t.traddr} -s 4442 -n ${NQN}`);
  try {
    // The guests see this checkout read-only: the bytes come back as hex on stdout.
    const hex = await must(
      "host1",
      `for i in $(seq 1 100); do for b in /sys/block/nvme*n1; do
         [ "$(cat $b/device/subsysnqn 2>/dev/null)" = "${NQN}" ] && [ -b /dev/\${b##*/} ] && d=/dev/\${b##*/} && break 2
       done; sleep 0.1; done
       dd if=$d bs=4096 count=${
        bytes / 4096
      } iflag=direct status=none | od -An -v -tx1 | tr -d ' \\n'`,
    );
    const got = Uint8Array.from(hex.trim().match(/../g)!.map((h) => parseInt(h, 16)));
    assert.equal(got.length, bytes);
    const written = got.subarray(0, WRITE_IOS * 4096);
    assert.equal(checkPattern(written, 0, w.lba_size), -1);
    const want = new Uint8Array(written.length);
    fillPattern(want, 0, w.lba_size);
    assert.ok(written.every((b, i) => b === want[i]), "bytes differ from the pattern");
    assert.ok(got.subarray(WRITE_IOS * 4096).every((b) => b === 0), "wrote past --ios");
  } finally {
    await on("host1", `nvme disconnect -n ${NQN}`);
  }

  const v = await nvmeofOn("host1", [
    "bench",
    ...flags,
    "--rw",
    "verify",
    "--ios",
    "2000",
    "--qd",
    "32",
    "--allow-write",
    "-o",
    "json",
  ], { timeout: 600 });
  assert.equal(v.code, 0, v.stderr);
  const r = JSON.parse(v.stdout);
  assert.equal(r.mismatch_lba, null);
  assert.equal(r.verified_ios, 2000);
  assert.deepEqual(r.passes.map((p: { op: string; ios: number }) => [p.op, p.ios]), [
    ["write", 2000],
    ["read", 2000],
  ]);
});
