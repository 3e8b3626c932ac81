import assert from "node:assert/strict";
import { topView } from "../../src/metrics/top_view.ts";
import { block, fam, HEAD, hostPaths, NQN, PATH1, PATH2 } from "./metrics_top_fixtures.ts";

const at = { seconds: 2, host: "h1", time: new Date("2026-01-02T03:04:05Z") };
const zero = { rios: 0, rbytes: 0, rsec: 0, wios: 0, wbytes: 0, wsec: 0 };

Deno.test("top view: rates are counter increases over the interval, latency is Δseconds/Δios", () => {
  const prev = [...hostPaths("live", "optimized"), ...block([[HEAD, zero]])];
  const cur = [
    ...hostPaths("live", "optimized"),
    ...block([[HEAD, {
      rios: 200,
      rbytes: 4e6,
      rsec: 0.4,
      wios: 100,
      wbytes: 2e6,
      wsec: 0.2,
      inflight: 3,
    }]]),
  ];
  const v = topView(prev, cur, at);
  assert.equal(v.interval_seconds, 2);
  const head = v.subsystems[0].namespaces[0];
  assert.equal(head.device, "nvme1n1");
  assert.equal(head.read_iops, 100);
  assert.equal(head.write_iops, 50);
  assert.equal(head.read_bytes_per_second, 2e6);
  assert.equal(head.write_bytes_per_second, 1e6);
  assert.ok(Math.abs(head.latency_seconds! - 0.002) < 1e-12, String(head.latency_seconds));
  assert.equal(head.in_flight, 3);
});

Deno.test("top view: the first collection has no rates, and no I/O gives no latency", () => {
  const cur = [...hostPaths("live", "optimized"), ...block([[HEAD, zero]])];
  const first = topView(undefined, cur, at).subsystems[0].namespaces[0];
  assert.equal(first.read_iops, null);
  assert.equal(first.latency_seconds, null);
  const idle = topView(cur, cur, at).subsystems[0].namespaces[0];
  assert.equal(idle.read_iops, 0);
  assert.equal(idle.latency_seconds, null);
});

Deno.test("top view: a counter reset counts from zero and never gives a negative rate", () => {
  const prev = block([[HEAD, { ...zero, rios: 1_000_000, rbytes: 8e9, rsec: 500 }]]);
  const cur = block([[HEAD, { ...zero, rios: 40, rbytes: 4e5, rsec: 0.04 }]]);
  const v = topView(prev, cur, at);
  // A head without nvmeof_subsystem_info or path families still makes its subsystem's row.
  const head = v.subsystems[0].namespaces[0];
  assert.equal(head.read_iops, 20);
  assert.equal(head.read_bytes_per_second, 2e5);
  assert.ok(Math.abs(head.latency_seconds! - 0.001) < 1e-12);
});

Deno.test("top view: a subsystem's paths, their state, ANA state and path devices' I/O", () => {
  const prev = [...hostPaths("live", "optimized"), ...block([[PATH1, zero], [PATH2, zero]])];
  const cur = [
    ...hostPaths("connecting", "inaccessible"),
    ...block([[PATH1, { ...zero, rios: 10 }], [PATH2, zero]]),
  ];
  const v = topView(prev, cur, at);
  assert.equal(v.subsystems.length, 1);
  const s = v.subsystems[0];
  assert.deepEqual(
    [s.subsystem_nqn, s.subsystem, s.iopolicy, s.paths_live, s.paths_total],
    [NQN, "nvme-subsys1", "round-robin", 1, 2],
  );
  assert.deepEqual(s.paths.map((p) => [p.controller, p.transport, p.address, p.state]), [
    ["nvme1", "rdma", "10.77.0.1:4420", "live"],
    ["nvme2", "tcp", "[fd00::1]:4421", "connecting"],
  ]);
  assert.deepEqual(s.paths[1].ana, [{ nsid: "1", state: "inaccessible" }]);
  assert.deepEqual(s.paths.map((p) => p.devices.map((d) => [d.device, d.read_iops])), [
    [["nvme1c1n1", 5]],
    [["nvme1c2n1", 0]],
  ]);
  assert.deepEqual(s.namespaces, [], "path devices are not namespace heads");
  const before = topView(undefined, prev, at).subsystems[0];
  assert.deepEqual(before.paths.map((p) => p.state), ["live", "live"]);
  assert.equal(before.paths_live, 2);
});

Deno.test("top view: only RDMA hardware counters that moved, and no traffic counters", () => {
  const hw = (retry: number, seq: number, pkts: number) =>
    fam("nvmeof_rdma_hw_stats_total", "counter", [
      [{ device: "rxe0", port: "1", counter: "retry_exceeded_err" }, retry],
      [{ device: "rxe0", port: "1", counter: "rcvd_seq_err" }, seq],
      [{ device: "rxe0", port: "1", counter: "sent_pkts" }, pkts],
      [{ device: "mlx5_0", port: "1", counter: "out_of_sequence" }, 7],
    ]);
  const v = topView([hw(2, 5, 100)], [hw(6, 5, 900)], at);
  assert.deepEqual(v.rdma_errors, [
    { device: "rxe0", port: "1", counter: "retry_exceeded_err", increase: 4, per_second: 2 },
  ]);
  assert.deepEqual(topView(undefined, [hw(6, 5, 900)], at).rdma_errors, [], "no previous");
});

