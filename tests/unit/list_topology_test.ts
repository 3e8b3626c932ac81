/**
 * The one sysfs reader of the host's topology (heads, paths, ANA states, iopolicy) and its two
 * renderers: nvme-cli's list/list-subsys shapes and nvmeof's path view, over a stand-in tree
 * with two paths to one namespace.
 */
import assert from "node:assert/strict";
import { ID_NS, parseIdentifyNamespace } from "../../src/fabrics/admin.ts";
import type { FabricsPaths } from "../../src/fabrics/initiator_paths.ts";
import { listSubsystems } from "../../src/fabrics/sysfs.ts";
import { groupByHost, listDevices, withNeighbours } from "../../src/fabrics/topology.ts";
import {
  devicesJson,
  devicesText,
  subsysJson,
  subsysText,
} from "../../src/output/nvme_cli_table.ts";
import { pathViewText } from "../../src/output/path_view.ts";
import { tempDir } from "../helpers.ts";
import { MP_HOSTID, MP_HOSTNQN, MP_NQN, multipathTree } from "../sysfs_standin.ts";

function pathsOf(root: string): FabricsPaths {
  return { sysfs: `${root}/sys`, dev: `${root}/dev`, etcNvme: `${root}/etc/nvme` };
}

Deno.test("a multipath subsystem reads as one head with a path per controller and their ANA states", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const [s, pcie] = await listSubsystems(pathsOf(dir.path));
  assert.equal(s.subsysnqn, MP_NQN);
  assert.equal(s.multipath, true);
  assert.equal(s.iopolicy, "round-robin");
  assert.equal(s.firmware_rev, "6.1.0-50");
  assert.deepEqual(s.namespaces.map((n) => [n.name, n.nsid, n.size, n.sector_size]), [
    ["nvme1n1", 1, 64 * 1024 * 1024, 512],
  ]);
  assert.deepEqual(s.namespaces[0].paths, [
    {
      name: "nvme1c1n1",
      controller: "nvme1",
      transport: "rdma",
      address: { traddr: "10.77.0.1", trsvcid: "4420" },
      state: "live",
      ana_state: "optimized",
      ana_grpid: 1,
    },
    {
      name: "nvme1c2n1",
      controller: "nvme2",
      transport: "tcp",
      address: { traddr: "10.77.0.1", trsvcid: "4421", src_addr: "10.77.0.2" },
      state: "connecting",
      ana_state: "inaccessible",
      ana_grpid: 2,
      io_timeout: 2000,
    },
  ]);
  // Each controller still names its block device (what connect reports) and its path device.
  assert.deepEqual(
    s.controllers.map((c) => c.namespaces.map((n) => [n.name, n.path, n.ana_state])),
    [[["nvme1n1", "nvme1c1n1", "optimized"]], [["nvme1n1", "nvme1c2n1", "inaccessible"]]],
  );
  assert.equal(pcie.multipath, false);
  assert.deepEqual(pcie.namespaces.map((n) => [n.name, n.paths, n.io_timeout]), [
    ["nvme3n1", [], 30000],
  ]);
  assert.equal(pcie.controllers[0].address_attr, "0000:00:04.0");
});

