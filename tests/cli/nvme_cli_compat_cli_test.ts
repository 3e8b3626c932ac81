/**
 * nvme-cli's command lines given to nvmeof, against temporary sysfs, /dev, /etc/nvme and /proc
 * trees: the connect flags of the option table in the option string, inline secrets and options
 * the kernel lacks refused, disconnect's lists and exit codes, disconnect-all -r.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HI = "5a1e0000-0000-4000-8000-000000000001";
const NQN = "nqn.2024-01.io.example:disk1";
const NQN2 = "nqn.2024-01.io.example:disk2";
const KEY = "DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0Pn2Z1A==:";

/** A tree with the host files, a 6.1 kernel release, and controllers of `ctrls` (name → [nqn, transport]). */
async function tree(
  root: string,
  ctrls: Record<string, [string, string]> = {},
): Promise<Record<string, string>> {
  const w = async (path: string, text: string) => {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text);
  };
  await Deno.mkdir(`${root}/dev`, { recursive: true });
  await w("etc/nvme/hostnqn", HQ + "\n");
  await w("etc/nvme/hostid", HI + "\n");
  await w("proc/sys/kernel/osrelease", "6.1.0-13-amd64\n");
  for (const [name, [nqn, transport]] of Object.entries(ctrls)) {
    const d = `sys/class/nvme/${name}`;
    await w(`${d}/transport`, `${transport}\n`);
    await w(`${d}/address`, "traddr=10.0.0.2,trsvcid=4420\n");
    await w(`${d}/subsysnqn`, nqn + "\n");
    await w(`${d}/state`, "live\n");
    await w(`${d}/delete_controller`, "");
  }
  return {
    NVMEOF_SYSFS: `${root}/sys`,
    NVMEOF_DEV: `${root}/dev`,
    NVMEOF_ETC_NVME: `${root}/etc/nvme`,
    NVMEOF_PROC: `${root}/proc`,
  };
}

Deno.test("connect takes nvme-cli's tuning flags and writes each under the kernel's token", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const r = await nvmeof([
    "connect",
    ..."-t tcp -a 10.0.0.2 -s 4420 -n".split(" "),
    NQN,
    ..."-i 2 -W 1 -P 1 -Q 64 -k 7 -c 3 -l -1 -F 5 -T 8 -D --disable-sqflow -g -G -f eth0".split(
      " ",
    ),
    "--dry-run",
    "--output-format=json",
  ], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    JSON.parse(r.stdout).option_string,
    `nqn=${NQN},transport=tcp,traddr=10.0.0.2,trsvcid=4420,hostnqn=${HQ},hostid=${HI},` +
      "host_iface=eth0,nr_io_queues=2,nr_write_queues=1,nr_poll_queues=1,queue_size=64," +
      "keep_alive_tmo=7,reconnect_delay=3,ctrl_loss_tmo=-1,fast_io_fail_tmo=5,tos=8," +
      "duplicate_connect,disable_sqflow,hdr_digest,data_digest",
  );
});

Deno.test("an inline secret is refused (exit 2) with the file form, and never echoed", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  for (const flag of [["-S", KEY], ["--dhchap-ctrl-secret", KEY], ["-C", KEY]]) {
    const r = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN, ...flag, "--dry-run"], {
      env,
    });
    assert.equal(r.code, 2, flag[0]);
    assert.match(r.stderr, /every user of this host can read it/);
    assert.match(r.stderr, /-secret-file \/etc\/nvme\/disk1\.key/);
    assert.doesNotMatch(r.stdout + r.stderr, /c2VjcmV0/);
  }
});

Deno.test("--tls on a 6.1 kernel: 'needs Linux ≥ 6.7' (exit 3); -g on rdma: tcp only (exit 2)", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const tls = await nvmeof(["connect", "-t", "tcp", "-a", "10.0.0.2", "-n", NQN, "--tls"], { env });
  assert.equal(tls.code, 3, tls.stderr);
  assert.match(tls.stderr, /--tls needs Linux ≥ 6\.7; this kernel is '6\.1\.0-13-amd64'/);
  const g = await nvmeof(["connect", "-a", "10.0.0.2", "-n", NQN, "-g", "--dry-run"], { env });
  assert.equal(g.code, 2);
  assert.match(g.stderr, /-g\/--hdr-digest applies to tcp only, not to -t rdma/);
});

