/**
 * `nvmeof metrics` as a user runs it: against the stand-in host of tests/metrics_standin.ts
 * (fabrics paths, an rxe port, an nvmet tree in a plain directory), on this machine's own trees,
 * and into a textfile for node_exporter; every exposition passes `promtool check metrics`.
 */
import assert from "node:assert/strict";
import { nvmeof, tempDir } from "../helpers.ts";
import { metricsTree } from "../metrics_standin.ts";
import { assertPromtoolAccepts, promtoolMissing } from "../promtool.ts";

/** The stand-in host's environment and the flags that point nvmeof at its configfs. */
async function standinHost(root: string): Promise<{ env: Record<string, string>; args: string[] }> {
  const { env } = await metricsTree(root);
  const cmIds = `${root}/cm_ids.json`;
  await Deno.writeTextFile(
    cmIds,
    JSON.stringify([{
      device: "rxe0",
      port: 1,
      state: "LISTEN",
      ps: 0x106,
      kernName: "nvmet_rdma",
      src: { address: "10.77.0.1", port: 4421 },
    }]),
  );
  return { env: { ...env, NVMEOF_STANDIN_CM_IDS: cmIds }, args: ["--configfs", `${root}/config`] };
}

Deno.test("metrics prints every collector's families from the stand-in host, and promtool accepts them", async () => {
  await using dir = await tempDir();
  const { env, args } = await standinHost(dir.path);
  const r = await nvmeof(["metrics", ...args], { env, standin: true });
  assert.equal(r.code, 0, r.stderr);
  for (
    const line of [
      /^nvmeof_build_info\{version="[^"]+"\} 1$/m,
      /^nvmeof_scrape_collector_success\{collector="target"\} 1$/m,
      /^nvmeof_path_up\{controller="nvme2",subsystem_nqn="[^"]+"\} 0$/m,
      /^nvmeof_block_read_ios_total\{device="nvme1n1",role="head",.*\} 10$/m,
      /^nvmeof_rdma_hw_stats_total\{device="rxe0",port="1",counter="rcvd_seq_err"\} 3$/m,
      /^nvmeof_target_port_listening\{port="2"\} 1$/m,
      /^nvmeof_target_port_connections\{port="1"\} 2$/m,
      /^nvmeof_target_subsystem_namespaces\{subsystem_nqn=".*odd \\"quoted\\" back\\\\slash two words\\nline"\} 1$/m,
    ]
  ) assert.match(r.stdout, line);
  const why = promtoolMissing();
  if (why) console.log(`promtool check skipped: ${why}`);
  else await assertPromtoolAccepts(r.stdout);
});

Deno.test("metrics on a machine without fabrics, RDMA or nvmet prints only the meta families, exit 0", async () => {
  await using dir = await tempDir();
  const r = await nvmeof(["metrics", "--configfs", `${dir.path}/config`], {
    env: { NVMEOF_SYSFS: dir.path, NVMEOF_PROC: dir.path, NVMEOF_DEV: dir.path },
  });
  assert.equal(r.code, 0, r.stderr);
  const families = [...r.stdout.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
  assert.deepEqual(families, [
    "nvmeof_build_info",
    "nvmeof_scrape_collector_success",
    "nvmeof_scrape_duration_seconds",
  ]);
  const why = promtoolMissing();
  if (why) console.log(`promtool check skipped: ${why}`);
  else await assertPromtoolAccepts(r.stdout);
});

Deno.test("metrics -o json gives the families as data with the contract's version first", async () => {
  await using dir = await tempDir();
  const { env, args } = await standinHost(dir.path);
  const r = await nvmeof(["metrics", "-o", "json", ...args], { env, standin: true });
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(Object.keys(j)[0], "nvmeof_json");
  const info = j.families.find((f: { name: string }) => f.name === "nvmeof_rdma_port_info");
  assert.deepEqual(info, {
    name: "nvmeof_rdma_port_info",
    type: "gauge",
    help: info.help,
    samples: [{
      labels: { device: "rxe0", port: "1", link_layer: "Ethernet", netdev: "eth1" },
      value: 1,
    }],
  });
});

Deno.test("metrics --textfile replaces the file atomically with mode 0644 and prints nothing of it", async () => {
  await using dir = await tempDir();
  const { env, args } = await standinHost(dir.path);
  const file = `${dir.path}/textfile/nvmeof.prom`;
  await Deno.mkdir(`${dir.path}/textfile`);
  await Deno.writeTextFile(file, "old\n");
  const r = await nvmeof(["metrics", "--textfile", file, ...args], { env, standin: true });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /^# HELP/m);
  const text = await Deno.readTextFile(file);
  assert.match(text, /^# HELP nvmeof_build_info /);
  assert.match(text, /^nvmeof_path_info\{/m);
  assert.equal((await Deno.stat(file)).mode! & 0o777, 0o644);
  // Nothing left behind: the temporary file was renamed over the old one.
  assert.deepEqual([...Deno.readDirSync(`${dir.path}/textfile`)].map((e) => e.name), [
    "nvmeof.prom",
  ]);
  const missing = await nvmeof(["metrics", "--textfile", `${dir.path}/nope/x.prom`, ...args], {
    env,
    standin: true,
  });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /Cannot write the metrics to '.*nope\/x\.prom'.*No such file/);
});

Deno.test("metrics and top take each collector's time limit: 0 ms leaves every collector's families out, a bad value is a usage error", async () => {
  await using dir = await tempDir();
  const { env, args } = await standinHost(dir.path);
  const r = await nvmeof(["metrics", "--collector-timeout-ms", "0", ...args], {
    env,
    standin: true,
  });
  assert.equal(r.code, 0, r.stderr);
  for (const c of ["host", "block", "rdma", "target"]) {
    assert.match(
      r.stdout,
      new RegExp(`^nvmeof_scrape_collector_success\\{collector="${c}"\\} 0$`, "m"),
    );
  }
  assert.doesNotMatch(r.stdout, /^nvmeof_path_up/m);
  assert.match(r.stderr, /longer than its limit of 0 ms/);
  const top = await nvmeof(
    [
      "top",
      "-o",
      "json",
      "--count",
      "1",
      "--interval",
      "0.1",
      "--collector-timeout-ms",
      "0",
      ...args,
    ],
    { env, standin: true },
  );
  assert.equal(top.code, 0, top.stderr);
  const view = JSON.parse(top.stdout.trim().split("\n")[0]);
  assert.deepEqual(view.failed_collectors, ["agent", "block", "host", "rdma", "target"]);
  const bad = await nvmeof(["metrics", "--collector-timeout-ms", "5s", ...args], {
    env,
    standin: true,
  });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Invalid --collector-timeout-ms '5s': expected milliseconds/);
});
