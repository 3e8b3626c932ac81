/**
 * The fabric's own contract, which every other fabric test relies on: separate machines (own
 * hostname, host identity, kernel), commands with their output and exit code, RDMA across the
 * wire, and the faults (carrier loss, power cut with the disk kept).
 */
import assert from "node:assert/strict";
import { ROOT } from "../helpers.ts";
import {
  addr,
  boot,
  dropIncoming,
  hostnqnOf,
  linkProblems,
  must,
  netem,
  on,
  powerCut,
  restoreLinks,
  run,
  setLink,
} from "./fabric.ts";

Deno.test("fabric: stdout and stderr come back separately and byte-exact, with the exit code", async () => {
  const r = await on("host1", "pwd; printf 'a\\r\\nb\\n'; echo to-stderr >&2; exit 7");
  assert.equal(r.code, 7, r.stderr);
  assert.equal(r.stdout, `${ROOT}\na\r\nb\n`);
  assert.equal(r.stderr, "to-stderr\n");
});

Deno.test("fabric: a command that overruns its bound is stopped with exit 124", async () => {
  const r = await on("host2", "echo started; sleep 600; echo never", { timeout: 3 });
  assert.equal(r.code, 124);
  assert.equal(r.stdout, "started\n");
  assert.match(r.stderr, /did not finish within 3 s on host2/);
});

Deno.test("fabric: each node is its own machine: hostname, kernel boot, host NQN", async () => {
  const seen = new Map<string, string>();
  for (const node of ["target", "host1", "host2"] as const) {
    const name = (await must(node, "hostname")).trim();
    assert.equal(name, node);
    const bootId = (await must(node, "cat /proc/sys/kernel/random/boot_id")).trim();
    seen.set(`boot ${bootId}`, node);
    const nqn = await hostnqnOf(node);
    assert.ok(!seen.has(nqn), `${node} has the host NQN of ${seen.get(nqn)}: ${nqn}`);
    seen.set(nqn, node);
  }
  assert.equal(seen.size, 6, "three boot ids and three host NQNs, all different");
});

Deno.test("fabric: RDMA crosses the wire: rping from host1 to the target on both links", async () => {
  for (const link of [0, 1] as const) {
    const a = addr("target", link);
    const server = on("target", `rping -s -a ${a} -C 3 -v`, { timeout: 60 });
    // The server listens within a second or two; the client retries until it does.
    const client = await on(
      "host1",
      `for i in $(seq 1 20); do rping -c -a ${a} -C 3 -v && exit 0; sleep 1; done; exit 1`,
      { timeout: 60 },
    );
    assert.equal(client.code, 0, client.stderr);
    assert.match(client.stdout, /ping data: rdma-ping-2/);
    const s = await server;
    assert.equal(s.code, 0, s.stderr);
    assert.match(s.stdout, /server ping data: rdma-ping-2/);
  }
});

Deno.test("fabric: carrier loss on host1's link 0 takes its rxe port down; back on, it returns", async () => {
  try {
    await setLink("host1", 0, false);
    const down = await on(
      "host1",
      "for i in $(seq 1 50); do ip link show fab0 | grep -q NO-CARRIER && break; sleep 0.1; done; " +
        "ip -br link show fab0; cat /sys/class/infiniband/rxe0/ports/1/state; " +
        `ping -c 1 -W 1 ${addr("target", 0)} >/dev/null; echo ping=$?`,
    );
    assert.match(down.stdout, /NO-CARRIER/);
    assert.match(down.stdout, /DOWN/);
    assert.match(down.stdout, /ping=1/);
    // Link 1 is another cable: unaffected.
    const other = await on("host1", `ping -c 1 -W 2 ${addr("target", 1)} >/dev/null; echo ping=$?`);
    assert.match(other.stdout, /ping=0/);
  } finally {
    await setLink("host1", 0, true);
  }
  // Back: the port ACTIVE, and the target answering within 10 s (a ping a second until one is
  // answered: the first can go while the address is resolved again, and once went unanswered).
  const up = await on(
    "host1",
    "for i in $(seq 1 50); do grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state && break; sleep 0.1; done; " +
      `cat /sys/class/infiniband/rxe0/ports/1/state; ping -c 1 -w 10 ${
        addr("target", 0)
      } >/dev/null; echo ping=$?`,
  );
  assert.match(up.stdout, /ACTIVE/);
  assert.match(up.stdout, /ping=0/);
});