Deno.test("disconnect -n takes a comma list; the connected ones go, the others are reported, exit 0", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, { nvme3: [NQN, "rdma"], nvme5: [NQN2, "tcp"] });
  const r = await nvmeof([
    "disconnect",
    "-n",
    `${NQN},nqn.2024-01.io.example:gone,${NQN2}`,
    "-o",
    "json",
  ], { env });
  assert.equal(r.code, 0, r.stderr);
  const data = JSON.parse(r.stdout);
  assert.deepEqual(data.controllers.map((c: { device: string }) => c.device), ["nvme3", "nvme5"]);
  assert.deepEqual(data.not_connected, ["nqn.2024-01.io.example:gone"]);
  for (const c of ["nvme3", "nvme5"]) {
    assert.equal(await Deno.readTextFile(`${dir.path}/sys/class/nvme/${c}/delete_controller`), "1");
  }
});

Deno.test("disconnect-all -r tcp deletes only the tcp controllers, as nvme-cli's -r", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, { nvme3: [NQN, "rdma"], nvme5: [NQN2, "tcp"] });
  const r = await nvmeof(["disconnect-all", "-r", "tcp", "-o", "json"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).controllers.map((c: { device: string }) => c.device), [
    "nvme5",
  ]);
  assert.equal(await Deno.readTextFile(`${dir.path}/sys/class/nvme/nvme3/delete_controller`), "");
});

