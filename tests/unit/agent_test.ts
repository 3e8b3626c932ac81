/**
 * The agent's decisions without a kernel: the scan scheduler's coalescing, which uevents cause
 * which scan, which connect rows are said (once per change), the back-off, and which existing
 * controller counts as the endpoint's persistent discovery controller.
 */
import assert from "node:assert/strict";
import { type ScanBatch, type ScanReason, ScanScheduler } from "../../src/agent/scheduler.ts";
import { DISCOVERY_LOG_CHANGE_AEN, scanOf } from "../../src/agent/events.ts";
import { backoffMs, decisionText, rowDecisions, StateLog } from "../../src/agent/decisions.ts";
import {
  endpointLabel,
  isPersistentDiscoveryOf,
  uniqueEndpoints,
} from "../../src/agent/follower.ts";
import { readController } from "../../src/fabrics/sysfs.ts";
import { StatusBook, statusText } from "../../src/agent/status.ts";
import type { ConnectOptions } from "../../src/fabrics/connect_options.ts";
import type { ConnectAllRow } from "../../src/initiator/connect_report.ts";
import { unusableEntry } from "../../src/initiator/connect_all.ts";
import type { DiscoveryLogEntry } from "../../src/fabrics/discovery_log.ts";
import type { Uevent } from "../../src/net/uevent.ts";
import { tempDir } from "../helpers.ts";

/** A scheduler whose scans wait for `release()`; `batches` records what each scan was given. */
function gatedScheduler() {
  const batches: ScanBatch[] = [];
  let open: (() => void) | undefined;
  const s = new ScanScheduler(async (b) => {
    batches.push(new Map(b));
    await new Promise<void>((r) => open = r);
  }, (err) => {
    throw err;
  });
  const release = async () => {
    while (!open) await new Promise((r) => setTimeout(r, 0));
    const o = open;
    open = undefined;
    o();
    await new Promise((r) => setTimeout(r, 0));
  };
  return { s, batches, release };
}

Deno.test("scheduler: a burst of 50 requests made together costs one scan", async () => {
  const { s, batches, release } = gatedScheduler();
  for (let i = 0; i < 50; i++) s.request("a", "log-changed");
  await release();
  await s.idle();
  assert.equal(s.scans, 1);
  assert.deepEqual([...batches[0]], [["a", "log-changed"]]);
});

Deno.test("scheduler: requests during a scan cause exactly one more scan, with all of them", async () => {
  const { s, batches, release } = gatedScheduler();
  s.request("a", "start");
  await new Promise((r) => setTimeout(r, 0)); // the first scan has started
  for (let i = 0; i < 50; i++) s.request(i % 2 ? "a" : "b", "log-changed");
  s.request("c", "rediscover");
  await release();
  await release();
  await s.idle();
  assert.equal(s.scans, 2);
  assert.deepEqual([...batches[1]].sort(), [["a", "log-changed"], ["b", "log-changed"], [
    "c",
    "rediscover",
  ]]);
});

Deno.test("scheduler: a request made as a scan ends is not lost", async () => {
  const seen: string[] = [];
  const s: ScanScheduler = new ScanScheduler((b) => {
    seen.push(...b.keys());
    // Asked from inside the scan, at its very end: must run once more.
    if (seen.length === 1) s.request("late", "log-changed");
    return Promise.resolve();
  }, () => {});
  s.request("first", "start");
  await s.idle();
  assert.deepEqual(seen, ["first", "late"]);
  assert.equal(s.busy, false);
  s.request("again", "periodic");
  await s.idle();
  assert.deepEqual(seen, ["first", "late", "again"]);
});

Deno.test("scheduler: a scan that throws is reported and scanning goes on", async () => {
  const errors: unknown[] = [];
  let n = 0;
  const s = new ScanScheduler(() => {
    if (n++ === 0) return Promise.reject(new Error("boom"));
    return Promise.resolve();
  }, (e) => errors.push(e));
  s.request("a", "start");
  await s.idle();
  s.request("a", "retry");
  await s.idle();
  assert.equal(errors.length, 1);
  assert.equal(s.scans, 2);
});

