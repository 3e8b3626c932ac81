/**
 * `connect` with several -a (every path of one subsystem, the HA profile) and `--ha`/`--no-ha`:
 * the option strings written, what the flags given override, and the refusals, with --dry-run
 * against a temporary tree (nothing reaches a kernel).
 */
import assert from "node:assert/strict";
import { nvmeof } from "../helpers.ts";
import { haProfile } from "../../src/fabrics/connect_table.ts";

const NQN = "nqn.2024-01.io.example:ha";
const env = {
  LIBNVME_HOSTNQN: "nqn.2014-08.org.nvmexpress:uuid:4a000000-0000-4000-8000-000000000001",
  LIBNVME_HOSTID: "4a000000-0000-4000-8000-000000000001",
};
const ID = `hostnqn=${env.LIBNVME_HOSTNQN},hostid=${env.LIBNVME_HOSTID}`;
const PROFILE = "keep_alive_tmo=1,reconnect_delay=1,ctrl_loss_tmo=-1,fast_io_fail_tmo=30";
/** What the profile sets after the connect, on each namespace queue of each path. */
const QUEUES = "then on each path's namespace queues: io_timeout=2000 ms";

Deno.test("the HA profile is the table's ha column", () => {
  assert.deepEqual(haProfile(), {
    keepAliveTmo: 1,
    reconnectDelay: 1,
    ctrlLossTmo: -1,
    fastIoFailTmo: 30,
    ioTimeout: 2,
  });
});

Deno.test("connect with two -a writes one option string per path, both with the HA profile", async () => {
  const r = await nvmeof(
    ["connect", "-a", "10.0.0.2", "-a", "10.0.1.2", "-n", NQN, "--dry-run"],
    { env },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `nqn=${NQN},transport=rdma,traddr=10.0.0.2,trsvcid=4420,${ID},${PROFILE}\n` +
      `nqn=${NQN},transport=rdma,traddr=10.0.1.2,trsvcid=4420,${ID},${PROFILE}\n` +
      `${QUEUES}\n`,
  );
});

Deno.test("a flag given wins over the profile; -o json names the profile's values", async () => {
  const r = await nvmeof(
    [
      "connect",
      "-a",
      "10.0.0.2",
      "-a",
      "10.0.1.2",
      "-n",
      NQN,
      "-k",
      "3",
      "-l",
      "60",
      "--dry-run",
      "-o",
      "json",
    ],
    { env },
  );
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.deepEqual(j.ha, {
    keep_alive_tmo: 3,
    reconnect_delay: 1,
    ctrl_loss_tmo: 60,
    fast_io_fail_tmo: 30,
    io_timeout: 2,
  });
  assert.deepEqual(j.namespace_queues, { io_timeout: 2000 });
  assert.equal(j.option_strings.length, 2);
  for (const s of j.option_strings) {
    assert.match(s, /,keep_alive_tmo=3,reconnect_delay=1,ctrl_loss_tmo=60,fast_io_fail_tmo=30$/);
  }
});

Deno.test("--ha gives one path the profile; one path without it keeps nvme-cli's defaults", async () => {
  const one = ["connect", "-a", "10.0.0.2", "-n", NQN, "--dry-run"];
  const ha = await nvmeof([...one, "--ha"], { env });
  assert.equal(ha.code, 0, ha.stderr);
  assert.equal(
    ha.stdout,
    `nqn=${NQN},transport=rdma,traddr=10.0.0.2,trsvcid=4420,${ID},${PROFILE}\n${QUEUES}\n`,
  );
  const plain = await nvmeof(one, { env });
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(
    plain.stdout,
    `nqn=${NQN},transport=rdma,traddr=10.0.0.2,trsvcid=4420,${ID},ctrl_loss_tmo=600\n`,
  );
});

Deno.test("--no-ha: two paths with nvme-cli's defaults", async () => {
  const r = await nvmeof(
    ["connect", "-a", "10.0.0.2", "-a", "10.0.1.2", "-n", NQN, "--no-ha", "--dry-run"],
    { env },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /keep_alive_tmo|reconnect_delay|fast_io_fail_tmo|io_timeout/);
  assert.equal(r.stdout.match(/ctrl_loss_tmo=600/g)?.length, 2);
});

Deno.test("refusals: a path given twice, --ha with --no-ha, one bad address among good ones (exit 2)", async () => {
  const dup = await nvmeof(
    ["connect", "-a", "10.0.0.2", "-a", "10.0.0.2", "-n", NQN, "--dry-run"],
    { env },
  );
  assert.equal(dup.code, 2, dup.stderr);
  assert.match(dup.stderr, /'10\.0\.0\.2' is given twice/);
  const both = await nvmeof(
    ["connect", "-a", "10.0.0.2", "-a", "10.0.1.2", "-n", NQN, "--ha", "--no-ha", "--dry-run"],
    { env },
  );
  assert.equal(both.code, 2, both.stderr);
  assert.match(both.stderr, /--ha and --no-ha exclude each other/);
  const bad = await nvmeof(
    ["connect", "-a", "10.0.0.2", "-a", "10.0.1.999", "-n", NQN, "--dry-run"],
    { env },
  );
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /10\.0\.1\.999/);
  assert.equal(bad.stdout, "");
});

Deno.test("connect --help documents the HA profile and shows two paths in its examples", async () => {
  const r = await nvmeof(["connect", "--help"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /--ha/);
  assert.match(
    r.stdout,
    /keep_alive_tmo=1 reconnect_delay=1 ctrl_loss_tmo=-1 fast_io_fail_tmo=30\s+io_timeout=2/,
  );
  assert.match(r.stdout, /-a 10\.0\.0\.2 -a 10\.0\.1\.2/);
});

Deno.test("--io-timeout: one path's own I/O timeout, in the dry run's queue line and JSON; 0 is refused", async () => {
  const one = ["connect", "-a", "10.0.0.2", "-n", NQN, "--dry-run"];
  const r = await nvmeof([...one, "--io-timeout", "5"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `nqn=${NQN},transport=rdma,traddr=10.0.0.2,trsvcid=4420,${ID},ctrl_loss_tmo=600\n` +
      "then on each path's namespace queues: io_timeout=5000 ms\n",
  );
  const j = await nvmeof([...one, "--io-timeout", "5", "-o", "json"], { env });
  assert.equal(j.code, 0, j.stderr);
  assert.deepEqual(JSON.parse(j.stdout).namespace_queues, { io_timeout: 5000 });
  const zero = await nvmeof([...one, "--io-timeout", "0"], { env });
  assert.equal(zero.code, 2, zero.stderr);
  assert.match(zero.stderr, /--io-timeout/);
  assert.equal(zero.stdout, "");
  // Given with the profile, the flag wins.
  const ha = await nvmeof([...one, "--ha", "--io-timeout", "7"], { env });
  assert.match(ha.stdout, /io_timeout=7000 ms/);
});
