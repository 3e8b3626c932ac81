/**
 * The RDMA layer on the real kernel (rxe0 on rxenet0, 10.77.0.1) in the lab guest: devices
 * against ibv_devinfo and rdma link, ping with every op and several sizes, the QP trace, rping
 * interop both ways, a server serving 50 clients and returning every resource (with no V8 worker
 * thread beside its spinning loop), and the failures (no listener, bad address, client or server
 * killed mid-run) each with its own error within a bound. Servers run as subprocesses and are stopped in `finally`, even on failure.
 */
import assert from "node:assert/strict";
import { nvmeof, run, Spawned, spawnNvmeof } from "../helpers.ts";
import { pingClient } from "../../src/rdma/ping.ts";
import { Trace } from "../../src/rdma/connection.ts";

const ADDR = "10.77.0.1";
const dec = new TextDecoder();

function server(args: string[]): Spawned {
  return spawnNvmeof(args);
}

/** `rdma resource show` for rxe0: pd/cq/qp/cm_id/mr/ctx counts. */
async function resources(): Promise<string> {
  const r = await run("rdma", ["resource", "show"]);
  assert.equal(r.code, 0, r.stderr);
  const line = r.stdout.split("\n").find((l) => l.includes("rxe0"));
  assert.ok(line, r.stdout);
  return line.replace(/^\d+:\s*/, "").trim();
}

Deno.test("rdma devices agrees with ibv_devinfo -v and rdma link", async () => {
  const ours = await nvmeof(["rdma", "devices", "-o", "json"]);
  assert.equal(ours.code, 0, ours.stderr);
  const devs = JSON.parse(ours.stdout);
  const rxe = devs.find((d: { name: string }) => d.name === "rxe0");
  assert.ok(rxe, ours.stdout);
  const info = await run("ibv_devinfo", ["-v", "-d", "rxe0"]);
  assert.equal(info.code, 0, info.stderr);
  const field = (name: string) =>
    new RegExp(`^\\s*${name}:\\s*(.+)$`, "m").exec(info.stdout)?.[1].trim();
  assert.equal(rxe.node_guid, field("node_guid"));
  assert.equal(rxe.sys_image_guid, field("sys_image_guid"));
  assert.equal(rxe.fw_ver, field("fw_ver"));
  assert.equal(`0x${rxe.vendor_id.toString(16)}`, field("vendor_id"));
  assert.equal(String(rxe.phys_port_cnt), field("phys_port_cnt"));
  assert.equal(String(rxe.max_qp), field("max_qp"));
  assert.equal(String(rxe.max_qp_wr), field("max_qp_wr"));
  const port = rxe.ports[0];
  assert.equal(`${port.state} (4)`, field("state"));
  assert.match(field("max_mtu")!, new RegExp(`^${port.max_mtu} `));
  assert.match(field("active_mtu")!, new RegExp(`^${port.active_mtu} `));
  assert.equal(port.link_layer, field("link_layer"));
  assert.match(field("active_width")!, new RegExp(`^${port.active_width} `));
  assert.match(field("active_speed")!, new RegExp(`^${port.active_speed.replace(".", "\\.")} `));
  assert.match(field("phys_state")!, new RegExp(`^${port.phys_state} `));
  const gids = [...info.stdout.matchAll(/GID\[\s*(\d+)\]:\s*([^,\s]+), (.+)$/gm)]
    .map((m) => `${m[1]} ${m[2]} ${m[3].trim()}`);
  assert.ok(gids.length > 0, info.stdout);
  assert.deepEqual(
    port.gids.map((g: { index: number; gid: string; type: string }) =>
      `${g.index} ${g.gid} ${g.type}`
    ),
    gids,
  );
  assert.ok(port.gids.some((g: { ip: string }) => g.ip === ADDR));
  const link = await run("rdma", ["link", "show", "rxe0/1"]);
  assert.match(link.stdout, new RegExp(`state ${port.state.replace("PORT_", "")} `));
  assert.match(link.stdout, new RegExp(`physical_state ${port.phys_state} `));
  assert.match(link.stdout, new RegExp(`netdev ${port.netdev} `));
  const mtu = (await Deno.readTextFile(`/sys/class/net/${port.netdev}/mtu`)).trim();
  assert.equal(String(port.netdev_mtu), mtu);
});