function uevent(action: string, name: string, env: Record<string, string> = {}): Uevent {
  const devpath = `/devices/virtual/nvme-fabrics/ctl/${name}`;
  return { action, devpath, env: { ACTION: action, DEVPATH: devpath, SUBSYSTEM: "nvme", ...env } };
}

const owners = {
  discovery: (n: string) => n === "nvme0" ? "rdma 10.0.0.2:4420" : undefined,
  io: (n: string) => n === "nvme3" ? "rdma 10.0.0.2:4420" : undefined,
};

Deno.test("scanOf: a log change notice on a followed discovery controller reads its log", () => {
  assert.deepEqual(
    scanOf(uevent("change", "nvme0", { NVME_AEN: DISCOVERY_LOG_CHANGE_AEN }), owners),
    {
      endpoint: "rdma 10.0.0.2:4420",
      reason: "log-changed",
    },
  );
});

Deno.test("scanOf: rediscover and removal of a followed discovery controller read everything", () => {
  const ep = "rdma 10.0.0.2:4420";
  assert.deepEqual(scanOf(uevent("change", "nvme0", { NVME_EVENT: "rediscover" }), owners), {
    endpoint: ep,
    reason: "rediscover",
  });
  assert.deepEqual(scanOf(uevent("remove", "nvme0"), owners), { endpoint: ep, reason: "lost" });
  assert.deepEqual(scanOf(uevent("remove", "nvme3"), owners), { endpoint: ep, reason: "removed" });
});

Deno.test("scanOf: other events, controllers and subsystems cause no scan", () => {
  const aen = { NVME_AEN: DISCOVERY_LOG_CHANGE_AEN };
  assert.equal(scanOf(uevent("change", "nvme7", aen), owners), undefined, "not followed");
  assert.equal(scanOf(uevent("change", "nvme0", { NVME_AEN: "0x30002" }), owners), undefined);
  assert.equal(scanOf(uevent("change", "nvme0", { NVME_EVENT: "connected" }), owners), undefined);
  assert.equal(scanOf(uevent("add", "nvme0"), owners), undefined);
  assert.equal(scanOf(uevent("change", "nvme3", aen), owners), undefined, "an I/O controller");
  const block = { ...uevent("remove", "nvme3n1"), env: { SUBSYSTEM: "block" } };
  assert.equal(scanOf(block, owners), undefined);
});

const row = (over: Partial<ConnectAllRow>): ConnectAllRow => ({
  subnqn: "nqn.2024-01.io.example:disk1",
  trtype: "rdma",
  traddr: "10.0.0.2",
  trsvcid: "4420",
  status: "connected",
  device: "nvme2",
  namespaces: ["/dev/nvme2n1"],
  ...over,
});
const scan = (reason: ScanReason, genctr: number, retryInS?: number) => ({
  endpoint: "rdma 10.0.0.2:4420",
  reason,
  genctr,
  retryInS,
  now: new Date("2026-12-03T20:00:00Z"),
});

Deno.test("rowDecisions: a new connection is said with the reason and generation", () => {
  const [d, ...rest] = rowDecisions([row({})], new StateLog(), scan("log-changed", 5));
  assert.equal(rest.length, 0);
  assert.equal(d.action, "connected");
  assert.equal(
    decisionText(d),
    "connected nqn.2024-01.io.example:disk1 via rdma 10.0.0.2:4420 as nvme2 (/dev/nvme2n1) " +
      "because the log changed (generation 5)",
  );
});

Deno.test("rowDecisions: an existing controller is said once, not at every scan", () => {
  const said = new StateLog();
  const rows = [row({ status: "already connected" })];
  assert.equal(rowDecisions(rows, said, scan("start", 1))[0].action, "already-connected");
  assert.deepEqual(rowDecisions(rows, said, scan("periodic", 1)), []);
  assert.deepEqual(rowDecisions(rows, said, scan("log-changed", 2)), []);
});

