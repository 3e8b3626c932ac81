/**
 * Planned failover's domain code (src/target/ana.ts): the state parsed with a suggestion, the port
 * and groups found in the live tree, the plan (one ana_state write per group that moves) and the
 * namespaces a move would leave with no usable path.
 */
import assert from "node:assert/strict";
import type { LiveTree } from "../../src/configfs/nvmet.ts";
import { FailureError, UsageError } from "../../src/errors.ts";
import {
  findGroups,
  findPort,
  parseAnaState,
  planAnaState,
  strandedNamespaces,
} from "../../src/target/ana.ts";

const SUB = "nqn.2026-12.io.nvmeof.test:ha";

/** Two ports exporting SUB; namespace 1 in group 1, namespace 2 in group 2. */
function tree(): LiveTree {
  const port = (id: number, name = String(id)) => ({
    name,
    id,
    attr: {},
    subsystems: [SUB],
    ana_groups: [
      { name: "1", id: 1, state: "optimized" },
      { name: "2", id: 2, state: "non-optimized" },
    ],
  });
  return {
    hosts: [],
    subsystems: [{
      nqn: SUB,
      attr: {},
      allowed_hosts: [],
      namespaces: [
        { nsid: 1, enable: true, attr: {}, ana_grpid: "1" },
        { nsid: 2, enable: true, attr: {}, ana_grpid: "2" },
      ],
    }],
    ports: [port(1), port(2, "0x2")],
  } as unknown as LiveTree;
}

Deno.test("parseAnaState takes nvmet's names and suggests the nearest for a misspelling", () => {
  assert.equal(parseAnaState("persistent-loss"), "persistent-loss");
  assert.throws(() => parseAnaState("optimised"), (e) => {
    assert.ok(e instanceof UsageError);
    assert.match(e.message, /'optimised' is not an ANA state \(did you mean 'optimized'\?\)/);
    return true;
  });
  assert.throws(() => parseAnaState("NON_OPTIMIZED"), /did you mean 'non-optimized'/);
  assert.throws(() => parseAnaState("down"), (e) => {
    assert.doesNotMatch((e as Error).message, /did you mean/);
    return true;
  });
});

Deno.test("findPort finds a port by id or by directory name, and lists the ports otherwise", () => {
  const live = tree();
  assert.equal(findPort(live, "1").name, "1");
  assert.equal(findPort(live, "2").name, "0x2");
  assert.equal(findPort(live, "0x2").id, 2);
  assert.throws(() => findPort(live, "3"), (e) => {
    assert.ok(e instanceof FailureError);
    assert.match(e.message, /Port '3' does not exist in nvmet \(did you mean '[12]'\?\)/);
    assert.match(e.hint!, /Ports: 1, 2/);
    return true;
  });
});

Deno.test("findGroups: every group by default, the named ones once each, an unknown one refused", () => {
  const p = tree().ports[0];
  assert.deepEqual(findGroups(p, []).map((g) => g.id), [1, 2]);
  assert.deepEqual(findGroups(p, ["2", "2"]).map((g) => g.id), [2]);
  assert.throws(() => findGroups(p, ["5"]), /Port 1 has no ANA group 5/);
  assert.throws(() => findGroups(p, ["x"]), UsageError);
  assert.throws(() => findGroups({ ...p, ana_groups: undefined }, []), /has no ANA groups/);
});

Deno.test("planAnaState writes only the groups that move, by the port's directory name", () => {
  const p = tree().ports[1];
  assert.deepEqual(planAnaState(p, p.ana_groups!, "optimized"), [
    {
      op: "write",
      path: "ports/0x2/ana_groups/2/ana_state",
      value: "optimized",
      old: "non-optimized",
    },
  ]);
  assert.deepEqual(planAnaState(p, [], "inaccessible"), []);
});

Deno.test("strandedNamespaces: a namespace stranded only when no other port has its group usable", () => {
  const live = tree();
  const [p1, p2] = live.ports;
  assert.deepEqual(strandedNamespaces(live, p1, p1.ana_groups!, "inaccessible"), []);
  // Port 2's group 2 inaccessible: namespace 2 has only port 1's group 2 left.
  p2.ana_groups![1].state = "inaccessible";
  assert.deepEqual(strandedNamespaces(live, p1, p1.ana_groups!, "change"), [
    `namespace 2 of '${SUB}' (ANA group 2)`,
  ]);
  assert.deepEqual(strandedNamespaces(live, p1, [p1.ana_groups![0]], "inaccessible"), []);
  assert.deepEqual(strandedNamespaces(live, p1, p1.ana_groups!, "non-optimized"), []);
  // A port that does not export the subsystem is no path for it.
  p2.ana_groups![1].state = "optimized";
  p2.subsystems = [];
  assert.equal(strandedNamespaces(live, p1, p1.ana_groups!, "inaccessible").length, 2);
});
