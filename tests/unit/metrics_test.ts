import assert from "node:assert/strict";
import { collectFamilies, CollectorFailureLog } from "../../src/metrics/collect.ts";
import {
  escapeHelp,
  escapeLabelValue,
  formatValue,
  renderExposition,
} from "../../src/metrics/exposition.ts";
import type { MetricFamily } from "../../src/metrics/family.ts";
import { parseBlockStat } from "../../src/host/block_stat.ts";
import { rateBytesPerSecond, roceActiveMtu, stateName } from "../../src/metrics/rdma.ts";
import { CreatedControllers } from "../../src/metrics/target.ts";
import type { PeerSources } from "../../src/target/connected.ts";
import { tempDir } from "../helpers.ts";
import { HOST_A, HOST_B, metricsTree, ODD_NQN, PLAIN_NQN } from "../metrics_standin.ts";
import { MP_NQN } from "../sysfs_standin.ts";

/** The given RDMA CM ids; two TCP queues of 10.77.0.2 on 10.77.0.1:4420. */
function peers(cmIds: PeerSources["cmIds"] = () => []): PeerSources {
  return {
    cmIds,
    tcp: () => [
      { local: { address: "10.77.0.1", port: 4420 }, remote: { address: "10.77.0.2", port: 1 } },
      { local: { address: "10.77.0.1", port: 4420 }, remote: { address: "10.77.0.2", port: 2 } },
    ],
    hostsOf: () => [],
  };
}

async function collect(): Promise<{ families: MetricFamily[] } & AsyncDisposable> {
  const d = await tempDir();
  const { env, nvmet } = await metricsTree(d.path);
  const families = await collectFamilies({
    sysfs: env.NVMEOF_SYSFS,
    proc: env.NVMEOF_PROC,
    dev: env.NVMEOF_DEV,
    configfs: nvmet,
    peers: peers(() => [{
      device: "rxe0",
      port: 1,
      state: "LISTEN",
      ps: 0x106,
      src: { address: "10.77.0.1", port: 4421 },
    }]),
  });
  return { families, [Symbol.asyncDispose]: () => d[Symbol.asyncDispose]() };
}

/** The samples of `name` as `labels → value` lines, sorted. */
function values(families: MetricFamily[], name: string): string[] {
  const f = families.find((x) => x.name === name);
  assert.ok(f, `no family ${name}`);
  return f.samples.map((s) => `${JSON.stringify(s.labels)} ${s.value}`).sort();
}