Deno.test("rowDecisions: a failure is said once per change of reason, then its recovery", () => {
  const said = new StateLog();
  const failed = (reason: string) =>
    row({ status: "failed", reason, device: undefined, namespaces: undefined });
  const a = rowDecisions([failed("ECONNREFUSED")], said, scan("start", 1, 1));
  assert.equal(a.length, 1);
  assert.equal(a[0].retry_in_s, 1);
  assert.match(decisionText(a[0]), /cannot connect .* ECONNREFUSED \(retrying, next in 1 s\)/);
  assert.deepEqual(rowDecisions([failed("ECONNREFUSED")], said, scan("retry", 1, 2)), []);
  assert.equal(rowDecisions([failed("ETIMEDOUT")], said, scan("retry", 1, 4)).length, 1);
  assert.equal(rowDecisions([row({})], said, scan("retry", 1))[0].action, "connected");
});

Deno.test("backoffMs doubles from 1 s and stops at 60 s", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => backoffMs(n)), [
    1000,
    2000,
    4000,
    8000,
    16000,
    32000,
    60000,
    60000,
    60000,
  ]);
});

const HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000002";
const endpoint = (over: Partial<ConnectOptions> = {}): ConnectOptions => ({
  transport: "rdma",
  traddr: "10.0.0.2",
  trsvcid: "4420",
  nqn: "",
  hostnqn: HOSTNQN,
  ...over,
});

Deno.test("uniqueEndpoints keeps each endpoint once; the label says where and as whom", () => {
  const list = uniqueEndpoints([
    endpoint(),
    endpoint({ nrIoQueues: 2 }),
    endpoint({ trsvcid: "4421" }),
  ]);
  assert.equal(list.length, 2);
  assert.equal(
    endpointLabel(endpoint({ hostTraddr: "10.0.0.9" })),
    `rdma 10.0.0.2:4420 from 10.0.0.9 as ${HOSTNQN}`,
  );
});

Deno.test("a persistent discovery controller is recognised by address, host and keep-alive", async () => {
  await using dir = await tempDir();
  const paths = { sysfs: `${dir.path}/sys`, dev: `${dir.path}/dev`, etcNvme: `${dir.path}/etc` };
  const ctrl = async (
    name: string,
    address: string,
    kato: string,
    nqn = "nqn.2014-08.org.nvmexpress.discovery",
  ) => {
    const d = `${paths.sysfs}/class/nvme/${name}`;
    await Deno.mkdir(d, { recursive: true });
    const attrs = {
      transport: "rdma",
      address,
      subsysnqn: nqn,
      hostnqn: HOSTNQN,
      state: "live",
      kato,
    };
    for (const [k, v] of Object.entries(attrs)) await Deno.writeTextFile(`${d}/${k}`, v + "\n");
    return (await readController(paths, name))!;
  };
  const kept = await ctrl("nvme0", "traddr=10.0.0.2,trsvcid=4420", "30");
  const passing = await ctrl("nvme1", "traddr=10.0.0.2,trsvcid=4420", "0");
  const elsewhere = await ctrl("nvme2", "traddr=10.0.0.3,trsvcid=4420", "30");
  const io = await ctrl("nvme3", "traddr=10.0.0.2,trsvcid=4420", "5", "nqn.2024-01.io.example:d");
  const iface = await ctrl("nvme4", "traddr=10.0.0.2,trsvcid=4420,host_iface=eth1", "30");
  assert.equal(await isPersistentDiscoveryOf(paths, kept, endpoint()), true);
  assert.equal(await isPersistentDiscoveryOf(paths, passing, endpoint()), false, "keep-alive 0");
  assert.equal(await isPersistentDiscoveryOf(paths, elsewhere, endpoint()), false);
  assert.equal(await isPersistentDiscoveryOf(paths, io, endpoint()), false);
  assert.equal(
    await isPersistentDiscoveryOf(paths, kept, endpoint({ hostnqn: "nqn.x:other" })),
    false,
  );
  assert.equal(await isPersistentDiscoveryOf(paths, iface, endpoint({ hostIface: "eth1" })), true);
  assert.equal(await isPersistentDiscoveryOf(paths, kept, endpoint({ hostIface: "eth1" })), false);
});