Deno.test("list -o json has nvme-cli 2.3's keys, types and values per namespace", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const paths = pathsOf(dir.path);
  const { rows, leftOut } = await listDevices(paths, await listSubsystems(paths));
  assert.deepEqual(leftOut, []);
  const j = devicesJson(rows);
  assert.deepEqual(Object.keys(j), ["Devices"]);
  assert.deepEqual(j.Devices, [
    {
      NameSpace: 1,
      DevicePath: `${dir.path}/dev/nvme1n1`,
      Firmware: "6.1.0-50",
      ModelNumber: "Linux",
      SerialNumber: "9a6b1c2d3e4f5a6b7c8d",
      UsedBytes: 1000 * 512,
      MaximumLBA: 131072,
      PhysicalSize: 64 * 1024 * 1024,
      SectorSize: 512,
    },
    {
      NameSpace: 1,
      DevicePath: `${dir.path}/dev/nvme3n1`,
      Firmware: "VDV10131",
      ModelNumber: "INTEL SSDPE2KX010T8",
      SerialNumber: "PHLJ0001",
      UsedBytes: 128 * 4096,
      MaximumLBA: 256,
      PhysicalSize: 1024 * 1024,
      SectorSize: 4096,
    },
  ]);
  // The table as nvme-cli's %-21s %-21s %-20s %-40s %-9d %-26s %-16s %-8s; no ng3n1 node, so its bare name.
  const lines = devicesText(rows).split("\n");
  assert.match(lines[0], /^Node {18}Generic {15}SN {19}Model {36}Namespace Usage/);
  assert.equal(
    lines[3],
    `${`${dir.path}/dev/nvme3n1`.padEnd(21)} ${"ng3n1".padEnd(21)} ${"PHLJ0001".padEnd(20)} ` +
      `${"INTEL SSDPE2KX010T8".padEnd(40)} ${"1".padEnd(9)} ${
        "524.29  kB /   1.05  MB".padEnd(26)
      } ` +
      `${"  4 KiB +  8 B".padEnd(16)} VDV10131`,
  );
});

Deno.test("list-subsys -o json: paths of the first namespace, ANAState only when a namespace is named", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const subsystems = await listSubsystems(pathsOf(dir.path));
  const hosts = groupByHost(subsystems, { hostnqn: MP_HOSTNQN, hostid: MP_HOSTID });
  const j = subsysJson(hosts, false);
  assert.deepEqual(j, [{
    HostNQN: MP_HOSTNQN,
    HostID: MP_HOSTID,
    Subsystems: [
      {
        Name: "nvme-subsys1",
        NQN: MP_NQN,
        Paths: [
          {
            Name: "nvme1",
            Transport: "rdma",
            Address: "traddr=10.77.0.1,trsvcid=4420",
            State: "live",
          },
          {
            Name: "nvme2",
            Transport: "tcp",
            Address: "traddr=10.77.0.1,trsvcid=4421,src_addr=10.77.0.2",
            State: "connecting",
          },
        ],
      },
      {
        Name: "nvme-subsys3",
        NQN: "nqn.2014.08.org.nvmexpress:80868086PHLJ0001",
        Paths: [{ Name: "nvme3", Transport: "pcie", Address: "0000:00:04.0", State: "live" }],
      },
    ],
  }]);
  const ana = subsysJson(hosts, true)[0].Subsystems[0].Paths.map((p) => p.ANAState);
  assert.deepEqual(ana, ["optimized", "inaccessible"]);
  assert.equal(
    subsysText(hosts, true).split("\n").slice(0, 4).join("\n"),
    `nvme-subsys1 - NQN=${MP_NQN}\n\\\n +- nvme1 rdma traddr=10.77.0.1,trsvcid=4420 live optimized\n` +
      " +- nvme2 tcp traddr=10.77.0.1,trsvcid=4421,src_addr=10.77.0.2 connecting inaccessible",
  );
  // Without a namespace named, nvme-cli leaves the ANA column empty but keeps its separator.
  assert.match(subsysText(hosts, false), /\+- nvme1 rdma traddr=10\.77\.0\.1,trsvcid=4420 live \n/);
  assert.match(subsysText(hosts, false), /\+- nvme3 pcie 0000:00:04\.0 live$/);
});

Deno.test("list-subsys groups a subsystem reached with two host NQNs under each, with its own paths", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  await Deno.writeTextFile(
    `${dir.path}/sys/class/nvme/nvme2/hostnqn`,
    "nqn.2024-01.io.example:h2\n",
  );
  await Deno.writeTextFile(`${dir.path}/sys/class/nvme/nvme2/hostid`, "\n");
  const hosts = groupByHost(await listSubsystems(pathsOf(dir.path)), { hostnqn: MP_HOSTNQN });
  const j = subsysJson(hosts, true);
  assert.deepEqual(j.map((h) => [h.HostNQN, h.HostID]), [
    [MP_HOSTNQN, MP_HOSTID],
    ["nqn.2024-01.io.example:h2", undefined],
    [MP_HOSTNQN, undefined], // the PCIe drive: the host files' identity (here without a host ID)
  ]);
  assert.ok(!("HostID" in j[1]));
  assert.deepEqual(j[0].Subsystems[0].Paths.map((p) => p.Name), ["nvme1"]);
  assert.deepEqual(j[1].Subsystems[0].Paths.map((p) => [p.Name, p.ANAState]), [
    ["nvme2", "inaccessible"],
  ]);
});

