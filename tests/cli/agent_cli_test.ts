/**
 * `nvmeof agent` from the outside, against a stand-in host (temporary sysfs, /dev and /etc/nvme):
 * its usage errors, its unit, and a run where the endpoint cannot be reached (no
 * /dev/nvme-fabrics) that says so once, keeps retrying, and stops cleanly on SIGTERM.
 */
import assert from "node:assert/strict";
import { nvmeof, spawnNvmeof, tempDir } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-0000000000a9";
const HI = "5a1e0000-0000-4000-8000-0000000000a9";

async function standin(root: string): Promise<Record<string, string>> {
  await Deno.mkdir(`${root}/sys/class/nvme`, { recursive: true });
  await Deno.mkdir(`${root}/dev`, { recursive: true });
  await Deno.mkdir(`${root}/etc/nvme`, { recursive: true });
  await Deno.writeTextFile(`${root}/etc/nvme/hostnqn`, HQ + "\n");
  await Deno.writeTextFile(`${root}/etc/nvme/hostid`, HI + "\n");
  return {
    NVMEOF_SYSFS: `${root}/sys`,
    NVMEOF_DEV: `${root}/dev`,
    NVMEOF_ETC_NVME: `${root}/etc/nvme`,
    NVMEOF_SYSTEMD_DIR: `${root}/systemd`,
    NVMEOF_LOCK_DIR: `${root}/run`,
  };
}

Deno.test("agent without -a and without discovery.conf is a usage error naming both", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  const r = await nvmeof(["agent"], { env });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /discovery\.conf/);
  assert.match(r.stderr, /-a\/--traddr/);
});

Deno.test("agent refuses a --rescan-interval that is not seconds", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  const r = await nvmeof(["agent", "-a", "10.0.0.2", "--rescan-interval", "1m"], { env });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--rescan-interval '1m'/);
});

Deno.test("agent refuses an unknown --on-removal, and a broken exclusions.conf naming its line", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  const r = await nvmeof(["agent", "-a", "10.0.0.2", "--on-removal", "disconnect"], { env });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--on-removal 'disconnect'/);
  assert.match(r.stderr, /leave, disconnect-unused/);
  await Deno.writeTextFile(
    `${env.NVMEOF_ETC_NVME}/exclusions.conf`,
    "--nqn=nqn.2024-01.io.example:a\n--hostnqn=x\n",
  );
  const x = await nvmeof(["agent", "-a", "10.0.0.2"], { env });
  assert.equal(x.code, 2, x.stderr);
  assert.match(x.stderr, /exclusions\.conf' line 2: '--hostnqn=x' is not an exclusion flag/);
  const e = await nvmeof(["agent", "enable", "--dry-run", "--force", "--on-removal", "x"], { env });
  assert.equal(e.code, 2, e.stderr);
});

Deno.test("agent enable --on-removal puts the policy in the unit's ExecStart", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  const args = ["agent", "enable", "--dry-run", "--force"];
  const plain = await nvmeof(args, { env });
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^ExecStart=\S+ agent$/m);
  const r = await nvmeof([...args, "--on-removal", "disconnect-unused"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^ExecStart=\S+ agent --on-removal disconnect-unused$/m);
});

Deno.test("agent enable refuses a host with nothing to follow unless --force", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  const r = await nvmeof(["agent", "enable", "--dry-run"], { env });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /nothing to follow/);
  assert.match(r.stderr, /--force/);
  const f = await nvmeof(["agent", "enable", "--dry-run", "--force"], { env });
  assert.equal(f.code, 0, f.stderr);
});

Deno.test("agent enable --dry-run prints a unit ordered after network-online, writes nothing", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  await Deno.writeTextFile(
    `${env.NVMEOF_ETC_NVME}/discovery.conf`,
    "--transport=rdma --traddr=10.0.0.2 --trsvcid=4420\n",
  );
  const r = await nvmeof(["agent", "enable", "--dry-run"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /After=network-online\.target/);
  assert.match(r.stdout, /Wants=network-online\.target/);
  assert.match(r.stdout, /ExecStart=\S+ agent\n/);
  assert.match(r.stdout, /Restart=on-failure/);
  assert.match(r.stdout, /RestartPreventExitStatus=2/);
  assert.equal(await Deno.stat(env.NVMEOF_SYSTEMD_DIR).then(() => true, () => false), false);
});

Deno.test("agent says an unreachable endpoint once, retries, refuses a second agent; status shows it", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  // discovery.conf and -a name the same endpoint: followed once.
  await Deno.writeTextFile(
    `${env.NVMEOF_ETC_NVME}/discovery.conf`,
    "# the storage server\n--transport=rdma --traddr=10.0.0.2 --trsvcid=4420\n",
  );
  await using agent = spawnNvmeof(["agent", "-a", "10.0.0.2", "-o", "json"], { env });
  const start = Date.now();
  while (!agent.stdout.includes("unreachable")) {
    if (agent.exited || Date.now() - start > 20_000) {
      throw new Error(`no unreachable line: ${agent.stdout} ${agent.stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 3500)); // retries at 1 s and 2 s, said no more
  const second = await nvmeof(["agent", "-a", "10.0.0.3"], { env });
  assert.equal(second.code, 3, "a second agent on the host is refused");
  assert.match(second.stderr, new RegExp(`Another nvmeof agent \\(pid ${agent.pid}\\) runs`));
  const running = await nvmeof(["agent", "status", "-o", "json"], { env });
  assert.equal(running.code, 0, running.stderr);
  const st = JSON.parse(running.stdout);
  assert.equal(st.running, true);
  assert.equal(st.pid, agent.pid);
  assert.equal(st.endpoints[0].state, "unreachable");
  assert.ok(st.scans >= 2, `retried: ${st.scans} scans`);
  const mode = (await Deno.stat(`${env.NVMEOF_LOCK_DIR}/agent.json`)).mode! & 0o777;
  assert.equal(mode, 0o600);
  const end = await agent.stop("SIGTERM", 10_000);
  assert.equal(end.code, 0, end.stderr);
  const lines = end.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.action), ["unreachable", "stopped"], end.stdout);
  assert.equal(lines[0].endpoint, `rdma 10.0.0.2:4420 as ${HQ}`);
  assert.equal(lines[0].reason, "start");
  assert.match(lines[0].error, /nvme-fabrics/);
  assert.equal(lines[0].nvmeof_json, 1);
  assert.equal(lines[1].error, "SIGTERM received");
  const after = await nvmeof(["agent", "status"], { env });
  assert.equal(after.code, 1, "not running");
  assert.match(after.stdout, /agent not running \(last run pid \d+, .*SIGTERM received/);
  assert.match(after.stdout, new RegExp(`rdma 10\\.0\\.0\\.2:4420 as ${HQ}: unreachable`));
});

Deno.test("agent status without a state file says the agent has not run (exit 1)", async () => {
  await using dir = await tempDir();
  const env = await standin(dir.path);
  const r = await nvmeof(["agent", "status", "-o", "json"], { env });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(JSON.parse(r.stdout).running, false);
});
