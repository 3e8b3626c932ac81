/**
 * The RDMA layer across the wire: nvmeof's ping and bw between the storage server and a compute
 * node, and rdma-core's rping as the peer in both directions. Servers run as background jobs on
 * `target` with a client count, so they end by themselves; each job is also bounded by its
 * timeout.
 */
import assert from "node:assert/strict";
import { addr, must, nvmeofOn, on } from "./fabric.ts";

const T = addr("target", 0);

/** Waits until something on NODE listens on RDMA-CM PORT (read from the kernel's CM ids). */
async function listening(node: "target" | "host1", port: number): Promise<void> {
  await must(
    node,
    `for i in $(seq 1 900); do rdma res show cm_id | grep -q "state LISTEN.*:${port} " && exit 0; sleep 0.1; done; exit 1`,
    { timeout: 120 },
  );
}

Deno.test("rdma ping from host1 to a server on the target: write, read and send at 4096 bytes, every payload verified", async () => {
  const server = nvmeofOn("target", [
    "rdma",
    "ping",
    "--server",
    "-a",
    T,
    "-p",
    "7301",
    "--clients",
    "3",
  ], { timeout: 400 });
  await listening("target", 7301);
  for (const op of ["write", "read", "send"]) {
    const r = await nvmeofOn("host1", [
      "rdma",
      "ping",
      "-a",
      T,
      "-p",
      "7301",
      "--op",
      op,
      "--size",
      "4096",
      "-c",
      "200",
      "-o",
      "json",
    ]);
    assert.equal(r.code, 0, `${op}: ${r.stderr}`);
    const j = JSON.parse(r.stdout);
    assert.equal(j.op, op);
    assert.equal(j.count, 200, r.stdout);
    assert.equal(j.verified, 200, r.stdout);
  }
  const s = await server;
  assert.equal(s.code, 0, s.stderr);
  assert.equal(
    s.stderr.match(/client \d+: (write|read|send) 4096 B × 200: ok/g)?.length,
    3,
    s.stderr,
  );
});

Deno.test("--rping on host1 completes against rdma-core's rping -s on the target, on link 1", async () => {
  const a = addr("target", 1);
  const rp = on("target", `rping -s -a ${a} -p 7303 -v -C 10`, { timeout: 120 });
  await listening("target", 7303);
  const r = await nvmeofOn("host1", ["rdma", "ping", "--rping", "-a", a, "-p", "7303", "-c", "10"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /10 verified/);
  const s = await rp;
  const lines = s.stdout.split("\n").filter((l) => l.startsWith("server ping data: rdma-ping-"));
  assert.equal(lines.length, 10, s.stdout + s.stderr);
  assert.match(lines[9], /^server ping data: rdma-ping-9: JKLMNOP/);
});

Deno.test("rping -c -V on host2 completes against nvmeof rdma ping --server --rping on the target", async () => {
  const srv = nvmeofOn("target", [
    "rdma",
    "ping",
    "--server",
    "--rping",
    "-a",
    T,
    "-p",
    "7304",
    "--clients",
    "2",
  ], { timeout: 400 });
  await listening("target", 7304);
  for (let round = 0; round < 2; round++) {
    const r = await on("host2", `rping -c -a ${T} -p 7304 -C 10 -v -V`, { timeout: 90 });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(
      r.stdout.split("\n").filter((l) => l.startsWith("ping data: rdma-ping-")).length,
      10,
    );
  }
  const s = await srv;
  assert.equal(s.code, 0, s.stderr);
  assert.match(s.stderr, /client 2: rping 64 B × 10: ok/);
});

/** `rdma bw` from CLIENT to a one-client server on SERVER at ADDR:PORT; the client's JSON. */
async function bwAcross(
  server: "target" | "host1",
  client: "target" | "host1",
  a: string,
  port: number,
  iters: number,
): Promise<{ bytes: number; bw_mib_s: number }> {
  const flags = ["-a", a, "-p", String(port)];
  const srv = nvmeofOn(server, ["rdma", "bw", "--server", ...flags, "--clients", "1"], {
    timeout: 400,
  });
  await listening(server, port);
  const r = await nvmeofOn(client, [
    "rdma",
    "bw",
    ...flags,
    "--iters",
    String(iters),
    "-o",
    "json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const s = await srv;
  assert.equal(s.code, 0, s.stderr);
  return JSON.parse(r.stdout);
}

Deno.test("rdma bw from host1 to the target moves every byte; a server on host1 serves the target the other way", async () => {
  const j = await bwAcross("target", "host1", T, 7305, 400);
  assert.equal(j.bytes, 400 * 65536);
  assert.ok(j.bw_mib_s > 0);
  const back = await bwAcross("host1", "target", addr("host1", 0), 7306, 200);
  assert.equal(back.bytes, 200 * 65536);
});

Deno.test("perftest's ib_write_bw and nvmeof rdma bw, side by side across the same link, both move 400 × 64 KiB", async () => {
  const perfServer = on("target", "timeout 200 ib_write_bw -R -F -s 65536 -n 400 -p 18515", {
    timeout: 240,
  });
  await on("host1", "sleep 3");
  const perf = await on(
    "host1",
    `for i in $(seq 1 20); do timeout 150 ib_write_bw -R -F -s 65536 -n 400 -p 18515 ${T} && exit 0; sleep 1; done; exit 1`,
    { timeout: 240 },
  );
  assert.equal(perf.code, 0, perf.stderr);
  assert.equal((await perfServer).code, 0);
  // perftest's result line: #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
  const row = perf.stdout.split("\n").find((l) => /^\s*65536\s+400\s/.test(l));
  assert.ok(row, perf.stdout);
  const perfMiB = Number(row.trim().split(/\s+/)[3]);

  const j = await bwAcross("target", "host1", T, 7307, 400);
  assert.equal(j.bytes, 400 * 65536);
  console.log(
    `across the wire, 400 × 64 KiB: ib_write_bw ${perfMiB} MiB/s, nvmeof rdma bw ${j.bw_mib_s} MiB/s ` +
      `(ratio ${
        (j.bw_mib_s / perfMiB).toFixed(2)
      }; one run, under emulation: a figure, not a verdict)`,
  );
});
