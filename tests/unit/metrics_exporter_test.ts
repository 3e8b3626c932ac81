import assert from "node:assert/strict";
import { SharedCollection } from "../../src/metrics/exporter.ts";
import type { MetricFamily } from "../../src/metrics/family.ts";
import { parseHostPort } from "../../src/net/address.ts";

function pathState(states: Record<string, string>): MetricFamily[] {
  return [{
    name: "nvmeof_path_state",
    type: "gauge",
    help: "h",
    samples: Object.entries(states).flatMap(([controller, state]) => [
      { labels: { controller, state }, value: 1 },
      { labels: { controller, state: state === "live" ? "connecting" : "live" }, value: 0 },
    ]),
  }];
}

Deno.test("exporter: concurrent scrapes share one collection; each state change of a path is counted", async () => {
  const seen = [
    { nvme1: "live", nvme2: "live" },
    { nvme1: "connecting", nvme2: "live" },
    { nvme1: "live", nvme2: "live" },
  ];
  let calls = 0;
  const shared = new SharedCollection(async () => {
    await new Promise((r) => setTimeout(r, 20));
    return pathState(seen[Math.min(calls++, seen.length - 1)]);
  }, 0);
  const burst = await Promise.all(Array.from({ length: 20 }, () => shared.scrape()));
  assert.equal(calls, 1);
  assert.equal(new Set(burst).size, 1);
  assert.match(burst[0], /^nvmeof_path_state_changes_total\{controller="nvme1"\} 0$/m);
  await shared.scrape();
  const third = await shared.scrape();
  assert.equal(shared.collections, 3);
  assert.match(third, /^nvmeof_path_state_changes_total\{controller="nvme1"\} 2$/m);
  assert.match(third, /^nvmeof_path_state_changes_total\{controller="nvme2"\} 0$/m);
  assert.match(third, /^nvmeof_scrape_collections_total 3$/m);
});

Deno.test("exporter: a collection is reused within the cache interval", async () => {
  let calls = 0;
  const shared = new SharedCollection(
    () => Promise.resolve(pathState({ nvme1: `s${calls++}` })),
    60_000,
  );
  await shared.scrape();
  await shared.scrape();
  assert.equal(calls, 1);
});

Deno.test("exporter: --listen takes ADDR:PORT with an IPv4 or bracketed IPv6 literal", () => {
  assert.deepEqual(parseHostPort("127.0.0.1:9723"), { address: "127.0.0.1", port: 9723 });
  assert.deepEqual(parseHostPort("[::1]:0"), { address: "::1", port: 0 });
  for (const bad of ["localhost:9723", "127.0.0.1", "::1:9723", "1.2.3.4:65536", "[1.2.3.4]:1"]) {
    assert.equal(parseHostPort(bad), undefined, bad);
  }
});