Deno.test("ping: write, read and send at 2, 64 and 4096 bytes, every payload verified", async () => {
  await using srv = server(["rdma", "ping", "--server", "-a", ADDR, "-p", "7201"]);
  await srv.waitFor(/listening/, 60000);
  for (const op of ["write", "read", "send"] as const) {
    for (const size of [2, 64, 4096]) {
      const r = await pingClient({
        host: ADDR,
        port: 7201,
        op,
        size,
        count: 50,
        timeoutMs: 10000,
        trace: new Trace(false),
      });
      assert.equal(r.verified, 50, `${op} ${size}`);
      // Small WRITEs and SENDs go inline (rxe grants the 64 bytes asked for); READs never can.
      assert.equal(r.inline, op !== "read" && size <= 64, `${op} ${size} inline`);
      assert.ok(r.latency.min_us > 0 && r.latency.min_us <= r.latency.median_us);
      assert.ok(r.latency.median_us <= r.latency.p99_us && r.latency.p99_us <= r.latency.max_us);
    }
  }
  // And once through the CLI with -o json, as a user would.
  const cli = await nvmeof(["rdma", "ping", "-a", ADDR, "-p", "7201", "-c", "20", "-o", "json"]);
  assert.equal(cli.code, 0, cli.stderr);
  const j = JSON.parse(cli.stdout);
  assert.equal(j.verified, 20);
  assert.equal(j.warmup, 0);
  assert.equal(j.op, "write");
  // Untimed iterations first: the server echoes them too, only the timed ones are counted.
  const warm = await nvmeof([
    "rdma",
    "ping",
    "-a",
    ADDR,
    "-p",
    "7201",
    "-c",
    "20",
    "--warmup",
    "30",
    "-o",
    "json",
  ]);
  assert.equal(warm.code, 0, warm.stderr);
  const w = JSON.parse(warm.stdout);
  assert.equal(w.verified, 20);
  assert.equal(w.count, 20);
  assert.equal(w.warmup, 30);
  assert.equal(w.latency.samples, 20);
  for (const k of ["min_us", "median_us", "p99_us", "max_us"]) {
    assert.equal(typeof j.latency[k], "number");
  }
  // The server counts a client once its DISCONNECTED arrives, which can trail the client's exit.
  // The warm-up's client was the 11th, and its 30 untimed iterations crossed the wire too.
  await srv.waitFor(/client 11: write 64 B × 50: ok/, 30000);
  const st = await srv.stop();
  assert.equal(st.code, 0, srv.stderr);
  assert.match(srv.stdout, /served 11 client\(s\).*0 not ok/);
});

Deno.test("ping over IPv6: a RoCE v2 GID for fd77::1 on rxenet0 carries write, read and send", async () => {
  const add = await new Deno.Command("ip", {
    args: ["-6", "addr", "add", "fd77::1/64", "dev", "rxenet0", "nodad"],
  }).output();
  assert.equal(add.code, 0, dec.decode(add.stderr));
  try {
    // The GID table follows the netdev's addresses: the IPv6 GID appears shortly after.
    let ips: (string | null)[] = [];
    for (let i = 0; i < 20 && !ips.includes("fd77::1"); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 250));
      const devs = JSON.parse((await nvmeof(["rdma", "devices", "-o", "json"])).stdout);
      ips = devs.flatMap((d: { ports: { gids: { ip: string | null }[] }[] }) =>
        d.ports.flatMap((p) => p.gids.map((g) => g.ip))
      );
    }
    assert.ok(ips.includes("fd77::1"), `GID IPs: ${ips.join(", ")}`);
    await using srv = server(["rdma", "ping", "--server", "-a", "fd77::1", "-p", "7209"]);
    await srv.waitFor(/listening/, 60000);
    for (const op of ["write", "read", "send"] as const) {
      const r = await pingClient({
        host: "fd77::1",
        port: 7209,
        op,
        size: 64,
        count: 20,
        timeoutMs: 10000,
        trace: new Trace(false),
      });
      assert.equal(r.verified, 20, op);
    }
    // The server counts a client once its DISCONNECTED is in: wait for the third before stopping.
    await srv.waitFor(/client 3: .*: ok/, 30000);
    const st = await srv.stop();
    assert.equal(st.code, 0, srv.stderr);
    assert.match(srv.stdout, /served 3 client\(s\).*0 not ok/);
  } finally {
    await new Deno.Command("ip", { args: ["-6", "addr", "del", "fd77::1/64", "dev", "rxenet0"] })
      .output();
  }
});

