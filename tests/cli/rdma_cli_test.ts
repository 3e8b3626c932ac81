/**
 * The rdma commands' exit codes and messages on a host without RDMA (this machine's own kernel
 * has none): usage errors are 2 and say what to give; a missing device is 3 and says what to load.
 */
import assert from "node:assert/strict";
import { nvmeof } from "../helpers.ts";

Deno.test("rdma ping without -a is a usage error (2) with an example", async () => {
  const r = await nvmeof(["rdma", "ping"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Say where to connect: -a ADDR/);
});

Deno.test("rdma ping --op with an unknown operation is a usage error (2)", async () => {
  const r = await nvmeof(["rdma", "ping", "-a", "10.0.0.1", "--op", "atomic"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--op must be write, read or send, not 'atomic'/);
});

Deno.test("rdma bw refuses --iters with --time (2)", async () => {
  const r = await nvmeof(["rdma", "bw", "-a", "10.0.0.1", "--iters", "5", "--time", "1"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /exclude each other/);
});

Deno.test("rdma ping --count must be a positive integer (2)", async () => {
  const r = await nvmeof(["rdma", "ping", "-a", "10.0.0.1", "-c", "ten"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--count must be an integer/);
});

Deno.test("rdma ping --warmup must be a non-negative integer, and --rping has none (2)", async () => {
  const bad = await nvmeof(["rdma", "ping", "-a", "10.0.0.1", "--warmup", "-1"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--warmup must be an integer from 0/);
  const rping = await nvmeof(["rdma", "ping", "--rping", "-a", "10.0.0.1", "--warmup", "5"]);
  assert.equal(rping.code, 2);
  assert.match(rping.stderr, /no --warmup/);
});

Deno.test("rdma devices without RDMA in the kernel is an environment error (3) naming the fix", async () => {
  const r = await nvmeof(["rdma", "devices"]);
  if (r.code === 0) return assert.match(r.stdout, /port 1/); // a host with RDMA: it lists
  assert.equal(r.code, 3, r.stderr);
  // Which errno libibverbs gives depends on the kernel's sysfs: ENOSYS or ENOENT. Either way
  // the hint must say what to load, not only where to look.
  assert.match(r.stderr, /ibv_get_device_list\(\) failed with (ENOSYS|ENOENT)|No RDMA device/);
  assert.match(r.stderr, /rdma link add NAME type rxe netdev IFACE|Load ib_uverbs/);
});

Deno.test("rdma ping without an RDMA CM is an environment-explained failure, not a hang", async () => {
  const t0 = Date.now();
  const r = await nvmeof(["rdma", "ping", "-a", "10.0.0.1", "-c", "1", "--timeout", "2000"]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /rdma_create_event_channel|RDMA connection manager|ADDR_ERROR|REJECTED/);
  assert.ok(Date.now() - t0 < 30000);
});

Deno.test("rdma help lists the subcommands with worked examples", async () => {
  const r = await nvmeof(["rdma", "ping", "--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /--rping/);
  assert.match(r.stdout, /nvmeof rdma ping --server -a 10\.77\.0\.1/);
});