Deno.test("top view: target ports with their hosts, and target namespaces' I/O", () => {
  const target = (rios: number) => [
    fam("nvmeof_target_port_info", "gauge", [
      [{ port: "2", trtype: "tcp", adrfam: "ipv4", traddr: "10.77.0.1", trsvcid: "4421" }, 1],
      [{ port: "1", trtype: "rdma", adrfam: "ipv4", traddr: "10.77.0.1", trsvcid: "4420" }, 1],
    ]),
    fam("nvmeof_target_port_listening", "gauge", [[{ port: "1" }, 1], [{ port: "2" }, 0]]),
    fam("nvmeof_target_port_connections", "gauge", [[{ port: "1" }, 6], [{ port: "2" }, 0]]),
    fam("nvmeof_target_port_subsystems", "gauge", [[{ port: "1" }, 1]]),
    fam("nvmeof_target_port_peer_connections", "gauge", [
      [{ port: "1", remote_address: "10.77.0.3" }, 2],
      [{ port: "1", remote_address: "10.77.0.2" }, 4],
    ]),
    fam("nvmeof_target_namespace_enabled", "gauge", [
      [{ subsystem_nqn: NQN, nsid: "1", device: "/dev/nullb0" }, 1],
    ]),
    ...block([[{ device: "nullb0", role: "target", subsystem_nqn: NQN, nsid: "1" }, {
      ...zero,
      rios,
    }]]),
  ];
  const v = topView(target(0), target(300), at);
  assert.deepEqual(
    v.target.ports.map((p) => [p.port, p.trtype, p.address, p.listening, p.connections]),
    [["1", "rdma", "10.77.0.1:4420", true, 6], ["2", "tcp", "10.77.0.1:4421", false, 0]],
  );
  assert.deepEqual(v.target.ports[0].hosts, [
    { remote_address: "10.77.0.2", connections: 4 },
    { remote_address: "10.77.0.3", connections: 2 },
  ]);
  assert.deepEqual(v.target.ports[1].hosts, []);
  assert.equal(v.target.ports[1].subsystems, null, "not exported: unknown, not 0");
  assert.deepEqual(v.target.namespaces.map((n) => [n.device, n.nsid, n.read_iops]), [
    ["nullb0", "1", 150],
  ]);
  assert.deepEqual(v.subsystems, [], "a target namespace is no host subsystem");
});

Deno.test("top view: collectors that failed are named", () => {
  const ok = fam("nvmeof_scrape_collector_success", "gauge", [
    [{ collector: "host" }, 1],
    [{ collector: "rdma" }, 0],
    [{ collector: "block" }, 1],
  ]);
  assert.deepEqual(topView(undefined, [ok], at).failed_collectors, ["rdma"]);
});

/**
 * A compute node with hundreds of paths: a view's work grows with its devices, not their square.
 * The same view at 32 and 256 paths (each a controller of its own subsystem, with its device and
 * a head) over samples whose labels count every read; 8× the paths may read at most 10× as much
 * (a lookup that scans every sample per device reads 64× as much). Counting, not timing.
 */
Deno.test("top view: a view of 8x the paths reads about 8x as many labels, not 64x", () => {
  const labelReads = (n: number) => {
    const count = { reads: 0 };
    const counted = (families: ReturnType<typeof block>) =>
      families.map((f) => ({
        ...f,
        samples: f.samples.map((s) => ({
          value: s.value,
          labels: new Proxy(s.labels, {
            get(t, k, r) {
              count.reads++;
              return Reflect.get(t, k, r);
            },
            ownKeys(t) {
              count.reads++;
              return Reflect.ownKeys(t);
            },
          }),
        })),
      }));
    const nqn = (i: number) => `${NQN}-${i}`;
    const collection = () =>
      counted([
        fam(
          "nvmeof_path_info",
          "gauge",
          Array.from({ length: n }, (_, i) => [{
            controller: `nvme${i}`,
            subsystem_nqn: nqn(i),
            transport: "rdma",
            traddr: "10.78.0.1",
            trsvcid: "4420",
          }, 1]),
        ),
        ...block(
          Array.from({ length: n }, (_, i) => [
            [{ device: `nvme${i}n1`, role: "head", subsystem_nqn: nqn(i), nsid: "1" }, zero],
            [{
              device: `nvme${i}c${i}n1`,
              role: "path",
              subsystem_nqn: nqn(i),
              nsid: "1",
              controller: `nvme${i}`,
            }, zero],
          ]).flat() as Parameters<typeof block>[0],
        ),
      ]);
    const v = topView(collection(), collection(), at);
    assert.equal(v.subsystems.length, n);
    assert.ok(v.subsystems.every((s) => s.paths.length === 1 && s.paths[0].devices.length === 1));
    return count.reads;
  };
  const small = labelReads(32);
  const big = labelReads(256);
  assert.ok(big <= small * 10, `32 paths: ${small} label reads, 256 paths: ${big}`);
});