Deno.test("--trace shows the CM events and RESET → INIT → RTR → RTS in order", async () => {
  await using srv = server([
    "rdma",
    "ping",
    "--server",
    "-a",
    ADDR,
    "-p",
    "7202",
    "--clients",
    "1",
  ]);
  await srv.waitFor(/listening/, 60000);
  const r = await nvmeof([
    "rdma",
    "ping",
    "-a",
    ADDR,
    "-p",
    "7202",
    "-c",
    "5",
    "--op",
    "read",
    "--trace",
    "-o",
    "json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const steps: { kind: string; name: string; t_us: number; detail?: Record<string, unknown> }[] =
    JSON.parse(r.stdout).trace;
  const names = steps.map((s) => s.name);
  const order = [
    "ADDR_RESOLVED",
    "ROUTE_RESOLVED",
    "RESET -> INIT",
    "CONNECT_RESPONSE",
    "INIT -> RTR",
    "RTR -> RTS",
  ];
  let at = -1;
  for (const n of order) {
    const i = names.indexOf(n, at + 1);
    assert.ok(i > at, `${n} not after step ${at}: ${names.join(", ")}`);
    at = i;
  }
  const rtr = steps.find((s) => s.name === "INIT -> RTR")!;
  assert.equal(rtr.detail?.path_mtu, 1024); // rxe on a 1500-byte netdev
  assert.equal(typeof rtr.detail?.dest_qp_num, "number");
  assert.equal(typeof steps.find((s) => s.name === "RTR -> RTS")!.detail?.sq_psn, "number");
  for (let i = 1; i < steps.length; i++) assert.ok(steps[i].t_us >= steps[i - 1].t_us);
  const text = await nvmeof(["rdma", "ping", "-a", ADDR, "-p", "7202", "-c", "1", "--trace"]);
  assert.notEqual(text.code, 0); // the one-client server is gone: REJECTED, with the trace
  assert.match(
    text.stderr,
    /REJECTED, reason 8 \(INVALID_SERVICE_ID\)[\s\S]*trace so far:[\s\S]*ROUTE_RESOLVED/,
  );
});

Deno.test("--rping completes against rdma-core's rping -s", async () => {
  await using rp = new Spawned("rping", ["-s", "-a", ADDR, "-p", "7203", "-v", "-C", "10"]);
  await new Promise((r) => setTimeout(r, 1000));
  const r = await nvmeof(["rdma", "ping", "--rping", "-a", ADDR, "-p", "7203", "-c", "10"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /10 verified/);
  const st = await rp.stop("SIGTERM", 10000);
  void st;
  const lines = rp.stdout.split("\n").filter((l) => l.startsWith("server ping data: rdma-ping-"));
  assert.equal(lines.length, 10, rp.stdout + rp.stderr);
  assert.match(lines[9], /^server ping data: rdma-ping-9: JKLMNOP/);
});

Deno.test("rping -c -V completes against nvmeof rdma ping --server --rping", async () => {
  await using srv = server([
    "rdma",
    "ping",
    "--server",
    "--rping",
    "-a",
    ADDR,
    "-p",
    "7204",
    "--clients",
    "2",
  ]);
  await srv.waitFor(/listening/, 60000);
  for (let round = 0; round < 2; round++) {
    const r = await run("timeout", [
      "60",
      "rping",
      "-c",
      "-a",
      ADDR,
      "-p",
      "7204",
      "-C",
      "10",
      "-v",
      "-V",
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(
      r.stdout.split("\n").filter((l) => l.startsWith("ping data: rdma-ping-")).length,
      10,
    );
  }
  // rping -c exits before the server has seen its DISCONNECTED; the line comes after that. With
  // --clients 2 the server then ends by itself: wait for that, not race its exit with a SIGTERM
  // (one sent while it was releasing its resources ended it with 143).
  await srv.waitFor(/client 2: rping 64 B × 10: ok/, 30000);
  const st = await srv.exitWithin(30000, "the rping server after its 2 clients");
  assert.equal(st.code, 0, srv.stderr);
});

Deno.test("a server serves 50 clients in a row and ends with the resources it started with", async () => {
  await using srv = server(["rdma", "ping", "--server", "-a", ADDR, "-p", "7205"]);
  await srv.waitFor(/listening/, 60000);
  const before = await resources();
  for (let i = 0; i < 50; i++) {
    const r = await pingClient({
      host: ADDR,
      port: 7205,
      op: (["write", "read", "send"] as const)[i % 3],
      size: 64,
      count: 5,
      timeoutMs: 10000,
      trace: new Trace(false),
    });
    assert.equal(r.verified, 5);
  }
  await srv.waitFor(/client 50: /, 20000);
  assert.equal(await resources(), before);
  // The server's spinning loop has no V8 worker thread beside it to take its CPU (the launcher
  // runs V8 single-threaded): only Deno's own threads, none named "V8 …".
  const task = `/proc/${srv.pid}/task`;
  const threads = [...Deno.readDirSync(task)].map((t) =>
    Deno.readTextFileSync(`${task}/${t.name}/comm`).trim()
  );
  assert.ok(threads.length >= 1);
  assert.deepEqual(threads.filter((n) => n.startsWith("V8 ")), [], threads.join(", "));
  const st = await srv.stop();
  assert.equal(st.code, 0);
  assert.match(srv.stdout, /served 50 client\(s\).*0 not ok/);
});

Deno.test("a client killed mid-run leaves the server serving the next one", async () => {
  await using srv = server([
    "rdma",
    "ping",
    "--server",
    "-a",
    ADDR,
    "-p",
    "7206",
    "--timeout",
    "5000",
  ]);
  await srv.waitFor(/listening/, 60000);
  const before = await resources();
  await using victim = server([
    "rdma",
    "ping",
    "-a",
    ADDR,
    "-p",
    "7206",
    "-c",
    "100000000",
    "--op",
    "write",
  ]);
  // Wait until the victim is connected (its run takes far longer than this test).
  await srv.waitFor(/client 1: connected/, 60000);
  await new Promise((r) => setTimeout(r, 500)); // mid-run
  await victim.stop("SIGKILL");
  await srv.waitFor(/client 1: failed: .*(went away|No progress)/, 20000);
  const r = await pingClient({
    host: ADDR,
    port: 7206,
    op: "send",
    size: 64,
    count: 10,
    timeoutMs: 10000,
    trace: new Trace(false),
  });
  assert.equal(r.verified, 10);
  await srv.waitFor(/client 2: send 64 B × 10: ok/, 10000);
  assert.equal(await resources(), before);
});

Deno.test("no listener: REJECTED reason 8 (INVALID_SERVICE_ID), exit 1, within 10 s", async () => {
  const t0 = Date.now();
  const r = await nvmeof(["rdma", "ping", "-a", ADDR, "-p", "7299", "-c", "1"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /rejected: REJECTED, reason 8 \(INVALID_SERVICE_ID\)/);
  assert.match(r.stderr, /Nothing listens/);
  assert.ok(Date.now() - t0 < 30000);
});

Deno.test("an address with no RDMA device behind it: ADDR_ERROR, exit 1, bounded", async () => {
  const t0 = Date.now();
  const r = await nvmeof(["rdma", "ping", "-a", "10.77.0.99", "-c", "1", "--timeout", "3000"]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /ADDR_ERROR|UNREACHABLE|Timed out after 3000 ms/);
  assert.ok(Date.now() - t0 < 40000);
});

Deno.test("a server killed mid-run: the client says the peer went away, within a bound", async () => {
  await using srv = server(["rdma", "ping", "--server", "-a", ADDR, "-p", "7207"]);
  await srv.waitFor(/listening/, 60000);
  const t0 = Date.now();
  const client = pingClient({
    host: ADDR,
    port: 7207,
    op: "send",
    size: 64,
    count: 100000000,
    timeoutMs: 5000,
    trace: new Trace(false),
  });
  const outcome = client.then(() => "finished", (e: Error) => e.message);
  await srv.waitFor(/client 1: connected/, 60000);
  await new Promise((r) => setTimeout(r, 500)); // mid-run
  await srv.stop("SIGKILL");
  const msg = await outcome;
  assert.match(msg, /went away|IBV_WC_RETRY_EXC_ERR|IBV_WC_WR_FLUSH_ERR|No progress/);
  assert.ok(Date.now() - t0 < 90000);
});

Deno.test("a request the server refuses: REJECTED reason 28 with the server's words; --trace on the server", async () => {
  await using srv = server([
    "rdma",
    "ping",
    "--server",
    "-a",
    ADDR,
    "-p",
    "7208",
    "--trace",
    "--clients",
    "1",
  ]);
  await srv.waitFor(/listening/, 60000);
  // An rping-protocol client sends no private data: the ping server refuses it and says why.
  const r = await nvmeof(["rdma", "ping", "--rping", "-a", ADDR, "-p", "7208", "-c", "1"]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /REJECTED, reason 28 \(CONSUMER_DEFINED\): the peer says "not an nvmeof ping client/,
  );
  await srv.waitFor(/client 1: rejected: not an nvmeof ping client/, 20000);
  assert.match(srv.stderr, /client 1: .*cm\s+CONNECT_REQUEST/);
  assert.match(srv.stderr, /client 1: .*rdma_reject/);
});