Deno.test("disconnect as a non-root user is exit 3, on stderr, with the run-as-root hint", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path, { nvme3: [NQN, "rdma"] });
  await Deno.chmod(dir.path, 0o755);
  const args = ["--reuid=65534", "--regid=65534", "--clear-groups", "env"];
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const r = await new Deno.Command("setpriv", {
    args: [
      ...args,
      ...vars,
      new URL("../../scripts/nvmeof", import.meta.url).pathname,
      "disconnect",
      "-n",
      NQN,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(r.stdout);
  const stderr = new TextDecoder().decode(r.stderr);
  assert.equal(r.code, 3, stdout + stderr);
  assert.equal(stdout, "");
  assert.match(stderr, /Cannot disconnect nvme3 .*permission denied/);
  assert.match(stderr, /needs root .*Run it as root \(sudo nvmeof disconnect …\)/);
  assert.equal(await Deno.readTextFile(`${dir.path}/sys/class/nvme/nvme3/delete_controller`), "");
});

Deno.test("-a takes a host name, resolved as getaddrinfo does (/etc/hosts first); an unknown one is named", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const r = await nvmeof(["connect", "-a", "localhost", "-n", NQN, "--dry-run", "-o", "json"], {
    env,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(JSON.parse(r.stdout).option_string, /,traddr=127\.0\.0\.1,trsvcid=4420,/);
  const bad = await nvmeof(["connect", "-a", "storage1.nvmeof-test.invalid", "-n", NQN], { env });
  assert.equal(bad.code, 1, bad.stderr);
  assert.match(
    bad.stderr,
    /Cannot resolve -a\/--traddr 'storage1\.nvmeof-test\.invalid': ENOTFOUND/,
  );
  assert.match(bad.stderr, /getent hosts storage1\.nvmeof-test\.invalid/);
  const notIp = await nvmeof(["connect", "-a", "10.0.0.300", "-n", NQN, "--dry-run"], { env });
  assert.equal(notIp.code, 2, "a malformed address is not taken for a name");
});

Deno.test("discover and connect-all without -a read /etc/nvme/discovery.conf, as nvme-cli does", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const none = await nvmeof(["discover"], { env });
  assert.equal(none.code, 2);
  assert.match(none.stderr, /no '.*\/etc\/nvme\/discovery\.conf' to read/);
  await Deno.writeTextFile(
    `${dir.path}/etc/nvme/discovery.conf`,
    "# two discovery controllers\n--transport=rdma --traddr=10.0.0.2 --trsvcid=4420\n" +
      "-t tcp -a 10.0.0.3 -s 8009 -k 9\n",
  );
  // No /dev/nvme-fabrics in the tree: each line is tried, and each fails alike (exit 1).
  const all = await nvmeof(["connect-all", "-o", "json"], { env });
  assert.equal(all.code, 1, all.stderr);
  const data = JSON.parse(all.stdout);
  assert.match(data.file, /etc\/nvme\/discovery\.conf$/);
  assert.deepEqual(
    data.records.map((r: { trtype: string; traddr: string; trsvcid: string; status: string }) =>
      `${r.trtype} ${r.traddr}:${r.trsvcid} ${r.status}`
    ),
    ["rdma 10.0.0.2:4420 failed", "tcp 10.0.0.3:8009 failed"],
  );
  const disc = await nvmeof(["discover"], { env });
  assert.equal(disc.code, 1);
  assert.equal(disc.stderr.match(/nvme-fabrics' does not exist/g)?.length, 2, disc.stderr);
  await Deno.writeTextFile(`${dir.path}/etc/nvme/discovery.conf`, "# nothing\n");
  const empty = await nvmeof(["connect-all"], { env });
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /lists no discovery controller/);
});

Deno.test("-O prints libnvme's config.json without secrets, and -J connects from it", async () => {
  await using dir = await tempDir();
  const env = await tree(dir.path);
  const key = `${dir.path}/host.key`;
  await Deno.writeTextFile(key, KEY, { mode: 0o600 });
  const flags = ["-t", "tcp", "-a", "10.0.0.2", "-n", NQN, ..."-l -1 -F 5 -c 2 -k 9 -g".split(" ")];
  const dump = await nvmeof(
    ["connect", ...flags, "--dhchap-secret-file", key, "--dry-run", "-O"],
    { env },
  );
  assert.equal(dump.code, 0, dump.stderr);
  const config = JSON.parse(dump.stdout);
  assert.deepEqual(config, [{
    hostnqn: HQ,
    hostid: HI,
    subsystems: [{
      nqn: NQN,
      ports: [{
        transport: "tcp",
        traddr: "10.0.0.2",
        trsvcid: "4420",
        keep_alive_tmo: 9,
        reconnect_delay: 2,
        ctrl_loss_tmo: -1,
        fast_io_fail_tmo: 5,
        hdr_digest: true,
      }],
    }],
  }]);
  assert.doesNotMatch(dump.stdout, /DHHC|c2Vj/);
  const file = `${dir.path}/config.json`;
  await Deno.writeTextFile(file, dump.stdout);
  const direct = await nvmeof(["connect", ...flags, "--dry-run", "-o", "json"], { env });
  const viaJ = await nvmeof(["connect", "-J", file, "--dry-run", "-o", "json"], { env });
  assert.equal(viaJ.code, 0, viaJ.stderr);
  assert.deepEqual(JSON.parse(viaJ.stdout).option_strings, [
    JSON.parse(direct.stdout).option_string,
  ]);
  const missing = await nvmeof(["connect", "-J", `${dir.path}/none.json`], { env });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /-J\/--config '.*none\.json' does not exist/);
});

Deno.test("--persist saves the HA timeouts under nvme-cli's names and --saved gives them back", async () => {
  await using dir = await tempDir();
  const env = { ...await tree(dir.path), NVMEOF_ETC: `${dir.path}/etc/nvmeof` };
  const flags = ["-a", "10.0.0.2", "-n", NQN, "--reconnect-delay", "2", "--fast_io_fail_tmo", "4"];
  const args = [...flags, "--keep-alive-tmo", "3", "--ctrl-loss-tmo", "-1"];
  const planned = await nvmeof(["connect", ...args, "--dry-run", "-o", "json"], { env });
  const saved = await nvmeof(["connect", ...args, "--persist", "--dry-run", "-o", "json"], { env });
  assert.equal(saved.code, 0, saved.stderr);
  const entry = JSON.parse(saved.stdout).would_save;
  assert.equal(entry.reconnect_delay, 2);
  assert.equal(entry.fast_io_fail_tmo, 4);
  assert.equal(entry.keep_alive_tmo, 3);
  assert.equal(entry.ctrl_loss_tmo, -1);
  const { stringify } = await import("yaml");
  await Deno.mkdir(`${dir.path}/etc/nvmeof`, { recursive: true });
  await Deno.writeTextFile(
    `${dir.path}/etc/nvmeof/connections.yaml`,
    stringify({ connections: [entry] }),
  );
  const back = await nvmeof(["connect", "--saved", "--dry-run", "-o", "json"], { env });
  assert.equal(back.code, 0, back.stderr);
  assert.equal(
    JSON.parse(back.stdout).connections[0].option_string,
    JSON.parse(planned.stdout).option_string,
  );
  assert.match(
    JSON.parse(planned.stdout).option_string,
    /reconnect_delay=2,ctrl_loss_tmo=-1,fast_io_fail_tmo=4/,
  );
});