function value(families: MetricFamily[], name: string, labels: Record<string, string>): number {
  const f = families.find((x) => x.name === name);
  assert.ok(f, `no family ${name}`);
  const s = f.samples.find((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  assert.ok(s, `no ${name} ${JSON.stringify(labels)}`);
  return s.value;
}

Deno.test("metrics: the exposition escapes label values and HELP as the text format 0.0.4 reads them", () => {
  assert.equal(escapeLabelValue('a "b" c\\d\ne'), 'a \\"b\\" c\\\\d\\ne');
  // Each character that needs it alone, and a value that needs nothing, unchanged.
  assert.deepEqual(["a\\b", 'a"b', "a\nb", "nqn.2014-08.org:x"].map(escapeLabelValue), [
    "a\\\\b",
    'a\\"b',
    "a\\nb",
    "nqn.2014-08.org:x",
  ]);
  assert.equal(escapeHelp('say "x"\\\n'), 'say "x"\\\\\\n');
  assert.deepEqual([NaN, Infinity, -Infinity, 0, 1.5, 1e21].map(formatValue), [
    "NaN",
    "+Inf",
    "-Inf",
    "0",
    "1.5",
    "1e+21",
  ]);
  const text = renderExposition([
    { name: "x_total", type: "counter", help: "h", samples: [] },
    {
      name: "y",
      type: "gauge",
      help: "two\nlines",
      samples: [{ labels: { a: "1" }, value: 2 }, { labels: {}, value: NaN }],
    },
  ]);
  assert.equal(
    text,
    "# HELP x_total h\n# TYPE x_total counter\n# HELP y two\\nlines\n# TYPE y gauge\n" +
      'y{a="1"} 2\ny NaN\n',
  );
  assert.equal(renderExposition([]), "");
  // One label set shared by two families (as a device's counters are) is written in each.
  const dev = { device: 'nvme1"n1' };
  assert.equal(
    renderExposition([
      { name: "r", type: "counter", help: "h", samples: [{ labels: dev, value: 1 }] },
      { name: "w", type: "counter", help: "h", samples: [{ labels: dev, value: 2 }] },
    ]),
    '# HELP r h\n# TYPE r counter\nr{device="nvme1\\"n1"} 1\n' +
      '# HELP w h\n# TYPE w counter\nw{device="nvme1\\"n1"} 2\n',
  );
});

Deno.test("metrics: a machine without fabrics, RDMA or nvmet yields only the meta families", async () => {
  await using d = await tempDir();
  const families = await collectFamilies({
    sysfs: d.path,
    proc: d.path,
    dev: d.path,
    configfs: `${d.path}/nvmet`,
    runDir: d.path,
  });
  assert.deepEqual(families.map((f) => f.name), [
    "nvmeof_build_info",
    "nvmeof_scrape_collector_success",
    "nvmeof_scrape_duration_seconds",
  ]);
  assert.deepEqual(values(families, "nvmeof_scrape_collector_success"), [
    '{"collector":"agent"} 1',
    '{"collector":"block"} 1',
    '{"collector":"host"} 1',
    '{"collector":"rdma"} 1',
    '{"collector":"target"} 1',
  ]);
});

Deno.test("metrics: host paths: one live, one connecting, with their ANA states and timeouts", async () => {
  await using c = await collect();
  const f = c.families;
  assert.deepEqual(values(f, "nvmeof_path_info"), [
    `{"controller":"nvme1","subsystem_nqn":"${MP_NQN}","transport":"rdma","traddr":"10.77.0.1","trsvcid":"4420","host_traddr":""} 1`,
    `{"controller":"nvme2","subsystem_nqn":"${MP_NQN}","transport":"tcp","traddr":"10.77.0.1","trsvcid":"4421","host_traddr":""} 1`,
  ]);
  assert.equal(value(f, "nvmeof_path_up", { controller: "nvme1" }), 1);
  assert.equal(value(f, "nvmeof_path_up", { controller: "nvme2" }), 0);
  assert.equal(value(f, "nvmeof_path_state", { controller: "nvme2", state: "connecting" }), 1);
  assert.equal(value(f, "nvmeof_path_state", { controller: "nvme2", state: "live" }), 0);
  const ones = (name: string) =>
    f.find((x) => x.name === name)!.samples.filter((s) => s.value === 1).map((s) => s.labels);
  assert.deepEqual(ones("nvmeof_path_state"), [
    { controller: "nvme1", state: "live" },
    { controller: "nvme2", state: "connecting" },
  ]);
  assert.deepEqual(ones("nvmeof_path_ana_state"), [
    { controller: "nvme1", nsid: "1", state: "optimized" },
    { controller: "nvme2", nsid: "1", state: "inaccessible" },
  ]);
  assert.equal(f.find((x) => x.name === "nvmeof_path_ana_state")!.samples.length, 10);
  assert.deepEqual(values(f, "nvmeof_path_ctrl_loss_timeout_seconds"), [
    '{"controller":"nvme1"} 600',
  ]);
  assert.equal(f.find((x) => x.name === "nvmeof_path_fast_io_fail_timeout_seconds"), undefined);
  assert.equal(value(f, "nvmeof_path_keep_alive_timeout_seconds", { controller: "nvme2" }), 5);
  assert.equal(value(f, "nvmeof_path_reconnect_delay_seconds", { controller: "nvme1" }), 10);
  assert.deepEqual(values(f, "nvmeof_path_io_timeout_seconds"), [
    '{"controller":"nvme2","device":"nvme1c2n1"} 2',
  ]);
  // The PCIe drive is no path.
  assert.deepEqual(values(f, "nvmeof_subsystem_info"), [
    `{"subsystem":"nvme-subsys1","subsystem_nqn":"${MP_NQN}","iopolicy":"round-robin"} 1`,
  ]);
  assert.equal(value(f, "nvmeof_subsystem_paths", { subsystem_nqn: MP_NQN }), 2);
  assert.equal(value(f, "nvmeof_subsystem_paths_live", { subsystem_nqn: MP_NQN }), 1);
});

Deno.test("metrics: block counters of the head, its paths and the target's backing device", async () => {
  await using c = await collect();
  const f = c.families;
  assert.deepEqual(values(f, "nvmeof_block_read_ios_total"), [
    `{"device":"loop7","role":"target","subsystem_nqn":"${PLAIN_NQN}","nsid":"1"} 10`,
    `{"device":"nvme1c1n1","role":"path","subsystem_nqn":"${MP_NQN}","nsid":"1","controller":"nvme1"} 10`,
    `{"device":"nvme1c2n1","role":"path","subsystem_nqn":"${MP_NQN}","nsid":"1","controller":"nvme2"} 10`,
    `{"device":"nvme1n1","role":"head","subsystem_nqn":"${MP_NQN}","nsid":"1"} 10`,
  ]);
  const head = { device: "nvme1n1" };
  assert.equal(value(f, "nvmeof_block_read_bytes_total", head), 80 * 512);
  assert.equal(value(f, "nvmeof_block_read_seconds_total", head), 0.007);
  assert.equal(value(f, "nvmeof_block_write_ios_total", head), 20);
  assert.equal(value(f, "nvmeof_block_write_bytes_total", head), 160 * 512);
  assert.equal(value(f, "nvmeof_block_write_seconds_total", head), 0.009);
  assert.equal(value(f, "nvmeof_block_in_flight", head), 3);
  assert.equal(parseBlockStat("1 2 3"), undefined);
});

Deno.test("metrics: an rxe-like port: state, rate, MTU from its netdev, every hw_counter but lifespan", async () => {
  await using c = await collect();
  const f = c.families;
  assert.deepEqual(values(f, "nvmeof_rdma_port_info"), [
    '{"device":"rxe0","port":"1","link_layer":"Ethernet","netdev":"eth1"} 1',
  ]);
  assert.equal(value(f, "nvmeof_rdma_port_state", { state: "ACTIVE" }), 1);
  assert.equal(value(f, "nvmeof_rdma_port_state", { state: "DOWN" }), 0);
  assert.equal(value(f, "nvmeof_rdma_port_phys_state", { state: "LinkUp" }), 1);
  assert.equal(value(f, "nvmeof_rdma_port_rate_bytes_per_second", { port: "1" }), 1.25e9);
  assert.equal(value(f, "nvmeof_rdma_port_active_mtu_bytes", { port: "1" }), 1024);
  assert.deepEqual(values(f, "nvmeof_rdma_hw_stats_total"), [
    '{"device":"rxe0","port":"1","counter":"duplicate_request"} 1',
    '{"device":"rxe0","port":"1","counter":"rcvd_seq_err"} 3',
  ]);
  assert.deepEqual(values(f, "nvmeof_rdma_port_stats_total"), [
    '{"device":"rxe0","port":"1","counter":"port_xmit_data"} 1234',
  ]);
  assert.equal(stateName("4: ACTIVE"), "ACTIVE");
  assert.equal(rateBytesPerSecond("2.5 Gb/sec (1X SDR)"), 312_500_000);
  assert.equal(roceActiveMtu(9000), 4096);
  assert.equal(roceActiveMtu(100), undefined);
});

Deno.test("metrics: the target's ports, subsystems, namespaces, listeners and connected hosts", async () => {
  await using c = await collect();
  const f = c.families;
  assert.deepEqual(values(f, "nvmeof_target_port_info"), [
    '{"port":"1","trtype":"tcp","adrfam":"ipv4","traddr":"10.77.0.1","trsvcid":"4420"} 1',
    '{"port":"2","trtype":"rdma","adrfam":"ipv4","traddr":"10.77.0.1","trsvcid":"4421"} 1',
  ]);
  assert.deepEqual(values(f, "nvmeof_target_port_listening"), [
    '{"port":"1"} 1',
    '{"port":"2"} 1',
  ]);
  assert.deepEqual(values(f, "nvmeof_target_port_subsystems"), [
    '{"port":"1"} 2',
    '{"port":"2"} 1',
  ]);
  assert.deepEqual(values(f, "nvmeof_target_port_connections"), [
    '{"port":"1"} 2',
    '{"port":"2"} 0',
  ]);
  assert.deepEqual(values(f, "nvmeof_target_port_peer_connections"), [
    '{"port":"1","remote_address":"10.77.0.2"} 2',
  ]);
  assert.equal(value(f, "nvmeof_target_subsystem_allow_any_host", { subsystem_nqn: PLAIN_NQN }), 1);
  assert.equal(value(f, "nvmeof_target_subsystem_allow_any_host", { subsystem_nqn: ODD_NQN }), 0);
  assert.equal(value(f, "nvmeof_target_subsystem_allowed_hosts", { subsystem_nqn: ODD_NQN }), 1);
  assert.equal(value(f, "nvmeof_target_subsystem_namespaces", { subsystem_nqn: ODD_NQN }), 1);
  assert.equal(
    value(f, "nvmeof_target_namespace_enabled", { subsystem_nqn: ODD_NQN, nsid: "2" }),
    0,
  );
  assert.equal(value(f, "nvmeof_target_ana_group_state", { port: "2", state: "optimized" }), 1);
  assert.deepEqual(values(f, "nvmeof_target_host_controllers_created_total"), [
    `{"subsystem_nqn":"${PLAIN_NQN}","host_nqn":"${HOST_A}"} 2`,
    `{"subsystem_nqn":"${PLAIN_NQN}","host_nqn":"${HOST_B}"} 1`,
  ]);
});

Deno.test("metrics: an NQN with quotes, a backslash, spaces and a newline is escaped in the exposition", async () => {
  await using c = await collect();
  const text = renderExposition(c.families);
  assert.ok(
    text.includes(
      'nvmeof_target_subsystem_namespaces{subsystem_nqn="nqn.2026-01.io.example:odd \\"quoted\\" ' +
        'back\\\\slash two words\\nline"} 1\n',
    ),
    text,
  );
  // Every line is a comment or one sample: no raw newline inside a label value.
  for (const line of text.trimEnd().split("\n")) {
    assert.match(line, /^(# (HELP|TYPE) \w+ .*|\w+(\{.*\})? \S+)$/, line);
  }
});

Deno.test("metrics: a failing collector yields success 0 and none of its families; the others stay", async () => {
  await using d = await tempDir();
  const { env, nvmet } = await metricsTree(d.path);
  const told: string[] = [];
  const families = await collectFamilies({
    onCollectorError: (name, reason) => told.push(`${name}: ${reason}`),
    sysfs: env.NVMEOF_SYSFS,
    proc: env.NVMEOF_PROC,
    dev: env.NVMEOF_DEV,
    configfs: nvmet,
    peers: {
      ...peers(),
      tcp: () => {
        throw new Error("boom");
      },
    },
  });
  assert.equal(value(families, "nvmeof_scrape_collector_success", { collector: "target" }), 0);
  assert.equal(value(families, "nvmeof_scrape_collector_success", { collector: "host" }), 1);
  assert.equal(families.some((f) => f.name.startsWith("nvmeof_target_")), false);
  assert.equal(families.some((f) => f.name === "nvmeof_path_info"), true);
  assert.deepEqual(told, ["target: boom"]);
});

Deno.test("metrics: a collector past its time limit counts as failed", async () => {
  await using d = await tempDir();
  const told: string[] = [];
  const { env, nvmet } = await metricsTree(d.path);
  const families = await collectFamilies({
    sysfs: env.NVMEOF_SYSFS,
    proc: env.NVMEOF_PROC,
    dev: env.NVMEOF_DEV,
    configfs: nvmet,
    timeoutMs: 0,
    onCollectorError: (name, reason) => told.push(`${name}: ${reason}`),
  });
  for (const collector of ["host", "block", "rdma", "target", "agent"]) {
    assert.equal(value(families, "nvmeof_scrape_collector_success", { collector }), 0);
  }
  assert.equal(families.length, 3);
  assert.equal(told.length, 5);
  assert.match(told[0], /^host: it took longer than its limit of 0 ms$/);
});

Deno.test("metrics: a collector's failure is said when it starts and when it ends, not at every collection", () => {
  const said: string[] = [];
  const log = new CollectorFailureLog((line) => said.push(line));
  log.failed("rdma", "boom");
  log.collected();
  log.failed("rdma", "boom");
  log.collected();
  log.failed("rdma", "bang");
  log.collected();
  log.collected();
  log.collected();
  assert.deepEqual(said, [
    "the rdma collector failed, its families are left out: boom",
    "the rdma collector failed, its families are left out: bang",
    "the rdma collector works again",
  ]);
});

Deno.test("metrics: the kernel log's controller count reads only what the log added, and never falls", async () => {
  await using d = await tempDir();
  const kmsg = `${d.path}/kmsg`;
  const line = (seq: number, host: string) =>
    `6,${seq},1000,-;nvmet: creating nvm controller ${seq} for subsystem ${PLAIN_NQN} for NQN ${host}.\n`;
  Deno.writeTextFileSync(
    kmsg,
    line(1, HOST_A) + "6,2,1001,-;an unrelated record\n" + line(3, HOST_A),
  );
  using created = new CreatedControllers(kmsg);
  const count = () => [...created.read()?.get(PLAIN_NQN) ?? []].map(([h, n]) => `${h} ${n}`).sort();
  assert.deepEqual(count(), [`${HOST_A} 2`]);
  // Nothing new: the same count, not the log counted twice.
  assert.deepEqual(count(), [`${HOST_A} 2`]);
  Deno.writeTextFileSync(kmsg, line(4, HOST_B), { append: true });
  assert.deepEqual(count(), [`${HOST_A} 2`, `${HOST_B} 1`]);
  // The old records leave the log (a ring buffer): what was counted stays counted.
  Deno.writeTextFileSync(kmsg, "");
  assert.deepEqual(count(), [`${HOST_A} 2`, `${HOST_B} 1`]);
});

Deno.test("metrics: no kernel log to read leaves the count unknown, not zero", () => {
  using created = new CreatedControllers("/nonexistent/kmsg");
  assert.equal(created.read(), undefined);
});
