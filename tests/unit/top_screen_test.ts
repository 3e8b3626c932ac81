import assert from "node:assert/strict";
import { topView } from "../../src/metrics/top_view.ts";
import { topScreen } from "../../src/output/top_screen.ts";
import { block, fam, hostPaths, NQN, PATH1, PATH2 } from "./metrics_top_fixtures.ts";

const at = { seconds: 1, host: "compute-1", time: new Date("2026-01-02T03:04:05Z") };
const zero = { rios: 0, rbytes: 0, rsec: 0, wios: 0, wbytes: 0, wsec: 0 };
// deno-lint-ignore no-control-regex
const ESC = /\x1b\[/;

/** A host with a subsystem over two paths, both doing I/O, and a storage server's port. */
function busyView() {
  const target = fam("nvmeof_target_port_info", "gauge", [
    [{ port: "1", trtype: "rdma", adrfam: "ipv4", traddr: "10.77.0.1", trsvcid: "4420" }, 1],
  ]);
  const peers = fam("nvmeof_target_port_peer_connections", "gauge", [
    [{ port: "1", remote_address: "10.77.0.2" }, 4],
  ]);
  const prev = [...hostPaths("live", "optimized"), ...block([[PATH1, zero], [PATH2, zero]])];
  const cur = [
    ...hostPaths("live", "non-optimized"),
    ...block([
      [PATH1, { ...zero, rios: 1234, rbytes: 5e6, rsec: 0.6 }],
      [PATH2, { ...zero, wios: 77, wbytes: 3e5, wsec: 0.07 }],
    ]),
    target,
    peers,
  ];
  return topView(prev, cur, at);
}

Deno.test("top screen: a subsystem with two paths shows both and their I/O", () => {
  const lines = topScreen(busyView(), { width: 120, height: 50, color: false });
  const text = lines.join("\n");
  assert.match(lines[0], /nvmeof top {2}compute-1 {2}03:04:05 UTC {2}interval 1\.0 s/);
  assert.ok(text.includes(`${NQN}  paths 2/2 live  iopolicy round-robin`), text);
  assert.match(text, /nvme1 rdma 10\.77\.0\.1:4420 live {2}ns1 optimized/);
  assert.match(text, /nvme2 tcp \[fd00::1\]:4421 live {2}ns1 non-optimized/);
  const p1 = lines.find((l) => l.trim().startsWith("nvme1c1n1"))!.trim().split(/\s+/);
  assert.deepEqual(p1, ["nvme1c1n1", "1234", "0", "5.00", "0", "0.49", "-"]);
  const p2 = lines.find((l) => l.trim().startsWith("nvme1c2n1"))!.trim().split(/\s+/);
  assert.deepEqual(p2, ["nvme1c2n1", "0", "77.0", "0", "0.30", "0.91", "-"]);
  assert.match(text, /TARGET PORTS/);
  assert.match(text, /1 rdma 10\.77\.0\.1:4420/);
  assert.match(text, /host 10\.77\.0\.2 {2}4 connections/);
  assert.doesNotMatch(text, ESC, "no colour unless asked");
});

Deno.test("top screen: every line fits the width and the screen fits the height", () => {
  const view = busyView();
  for (const [width, height] of [[40, 8], [80, 24], [30, 3], [200, 100]]) {
    const lines = topScreen(view, { width, height, color: false });
    assert.ok(lines.length <= height, `${lines.length} lines for ${height} rows`);
    for (const l of lines) assert.ok([...l].length <= width, `${width}: '${l}'`);
  }
  const short = topScreen(view, { width: 80, height: 5, color: false });
  assert.match(short.at(-1)!, /^… \d+ more lines/);
});

Deno.test("top screen: colour only when asked, and cutting counts no escape", () => {
  const plain = topScreen(busyView(), { width: 50, height: 40, color: false });
  const painted = topScreen(busyView(), { width: 50, height: 40, color: true });
  assert.ok(painted.some((l) => ESC.test(l)));
  // deno-lint-ignore no-control-regex
  assert.deepEqual(painted.map((l) => l.replace(/\x1b\[[0-9;]*m/g, "")), plain);
});

Deno.test("top screen: an empty host says there is nothing to show", () => {
  const lines = topScreen(topView(undefined, [], at), { width: 100, height: 10, color: false });
  assert.match(lines[0], /first sample/);
  assert.match(lines.join("\n"), /nothing to show/);
});
