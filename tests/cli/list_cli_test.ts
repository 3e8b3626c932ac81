/**
 * `list`, `list --paths` and `list-subsys` as a user runs them, against a stand-in sysfs with two
 * paths to one namespace (rdma optimized, tcp inaccessible) and a PCIe drive.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";
import { MP_HOSTNQN, MP_NQN, multipathTree } from "../sysfs_standin.ts";

Deno.test("list -o json prints nvme-cli's Devices shape; jq '.Devices[].DevicePath' works", async () => {
  await using dir = await tempDir();
  const env = await multipathTree(dir.path);
  const r = await nvmeof(["list", "-o", "json"], { env });
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(j.Devices.map((d: { DevicePath: string }) => d.DevicePath), [
    `${dir.path}/dev/nvme1n1`,
    `${dir.path}/dev/nvme3n1`,
  ]);
  for (const d of j.Devices) {
    assert.deepEqual(Object.keys(d), [
      "NameSpace",
      "DevicePath",
      "Firmware",
      "ModelNumber",
      "SerialNumber",
      "UsedBytes",
      "MaximumLBA",
      "PhysicalSize",
      "SectorSize",
    ]);
  }
  const text = await nvmeof(["list"], { env });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^Node +Generic +SN +Model +Namespace Usage +Format +FW Rev/);
  assert.match(
    text.stdout,
    /nvme1n1 .*ng1n1 .*9a6b1c2d3e4f5a6b7c8d Linux .* 512\.00 {2}kB \/ {2}67\.11 {2}MB/,
  );
});

Deno.test("list leaves out a namespace whose use cannot be read, names it on stderr, exit 1", async () => {
  await using dir = await tempDir();
  const env = await multipathTree(dir.path);
  await Deno.remove(`${dir.path}/sys/class/nvme-subsystem/nvme-subsys1/nvme1n1/nuse`);
  const r = await nvmeof(["list", "-o", "json"], { env });
  assert.equal(r.code, 1);
  assert.deepEqual(JSON.parse(r.stdout).Devices.map((d: { DevicePath: string }) => d.DevicePath), [
    `${dir.path}/dev/nvme3n1`,
  ]);
  assert.match(
    r.stderr,
    /nvme1n1 is left out: Cannot read the use of '.*nvme1n1': Identify namespace .* failed: ENOTTY/,
  );
  assert.match(r.stderr, /nvmeof list --paths/);
});

Deno.test("list --paths shows the head, both paths with state, ANA state and I/O timeout, the iopolicy, and an unanswered ARP", async () => {
  await using dir = await tempDir();
  const env = { ...await multipathTree(dir.path), NVMEOF_PROC: `${dir.path}/proc` };
  // The connecting tcp path's target address asked for and not answered (flags 0x0), on fab1.
  await Deno.mkdir(`${dir.path}/proc/net`, { recursive: true });
  await Deno.writeTextFile(
    `${dir.path}/proc/net/arp`,
    "IP address       HW type     Flags       HW address            Mask     Device\n" +
      "10.77.0.1        0x1         0x0         00:00:00:00:00:00     *        fab1\n",
  );
  const r = await nvmeof(["list", "--paths"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /iopolicy round-robin/);
  assert.match(
    r.stdout,
    /nvme1c2n1 {2}via nvme2 {2}tcp 10\.77\.0\.1:4421 {2}connecting {2}inaccessible {2}io_timeout 2000 ms {2}ARP unanswered/,
  );
  // The controller that is not live is followed by what its ARP entry means; the live one is not.
  assert.match(
    r.stdout,
    /nvme2 .*connecting.*\n {4}ARP for 10\.77\.0\.1 unanswered on fab1: the link to the target is down or blocked/,
  );
  assert.doesNotMatch(r.stdout, /nvme1c1n1 .*ARP/);
  const j = JSON.parse((await nvmeof(["list", "--paths", "-o", "json"], { env })).stdout);
  const [s] = j.subsystems;
  assert.equal(s.subsysnqn, MP_NQN);
  assert.equal(s.iopolicy, "round-robin");
  assert.equal(s.multipath, true);
  assert.deepEqual(
    s.namespaces[0].paths.map((p: Record<string, string>) => [
      p.controller,
      p.state,
      p.ana_state,
      p.io_timeout,
    ]),
    [["nvme1", "live", "optimized", undefined], ["nvme2", "connecting", "inaccessible", 2000]],
  );
  assert.deepEqual(s.controllers.map((c: { neighbour?: unknown }) => c.neighbour), [
    undefined,
    { state: "failed", address: "10.77.0.1", device: "fab1" },
  ]);
});

Deno.test("list-subsys prints nvme-cli's shape; naming a namespace adds each path's ANAState", async () => {
  await using dir = await tempDir();
  const env = await multipathTree(dir.path);
  const r = await nvmeof(["list-subsys", "-o", "json"], { env });
  assert.equal(r.code, 0, r.stderr);
  const [h] = JSON.parse(r.stdout);
  assert.equal(h.HostNQN, MP_HOSTNQN);
  assert.deepEqual(h.Subsystems.map((s: { Name: string }) => s.Name), [
    "nvme-subsys1",
    "nvme-subsys3",
  ]);
  assert.ok(!("ANAState" in h.Subsystems[0].Paths[0]));
  const one = await nvmeof(["list-subsys", "/dev/nvme1n1", "-o", "json"], { env });
  assert.equal(one.code, 0, one.stderr);
  const [o] = JSON.parse(one.stdout);
  assert.deepEqual(o.Subsystems.map((s: { Name: string }) => s.Name), ["nvme-subsys1"]);
  assert.deepEqual(
    o.Subsystems[0].Paths.map((p: Record<string, string>) => [p.Name, p.State, p.ANAState]),
    [["nvme1", "live", "optimized"], ["nvme2", "connecting", "inaccessible"]],
  );
  const text = await nvmeof(["list-subsys", "nvme1n1"], { env });
  assert.match(
    text.stdout,
    /^nvme-subsys1 - NQN=nqn\.2024-01\.io\.example:ha\n\\\n \+- nvme1 rdma/,
  );
});

Deno.test("list-subsys refuses what is not a namespace device (exit 2)", async () => {
  await using dir = await tempDir();
  const env = await multipathTree(dir.path);
  for (const bad of [["nvme1"], ["nvme1c2n1"], ["nvme1n1", "nvme3n1"]]) {
    const r = await nvmeof(["list-subsys", ...bad, "-o", "json"], { env });
    assert.equal(r.code, 2, bad.join(" "));
    assert.equal(JSON.parse(r.stdout).error.exit_code, 2);
  }
});