Deno.test("the path view names the head, each path's controller, state, ANA state and I/O timeout, and the iopolicy", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const text = pathViewText({ subsystems: await listSubsystems(pathsOf(dir.path)) });
  assert.match(text, new RegExp(`^nvme-subsys1  ${MP_NQN}  \\(nvm\\)  iopolicy round-robin$`, "m"));
  assert.match(text, /^ {2}nvme1n1 {2}nsid 1 {2}64 MiB {2}multipath head, 2 paths$/m);
  assert.match(
    text,
    /^ {4}nvme1c1n1 {2}via nvme1 {2}rdma 10\.77\.0\.1:4420 {2}live {2}optimized$/m,
  );
  assert.match(
    text,
    /^ {4}nvme1c2n1 {2}via nvme2 {2}tcp 10\.77\.0\.1:4421 {2}connecting {2}inaccessible {2}io_timeout 2000 ms$/m,
  );
  assert.match(text, /^ {2}nvme3n1 {2}nsid 1 {2}1 MiB {2}io_timeout 30000 ms$/m);
  assert.match(text, /^ {2}nvme3 {2}pcie {2}live {2}cntlid 0$/m);
});

Deno.test("Identify Namespace: size, use and the format in use, high FLBAS bits included", () => {
  const data = new Uint8Array(4096);
  const v = new DataView(data.buffer);
  v.setBigUint64(ID_NS.nsze, 2_000_000n, true);
  v.setBigUint64(ID_NS.nuse, 12_345n, true);
  // Format 17 (0b1_0001): low bits 0x1, high bits (index >> 4) in FLBAS bits 6:5.
  v.setUint8(ID_NS.flbas, (1 << 5) | 0x1);
  v.setUint16(ID_NS.lbaf + 17 * 4, 16, true);
  v.setUint8(ID_NS.lbaf + 17 * 4 + 2, 12);
  v.setUint8(ID_NS.lbaf + 1 * 4 + 2, 9); // format 1: what reading only the low bits would give
  assert.deepEqual(parseIdentifyNamespace(data), {
    nsze: 2_000_000n,
    nuse: 12_345n,
    lbaSize: 4096,
    metaSize: 16,
  });
});

Deno.test("withNeighbours reads ARP for controllers that are not live only; an answered entry points at the target", async () => {
  await using dir = await tempDir();
  await multipathTree(dir.path);
  const subsystems = await listSubsystems(pathsOf(dir.path));
  // Both controllers' target is 10.77.0.1, answered: only the connecting one gets the entry.
  await Deno.mkdir(`${dir.path}/proc/net`, { recursive: true });
  await Deno.writeTextFile(
    `${dir.path}/proc/net/arp`,
    "IP address       HW type     Flags       HW address            Mask     Device\n" +
      "10.77.0.1        0x1         0x2         52:54:00:12:34:56     *        fab1\n",
  );
  const [s] = withNeighbours(subsystems, `${dir.path}/proc`);
  assert.deepEqual(s.controllers.map((c) => c.neighbour?.state), [undefined, "resolved"]);
  const text = pathViewText({ subsystems: [s] });
  assert.match(
    text,
    /ARP for 10\.77\.0\.1 answered \(52:54:00:12:34:56 on fab1\): the link answers/,
  );
  // A silent target with a resolved neighbour: its RDMA listener may be stale after a NIC flap.
  assert.match(
    text,
    /NIC went down and up, its RDMA listener may be stale.*'nvmeof doctor' on the storage server/,
  );
  assert.doesNotMatch(text, /ARP unanswered/);
  // No ARP table (an IPv6 target, or no procfs): nothing is added.
  const [bare] = withNeighbours(subsystems, `${dir.path}/nowhere`);
  assert.equal(bare.controllers[1].neighbour, undefined);
});