Deno.test("fabric: a power cut loses what was not synced; the node boots again from its own disk", async () => {
  await must(
    "host2",
    "mkdir -p /var/lib/fabric-test && echo kept >/var/lib/fabric-test/synced && sync",
  );
  const before = (await must("host2", "cat /proc/sys/kernel/random/boot_id")).trim();
  await powerCut("host2");
  const dead = await run("host2", ["true"]);
  assert.equal(dead.code, 98);
  assert.match(dead.stderr, /host2 is powered off/);
  await boot("host2");
  const after = (await must("host2", "cat /proc/sys/kernel/random/boot_id")).trim();
  assert.notEqual(after, before);
  assert.equal((await must("host2", "cat /var/lib/fabric-test/synced")).trim(), "kept");
  assert.equal(
    (await must("host2", "cat /sys/class/infiniband/rxe0/ports/1/state")).trim(),
    "4: ACTIVE",
  );
  await must("host2", "rm -rf /var/lib/fabric-test");
});

Deno.test("fabric: a blackhole keeps the carrier but drops every packet; a firewall on UDP 4791 stops RoCEv2 only", async () => {
  const t = addr("target", 1);
  const hole = await netem("host1", 1, "loss 100%");
  try {
    const r = await on(
      "host1",
      `ip -br link show fab1; ping -c 2 -W 1 ${t} >/dev/null; echo ping=$?`,
    );
    assert.match(r.stdout, /fab1\s+UP/);
    assert.doesNotMatch(r.stdout, /NO-CARRIER/);
    assert.match(r.stdout, /ping=1/);
  } finally {
    await hole.undo();
  }
  const fw = await dropIncoming("target", "udp", 4791);
  try {
    const server = on("target", `timeout 40 rping -s -a ${t} -p 7310 -C 1`, { timeout: 60 });
    // Across the same link rping connects in 1-2 s (the test above); 10 s is ample.
    const r = await on(
      "host1",
      `sleep 2; ping -c 1 -W 2 ${t} >/dev/null; echo ping=$?; timeout 10 rping -c -a ${t} -p 7310 -C 1; echo rping=$?`,
      { timeout: 60 },
    );
    assert.match(r.stdout, /ping=0/, "IP still answers");
    assert.doesNotMatch(r.stdout, /rping=0/, "RDMA-CM got through a dropped UDP 4791");
    // The server got no connection: stop it rather than wait out its 40 s.
    await on("target", "pkill -x rping; true");
    await server;
  } finally {
    await fw.undo();
  }
});

Deno.test("fabric: a blackhole a test left behind is found, named and put back by restoreLinks", async () => {
  assert.deepEqual(await linkProblems("host1"), []);
  await must("host1", "tests/fabric/guest_faults.sh blackhole 0 on");
  let err: Error | undefined;
  try {
    assert.deepEqual(await linkProblems("host1"), [
      "fab0 still has a fault's qdisc: " +
      (await must("host1", "tc qdisc show dev fab0 | grep -E 'netem|ingress' | tr '\\n' ';'"))
        .trim(),
      "no ping reply from 10.78.0.1 on fab0",
    ]);
  } finally {
    err = await restoreLinks("host1");
  }
  assert.ok(err, "restoreLinks saw nothing wrong");
  assert.match(err.message, /^host1's links were not as a boot leaves them after the test: fab0/);
  assert.match(err.message, /Put back \(qdiscs, neighbour caches, carrier\)/);
  assert.match(err.message, /--- host1\n/);
  assert.deepEqual(await linkProblems("host1"), []);
  assert.equal(await restoreLinks("host1"), undefined);
});

Deno.test("fabric: a link the carrier cannot bring back is put back by a power cycle of the node", async () => {
  // A NIC the guest took down stands in for one stuck below the guest: pulling the cable does not
  // bring either back, a boot does.
  const before = (await must("host2", "cat /proc/sys/kernel/random/boot_id")).trim();
  await must("host2", "ip link set fab1 down");
  const err = await restoreLinks("host2");
  assert.ok(err, "restoreLinks saw nothing wrong");
  assert.match(err.message, /^host2's links were not as a boot leaves them after the test: /);
  assert.match(err.message, /no ping reply from 10\.78\.1\.1 on fab1/);
  assert.match(err.message, /Put back \(qdiscs, neighbour caches, carrier, host2's power\)/);
  assert.match(err.message, /--- cables \(Recv-Q Send-Q of each end's socket\)\n[^]*\/s\/h3\d /);
  assert.notEqual((await must("host2", "cat /proc/sys/kernel/random/boot_id")).trim(), before);
  assert.deepEqual(await linkProblems("host2"), []);
});