Deno.test("status: log reads, connects, failures and the stop are kept per endpoint", () => {
  const ep = "rdma 10.0.0.2:4420";
  const book = new StatusBook([ep], new Date("2026-12-03T20:00:00Z"));
  book.decided({ time: "t0", action: "unreachable", endpoint: ep, error: "ECONNREFUSED" });
  let s = book.snapshot({ scans: 1, uevents: 0 });
  assert.equal(s.endpoints[0].state, "unreachable");
  book.read(ep, { genctr: 4, reason: "log-changed", controller: "nvme0" });
  const [d] = rowDecisions([row({})], new StateLog(), scan("log-changed", 4));
  book.decided({ ...d, endpoint: ep });
  book.decided({ time: "t2", action: "failed", endpoint: ep, error: "x" });
  book.decided({ time: "t3", action: "stopped", error: "SIGTERM received" });
  s = book.snapshot({ scans: 3, uevents: 7 });
  assert.deepEqual(
    { ...s.endpoints[0], read_at: undefined, changed_at: undefined },
    {
      endpoint: ep,
      state: "following",
      discovery_controller: "nvme0",
      genctr: 4,
      read_at: undefined,
      changed_at: undefined,
      reason: "log-changed",
    },
  );
  // The first read is a change; a read of the same generation is not, a new one is.
  const changed = s.endpoints[0].changed_at;
  assert.equal(changed, s.endpoints[0].read_at);
  book.read(ep, { genctr: 4, reason: "periodic", controller: "nvme0" });
  assert.equal(book.snapshot({ scans: 4, uevents: 7 }).endpoints[0].changed_at, changed);
  assert.equal(s.connects, 1);
  assert.equal(s.connected.length, 1);
  assert.equal(s.connected[0].device, "nvme2");
  assert.equal(s.failures, 1);
  assert.equal(s.stopped, "SIGTERM received");
  assert.equal(s.scans, 3);
  const text = statusText({ status: s, running: false });
  assert.match(
    text,
    /^agent not running \(last run pid \d+, started 2026-12-03T20:00:00.000Z, SIGTERM/,
  );
  assert.match(text, /rdma 10\.0\.0\.2:4420: following through nvme0, generation 4/);
  assert.match(text, /connected nqn\.2024-01\.io\.example:disk1 as nvme2 at .* \(generation 4\)/);
});

Deno.test("a referral this host can reach is followed; another transport or a non-IP one is not", () => {
  const entry = (over: Partial<DiscoveryLogEntry>): DiscoveryLogEntry => ({
    trtype: 1, // rdma
    adrfam: 1,
    subtype: 1,
    treq: 0,
    portid: 1,
    cntlid: 0xffff,
    asqsz: 32,
    eflags: 0,
    trsvcid: "4420",
    subnqn: "nqn.2014-08.org.nvmexpress.discovery",
    traddr: "10.0.0.3",
    ...over,
  } as DiscoveryLogEntry);
  assert.equal(unusableEntry(entry({}), endpoint()), undefined);
  assert.match(unusableEntry(entry({ trtype: 3 }), endpoint()) ?? "", /transport tcp differs/);
  assert.match(unusableEntry(entry({ adrfam: 3, traddr: "x" }), endpoint()) ?? "", /not an IP/);
  const d = decisionText({
    time: "t",
    action: "following",
    endpoint: "rdma 10.0.0.3:4420",
    discovery_controller: "nvme5",
    made: true,
    referred_by: "rdma 10.0.0.2:4420",
  });
  assert.equal(
    d,
    "following rdma 10.0.0.3:4420 through nvme5 (a persistent discovery controller it made; " +
      "a referral of rdma 10.0.0.2:4420)",
  );
});
