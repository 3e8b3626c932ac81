/**
 * The initiator commands against a temporary sysfs, /dev and /etc/nvme tree
 * (NVMEOF_SYSFS, NVMEOF_DEV, NVMEOF_ETC_NVME): everything that can be checked without the
 * kernel's fabrics driver. The real kernel is exercised across machines by tests/fabric/initiator_test.ts.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HI = "5a1e0000-0000-4000-8000-000000000001";
const NQN = "nqn.2024-01.io.example:disk1";

async function tree(root: string, withController = false): Promise<Record<string, string>> {
  const w = async (path: string, text: string) => {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text);
  };
  await Deno.mkdir(`${root}/dev`, { recursive: true });
  await w("etc/nvme/hostnqn", HQ + "\n");
  await w("etc/nvme/hostid", HI + "\n");
  if (withController) {
    const d = "sys/class/nvme/nvme3";
    await w(`${d}/transport`, "rdma\n");
    await w(`${d}/address`, "traddr=10.0.0.2,trsvcid=4420\n");
    await w(`${d}/subsysnqn`, NQN + "\n");
    await w(`${d}/hostnqn`, HQ + "\n");
    await w(`${d}/hostid`, HI + "\n");
    await w(`${d}/cntlid`, "5\n");
    await w(`${d}/state`, "live\n");
    await w(`${d}/delete_controller`, "");
    await w(`${d}/nvme3c3n1/nsid`, "1\n");
    await w(`${d}/nvme3c3n1/size`, "2048\n");
    await w("dev/nvme3n1", "");
    await w("sys/class/nvme-subsystem/nvme-subsys3/subsysnqn", NQN + "\n");
    await w("sys/class/nvme-subsystem/nvme-subsys3/subsystype", "nvm\n");
    await Deno.mkdir(`${root}/sys/class/nvme-subsystem/nvme-subsys3/nvme3`);
    await w("sys/class/nvme-subsystem/nvme-subsys3/nvme3n1/nsid", "1\n");
    await w("sys/class/nvme-subsystem/nvme-subsys3/nvme3n1/size", "2048\n");
    const p = "sys/class/nvme/nvme4";
    await w(`${p}/transport`, "pcie\n");
    await w(`${p}/subsysnqn`, "nqn.local\n");
    await w(`${p}/state`, "live\n");
    await w(`${p}/delete_controller`, "");
  }
  return {
    NVMEOF_SYSFS: `${root}/sys`,
    NVMEOF_DEV: `${root}/dev`,
    NVMEOF_ETC_NVME: `${root}/etc/nvme`,
  };
}

Deno.test("connect --dry-run prints the exact option string with the host files' identity", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const r = await nvmeof([
    "connect",
    "-a",
    "10.0.0.2",
    "-n",
    NQN,
    "-i",
    "2",
    "-Q",
    "64",
    "--dry-run",
  ], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `nqn=${NQN},transport=rdma,traddr=10.0.0.2,trsvcid=4420,hostnqn=${HQ},hostid=${HI},` +
      "nr_io_queues=2,queue_size=64,ctrl_loss_tmo=600\n",
  );
});

Deno.test("connect --dry-run never shows the DH-HMAC-CHAP secret", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  await Deno.writeTextFile(`${dir.path}/k`, "DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0:\n", {
    mode: 0o600,
  });
  const r = await nvmeof(
    [
      "connect",
      "-a",
      "10.0.0.2",
      "-n",
      NQN,
      "--dhchap-secret-file",
      `${dir.path}/k`,
      "--dry-run",
      "-o",
      "json",
    ],
    { env },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout + r.stderr, /c2VjcmV0/);
  assert.match(JSON.parse(r.stdout).option_string, /dhchap_secret=<secret from file>$/);
});

Deno.test("connect refuses a queue size out of range with exit 2 before touching the kernel", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const r = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN, "-Q", "2000"], { env });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /-Q\/--queue-size 2000 is out of range: the kernel accepts 16 to 1024/);
  assert.equal(r.stdout, "");
});

Deno.test("connect refuses a too-long NQN and a bad address (exit 2)", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const long = await nvmeof(["connect", "-a", "10.0.0.2", "-n", "nqn." + "x".repeat(230)], { env });
  assert.equal(long.code, 2);
  assert.match(long.stderr, /the kernel accepts at most 222/);
  const bad = await nvmeof(["connect", "-a", "10.0.0.999", "-n", NQN], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /'10\.0\.0\.999' is not an IPv4 or IPv6 address/);
  const under = await nvmeof(["connect", "-a", "storage_1", "-n", NQN], { env });
  assert.equal(under.code, 2, "not a host name either");
  const none = await nvmeof(["connect", "-a", "10.0.0.2"], { env });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /subsystem NQN is missing/);
});

Deno.test("connect without /dev/nvme-fabrics is an environment error (exit 3) naming the module", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const r = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN], { env });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /nvme-fabrics' does not exist/);
  assert.match(r.stderr, /modprobe -a nvme-fabrics nvme-rdma/);
});

Deno.test("connect reports an identical existing connection, exit 0, writing nothing", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, true);
  const r = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN, "-o", "json"], { env });
  assert.equal(r.code, 0, r.stderr);
  const d = JSON.parse(r.stdout);
  assert.equal(d.existing, true);
  assert.equal(d.device, "nvme3");
  assert.deepEqual(d.namespaces.map((n: { device: string }) => n.device), [
    `${dir.path}/dev/nvme3n1`,
  ]);
  const text = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN], { env });
  assert.match(text.stdout, /^already connected: nvme3 to 'nqn.2024-01.io.example:disk1'/);
});

Deno.test("list --paths -o json shows subsystems, controllers and namespaces from sysfs", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, true);
  const r = await nvmeof(["list", "--paths", "-o", "json"], { env });
  assert.equal(r.code, 0, r.stderr);
  const [s] = JSON.parse(r.stdout).subsystems;
  assert.equal(s.subsysnqn, NQN);
  assert.equal(s.controllers[0].transport, "rdma");
  assert.equal(s.controllers[0].address.traddr, "10.0.0.2");
  assert.equal(s.controllers[0].state, "live");
  assert.equal(s.namespaces[0].size, 1024 * 1024);
  const text = await nvmeof(["list", "--paths"], { env });
  assert.match(text.stdout, /nvme3 {2}rdma 10\.0\.0\.2:4420 {2}live/);
});

Deno.test("disconnect -n writes delete_controller of that subsystem's controllers", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, true);
  const r = await nvmeof(["disconnect", "-n", NQN], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /disconnected nvme3/);
  assert.equal(await Deno.readTextFile(`${dir.path}/sys/class/nvme/nvme3/delete_controller`), "1");
});

Deno.test("disconnect of an NQN not connected is exit 0 as in nvme-cli; a missing device is exit 1; no selector is exit 2", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, true);
  const r = await nvmeof(["disconnect", "-n", "nqn.2024-01.io.example:nope", "-o", "json"], {
    env,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /'nqn.2024-01.io.example:nope' is not connected; nothing to disconnect/);
  assert.deepEqual(JSON.parse(r.stdout), {
    nvmeof_json: 1,
    controllers: [],
    not_connected: ["nqn.2024-01.io.example:nope"],
  });
  assert.equal(await Deno.readTextFile(`${dir.path}/sys/class/nvme/nvme3/delete_controller`), "");
  const d = await nvmeof(["disconnect", "-d", "nvme9"], { env });
  assert.equal(d.code, 1);
  assert.match(d.stderr, /Controller 'nvme9' does not exist/);
  const u = await nvmeof(["disconnect"], { env });
  assert.equal(u.code, 2);
  const pcie = await nvmeof(["disconnect", "-d", "nvme4"], { env });
  assert.equal(pcie.code, 2);
  assert.match(pcie.stderr, /local PCIe controller/);
});

Deno.test("disconnect-all deletes fabrics controllers and never PCIe ones", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, true);
  const r = await nvmeof(["disconnect-all", "-o", "json"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).controllers.map((c: { device: string }) => c.device), [
    "nvme3",
  ]);
  assert.equal(await Deno.readTextFile(`${dir.path}/sys/class/nvme/nvme4/delete_controller`), "");
});

Deno.test("hostnqn --generate writes the pair once; hostnqn shows it", async () => {
  await using dir = await tempDir();
  const env = {
    NVMEOF_ETC_NVME: `${dir.path}/etc/nvme`,
    NVMEOF_SYSFS: `${dir.path}/sys`,
  };
  const g = await nvmeof(["hostnqn", "--generate", "-o", "json"], { env });
  assert.equal(g.code, 0, g.stderr);
  const made = JSON.parse(g.stdout);
  assert.equal(made.written.length, 2);
  assert.equal(made.hostnqn, `nqn.2014-08.org.nvmexpress:uuid:${made.hostid}`);
  const again = await nvmeof(["hostnqn", "--generate", "-o", "json"], { env });
  assert.deepEqual(JSON.parse(again.stdout).written, []);
  const show = await nvmeof(["hostnqn"], { env });
  assert.match(show.stdout, new RegExp(`^hostnqn: ${made.hostnqn.replaceAll(".", "\\.")}`));
});

Deno.test("hostnqn without files says how to create them (exit 3)", async () => {
  await using dir = await tempDir();
  const r = await nvmeof(["hostnqn"], { env: { NVMEOF_ETC_NVME: `${dir.path}/none` } });
  assert.equal(r.code, 3);
  assert.match(r.stderr, /nvmeof hostnqn --generate/);
});

Deno.test("every initiator command's help has worked examples", async () => {
  for (
    const cmd of [
      "discover",
      "connect",
      "connect-all",
      "disconnect",
      "disconnect-all",
      "list",
      "list-subsys",
      "hostnqn",
    ]
  ) {
    const r = await nvmeof([cmd, "--help"]);
    assert.equal(r.code, 0, cmd);
    assert.match(r.stdout, new RegExp(`Examples:\\n {2}nvmeof ${cmd}`), cmd);
  }
});

Deno.test("connect -l -1 (never give up) reaches the option string as ctrl_loss_tmo=-1; -l -2 is refused", async () => {
  const base = [
    "connect",
    "-t",
    "rdma",
    "-a",
    "10.0.0.1",
    "-n",
    "nqn.2026-01.io.nvmeof:neg",
    "--dry-run",
  ];
  const env = {
    LIBNVME_HOSTNQN: "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-000000000042",
    LIBNVME_HOSTID: "1e4a0000-0000-4000-8000-000000000042",
  };
  const ok = await nvmeof([...base, "-l", "-1"], { env });
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /ctrl_loss_tmo=-1/);
  const bad = await nvmeof([...base, "--ctrl-loss-tmo", "-2"], { env });
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /-1 to 2147483647/);
});
