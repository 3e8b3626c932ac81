/**
 * The agent's families (collector `agent`) from a state file as `nvmeof agent` writes it: none
 * without one; up while its writer runs; each endpoint's state, generation and times; the counts.
 */
import assert from "node:assert/strict";
import { collectAgent } from "../../src/metrics/agent.ts";
import { collectFamilies } from "../../src/metrics/collect.ts";
import type { AgentStatus } from "../../src/agent/status.ts";
import type { MetricFamily } from "../../src/metrics/family.ts";
import { renderExposition } from "../../src/metrics/exposition.ts";
import { tempDir } from "../helpers.ts";

function state(pid: number, more: Partial<AgentStatus> = {}): AgentStatus {
  return {
    pid,
    started: "2026-12-04T10:00:00.000Z",
    updated: "2026-12-04T10:05:00.000Z",
    scans: 12,
    uevents: 40,
    failures: 3,
    connects: 5,
    endpoints: [
      {
        endpoint: "rdma 10.0.0.2:4420",
        state: "following",
        discovery_controller: "nvme0",
        genctr: 17,
        read_at: "2026-12-04T10:04:00.000Z",
        changed_at: "2026-12-04T10:03:00.000Z",
        reason: "log-changed",
      },
      { endpoint: "rdma 10.0.1.2:4420", state: "unreachable", error: "refused" },
    ],
    connected: [{
      time: "2026-12-04T10:03:01.000Z",
      endpoint: "rdma 10.0.0.2:4420",
      subnqn: "nqn.2026-12.io.example:a",
      trtype: "rdma",
      traddr: "10.0.0.2",
      trsvcid: "4420",
      device: "nvme1",
    }],
    ...more,
  };
}

function samples(fs: MetricFamily[], name: string): string[] {
  const f = fs.find((x) => x.name === name);
  return f ? f.samples.map((s) => `${JSON.stringify(s.labels)} ${s.value}`) : [];
}

Deno.test("agent families: none without a state file; the collector still succeeds", async () => {
  await using d = await tempDir();
  assert.deepEqual(await collectAgent(d.path), []);
  const all = await collectFamilies({
    sysfs: d.path,
    proc: d.path,
    dev: d.path,
    configfs: `${d.path}/nvmet`,
    runDir: d.path,
  });
  assert.deepEqual(
    samples(all, "nvmeof_scrape_collector_success").at(-1),
    '{"collector":"agent"} 1',
  );
});

Deno.test("agent families: a running agent's endpoints, generation, times and counts", async () => {
  await using d = await tempDir();
  // A process whose command line names the agent, as `nvmeof agent`'s does.
  const child = new Deno.Command("sh", { args: ["-c", "sleep 30", "agent"] }).spawn();
  try {
    await Deno.writeTextFile(`${d.path}/agent.json`, JSON.stringify(state(child.pid)));
    const fs = await collectAgent(d.path);
    assert.deepEqual(samples(fs, "nvmeof_agent_up"), ["{} 1"]);
    assert.deepEqual(samples(fs, "nvmeof_agent_endpoint_following"), [
      '{"endpoint":"rdma 10.0.0.2:4420"} 1',
      '{"endpoint":"rdma 10.0.1.2:4420"} 0',
    ]);
    assert.deepEqual(samples(fs, "nvmeof_agent_endpoint_generation"), [
      '{"endpoint":"rdma 10.0.0.2:4420"} 17',
    ]);
    assert.deepEqual(samples(fs, "nvmeof_agent_endpoint_last_read_timestamp_seconds"), [
      `{"endpoint":"rdma 10.0.0.2:4420"} ${Date.parse("2026-12-04T10:04:00Z") / 1000}`,
    ]);
    assert.deepEqual(samples(fs, "nvmeof_agent_endpoint_last_change_timestamp_seconds"), [
      `{"endpoint":"rdma 10.0.0.2:4420"} ${Date.parse("2026-12-04T10:03:00Z") / 1000}`,
    ]);
    assert.deepEqual(samples(fs, "nvmeof_agent_connected_paths"), ["{} 1"]);
    assert.deepEqual(samples(fs, "nvmeof_agent_connects_total"), ["{} 5"]);
    assert.deepEqual(samples(fs, "nvmeof_agent_connect_failures_total"), ["{} 3"]);
    assert.deepEqual(samples(fs, "nvmeof_agent_scans_total"), ["{} 12"]);
    assert.deepEqual(samples(fs, "nvmeof_agent_uevents_total"), ["{} 40"]);
    assert.match(renderExposition(fs), /^# TYPE nvmeof_agent_scans_total counter$/m);
  } finally {
    child.kill();
    await child.status;
  }
});

Deno.test("agent families: a stopped or dead agent is down; an older state counts its connected", async () => {
  await using d = await tempDir();
  const stopped = state(Deno.pid, { stopped: "SIGTERM received" });
  await Deno.writeTextFile(`${d.path}/agent.json`, JSON.stringify(stopped));
  assert.deepEqual(samples(await collectAgent(d.path), "nvmeof_agent_up"), ["{} 0"]);
  const old = state(2 ** 22 + 7, { connects: undefined });
  await Deno.writeTextFile(`${d.path}/agent.json`, JSON.stringify(old));
  const fs = await collectAgent(d.path);
  assert.deepEqual(samples(fs, "nvmeof_agent_up"), ["{} 0"]);
  assert.deepEqual(samples(fs, "nvmeof_agent_connects_total"), ["{} 1"]);
});
