/**
 * The initiator on a compute node (host1) against a storage server (target) built with plain
 * configfs writes: discover, connect, list, connect-all, disconnect, and the errors, compared with
 * nvme-cli on the same node where it has an answer.
 */
import assert from "node:assert/strict";
import { hostnqnOf, jsonOn, must, nvmeofOn, on } from "./fabric.ts";
import { controllersOf, plainTargetOn } from "./plain_target.ts";

Deno.test("discover from host1 lists the same entries as nvme discover -o json", async () => {
  const subs = ["nqn.2024-01.io.nvmeof.fab:disc-a", "nqn.2024-01.io.nvmeof.fab:disc-b"];
  await using t = await plainTargetOn({
    tag: "fdisc",
    port: 51,
    svc: 4431,
    subsystems: subs.map((nqn) => ({ nqn })),
  });
  await hostnqnOf("host1");
  const ours = await nvmeofOn("host1", ["discover", "-a", t.traddr, "-s", "4431", "-o", "json"]);
  assert.equal(ours.code, 0, ours.stderr);
  const peer = await on("host1", `nvme discover -t rdma -a ${t.traddr} -s 4431 -o json`);
  assert.equal(peer.code, 0, peer.stderr);
  assert.deepEqual(JSON.parse(ours.stdout), JSON.parse(peer.stdout));
  const nqns = JSON.parse(ours.stdout).records.map((r: { subnqn: string }) => r.subnqn);
  for (const s of subs) assert.ok(nqns.includes(s), `${s} missing from ${nqns}`);
  assert.deepEqual(await controllersOf("host1", "nqn.2014-08.org.nvmexpress.discovery"), []);
});

Deno.test("connect from host1: data written reaches the target's device and reads back; list agrees with nvme-cli; disconnect removes", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.fab:data";
  const hostnqn = await hostnqnOf("host1");
  await using t = await plainTargetOn({
    tag: "fdata",
    port: 52,
    svc: 4432,
    subsystems: [{ nqn, allowedHost: hostnqn }],
  });
  const r = await jsonOn<{
    existing: boolean;
    state: string;
    device: string;
    namespaces: { device: string; size: number }[];
  }>("host1", ["connect", "-a", t.traddr, "-s", "4432", "-n", nqn, "-i", "1"]);
  assert.equal(r.existing, false);
  assert.equal(r.state, "live");
  assert.equal(r.namespaces.length, 1);
  assert.equal(r.namespaces[0].size, 64 * 1024 * 1024);
  const dev = r.namespaces[0].device;

  // 1 MiB written on host1 is on the target's null_blk, byte for byte.
  const sum = (await must(
    "host1",
    `set -e; head -c 1048576 /dev/urandom > /root/pattern
     dd if=/root/pattern of=${dev} bs=1M count=1 oflag=direct status=none
     dd if=${dev} bs=1M count=1 iflag=direct status=none | cmp - /root/pattern
     sha256sum < /root/pattern | cut -c1-64`,
  )).trim();
  const there = (await must(
    "target",
    `dd if=${t.device(0)} bs=1M count=1 iflag=direct status=none | sha256sum | cut -c1-64`,
  )).trim();
  assert.equal(there, sum);

  // list --paths agrees with nvme list-subsys on the same node.
  const ours =
    (await jsonOn<{ subsystems: Record<string, unknown>[] }>("host1", ["list", "--paths"]))
      .subsystems.find((s) => s.subsysnqn === nqn) as {
        name: string;
        controllers: {
          name: string;
          transport: string;
          state: string;
          hostnqn: string;
          address: { traddr: string };
        }[];
      };
  assert.ok(ours);
  const peer = JSON.parse(await must("host1", "nvme list-subsys -o json"));
  const theirs = peer.flatMap((h: { Subsystems: unknown[] }) => h.Subsystems)
    .find((s: { NQN: string }) => s.NQN === nqn);
  assert.ok(theirs);
  assert.equal(ours.name, theirs.Name);
  assert.deepEqual(
    ours.controllers.map((x) => [x.name, x.transport, x.state]),
    theirs.Paths.map((p: { Name: string; Transport: string; State: string }) => [
      p.Name,
      p.Transport,
      p.State,
    ]),
  );
  assert.equal(ours.controllers[0].address.traddr, t.traddr);
  assert.equal(ours.controllers[0].hostnqn, hostnqn);

  // A second connect reports the existing controller and adds none.
  const again = await jsonOn<{ existing: boolean; device: string }>(
    "host1",
    ["connect", "-a", t.traddr, "-s", "4432", "-n", nqn],
  );
  assert.equal(again.existing, true);
  assert.equal(again.device, r.device);
  assert.equal((await controllersOf("host1", nqn)).length, 1);

  const d = await nvmeofOn("host1", ["disconnect", "-n", nqn]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, new RegExp(`disconnected ${r.device}`));
  assert.deepEqual(await controllersOf("host1", nqn), []);
});

Deno.test("from host1: wrong NQN, host not allowed, and no listener each give their own message in bounded time", async () => {
  const nqn = "nqn.2024-01.io.nvmeof.fab:guarded";
  const hostnqn = await hostnqnOf("host1");
  await using t = await plainTargetOn({
    tag: "fguard",
    port: 53,
    svc: 4433,
    subsystems: [{ nqn, allowedHost: "nqn.2024-01.io.nvmeof.fab:someone-else" }],
  });
  const cases: [string[], RegExp][] = [
    [
      ["-s", "4433", "-n", "nqn.2024-01.io.nvmeof.fab:no-such"],
      /not exported on that port \(EIO\)|Invalid Data Parameter/,
    ],
    [
      ["-s", "4433", "-n", nqn],
      new RegExp(`host '${hostnqn.replaceAll(".", "\\.")}' is not allowed`),
    ],
    [
      ["-s", "4499", "-n", nqn],
      /nothing listens on that address and port[^]*\(ECONNRESET\)/,
    ],
  ];
  for (const [args, want] of cases) {
    const t0 = performance.now();
    const r = await nvmeofOn("host1", ["connect", "-a", t.traddr, ...args]);
    const secs = (performance.now() - t0) / 1000;
    assert.equal(r.code, 1, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, want);
    assert.ok(secs < 90, `${args.join(" ")} took ${secs.toFixed(1)} s`);
  }
});

Deno.test("connect-all from host2 connects every exported subsystem; disconnect-all removes them", async () => {
  const subs = ["nqn.2024-01.io.nvmeof.fab:all-a", "nqn.2024-01.io.nvmeof.fab:all-b"];
  await using t = await plainTargetOn({
    tag: "fall",
    port: 54,
    svc: 4434,
    subsystems: subs.map((nqn) => ({ nqn })),
  });
  await hostnqnOf("host2");
  const r = await jsonOn<{ records: { subnqn: string; status: string; namespaces: unknown[] }[] }>(
    "host2",
    ["connect-all", "-a", t.traddr, "-s", "4434", "-i", "1"],
  );
  for (const s of subs) {
    const row = r.records.find((x) => x.subnqn === s);
    assert.equal(row?.status, "connected", JSON.stringify(r));
    assert.equal(row.namespaces.length, 1);
  }
  const again = await jsonOn<{ records: { status: string }[] }>(
    "host2",
    ["connect-all", "-a", t.traddr, "-s", "4434"],
  );
  assert.ok(again.records.every((x) => x.status === "already connected"), JSON.stringify(again));
  const d = await nvmeofOn("host2", ["disconnect-all", "--transport", "rdma"]);
  assert.equal(d.code, 0, d.stderr);
  for (const s of subs) assert.deepEqual(await controllersOf("host2", s), []);
});
