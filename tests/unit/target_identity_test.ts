import assert from "node:assert/strict";
import { derivedNamespaceUuid, derivedSerial, hashAhead } from "../../src/target/identity.ts";
import { identitiesToDerive, planUp } from "../../src/target/plan.ts";
import type { LiveTree } from "../../src/configfs/nvmet.ts";
import type { TargetSpec } from "../../src/target/spec.ts";

const NQN = "nqn.2026-11.io.nvmeof:identity";

function spec(uuid?: string): TargetSpec {
  return {
    hosts: [],
    subsystems: [{
      nqn: NQN,
      allow_any_host: true,
      hosts: [],
      namespaces: [{ nsid: 1, device: "/dev/vdb", enabled: true, ...(uuid ? { uuid } : {}) }],
    }],
    ports: [],
  } as unknown as TargetSpec;
}

const EMPTY = { hosts: [], subsystems: [], ports: [] } as unknown as LiveTree;

/** A live tree holding NQN, with a serial, and its namespace 1 with a UUID. */
const LIVE_NS1 = {
  hosts: [],
  ports: [],
  subsystems: [{
    nqn: NQN,
    attr: { allow_any_host: "1", serial: "0123456789abcdef    " },
    hosts: [],
    namespaces: [{
      name: "1",
      nsid: 1,
      device_path: "/dev/vdb",
      device_uuid: "11111111-2222-4333-8444-555555555555",
      device_nguid: "00000000-0000-0000-0000-000000000000",
      enable: true,
    }],
  }],
} as unknown as LiveTree;

Deno.test("a new subsystem and namespace get a serial and UUID that are the same on every boot", () => {
  const serial = derivedSerial(NQN);
  assert.match(serial, /^[0-9a-f]{20}$/);
  assert.equal(derivedSerial(NQN), serial, "the same NQN gives the same serial");
  assert.notEqual(derivedSerial(`${NQN}-2`), serial);
  const uuid = derivedNamespaceUuid(NQN, 1);
  assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(derivedNamespaceUuid(NQN, 2), uuid);
  const writes = planUp(EMPTY, spec()).filter((s) => s.op === "write")
    .map((s) => [s.path.split("/").pop(), (s as { value: string }).value]);
  assert.deepEqual(writes.find(([a]) => a === "attr_serial"), ["attr_serial", serial]);
  assert.deepEqual(writes.find(([a]) => a === "device_uuid"), ["device_uuid", uuid]);
  // Planned twice (two boots of one storage server): the same steps.
  assert.deepEqual(planUp(EMPTY, spec()), planUp(EMPTY, spec()));
});

Deno.test("the serial and UUID are those every earlier version derived from the same names", () => {
  // A storage server upgraded and applying its spec again must give its hosts the same disks.
  assert.equal(derivedSerial(NQN), "4e177c3e4e2168a1c0a2");
  assert.equal(derivedNamespaceUuid(NQN, 1), "93f68721-2f34-8005-83e3-a70672a2ed58");
  assert.equal(derivedSerial("nqn.2014-08.org.nvmexpress:uuid:é"), "63786c122bd25807fe64");
});

Deno.test("a UUID the spec names wins; an existing namespace and subsystem keep what they have", () => {
  const named = "0f8e6a4c-1d2b-4c3a-9e8f-7a6b5c4d3e2f";
  const steps = planUp(EMPTY, spec(named));
  assert.ok(
    steps.some((s) => s.path.endsWith("device_uuid") && (s as { value: string }).value === named),
  );
  const live = LIVE_NS1;
  const again = planUp(live, spec());
  assert.ok(!again.some((s) => /device_uuid|attr_serial/.test(s.path)), JSON.stringify(again));
});

Deno.test("identities hashed ahead, all at once, are the same bytes as those derived one by one", async () => {
  const nqns = [
    NQN,
    "nqn.2014-08.org.nvmexpress:uuid:é",
    ...Array.from({ length: 40 }, (_, i) => `${NQN}-${i}`),
  ];
  const here = nqns.map((n) => [derivedSerial(n), derivedNamespaceUuid(n, 7)]);
  const wanted = { serials: nqns, namespaces: nqns.map((n) => [n, 7] as [string, number]) };
  assert.equal(await hashAhead(wanted), 2 * nqns.length);
  assert.equal(await hashAhead(wanted), 0, "already hashed ahead and not taken");
  assert.deepEqual(nqns.map((n) => [derivedSerial(n), derivedNamespaceUuid(n, 7)]), here);
  // Each was taken by its derivation: asked again, all are hashed again.
  assert.equal(await hashAhead(wanted), 2 * nqns.length);
  // Those taken from the third hashing ahead are the known serial and the one-by-one UUID.
  assert.equal(derivedSerial(NQN), "4e177c3e4e2168a1c0a2");
  assert.equal(derivedNamespaceUuid(NQN, 7), here[0][1]);
});

Deno.test("what a plan will derive: a new subsystem's serial and new namespaces' UUIDs, unless the spec names them", async () => {
  const two = {
    hosts: [],
    ports: [],
    subsystems: [
      {
        ...spec().subsystems[0],
        namespaces: [1, 2, 3].map((nsid) => ({
          nsid,
          device: "/dev/vdb",
          enabled: true,
          ...(nsid === 3 ? { uuid: "0f8e6a4c-1d2b-4c3a-9e8f-7a6b5c4d3e2f" } : {}),
        })),
      },
      { ...spec().subsystems[0], nqn: `${NQN}-named`, serial: "0123", namespaces: [] },
    ],
  } as unknown as TargetSpec;
  assert.deepEqual(identitiesToDerive(EMPTY, two), {
    serials: [NQN],
    namespaces: [[NQN, 1], [NQN, 2]],
  });
  const live = LIVE_NS1;
  assert.deepEqual(identitiesToDerive(live, two), { serials: [], namespaces: [[NQN, 2]] });
  // Hashed ahead or not, the plan is the same.
  const without = planUp(EMPTY, two);
  await hashAhead(identitiesToDerive(EMPTY, two));
  assert.deepEqual(planUp(EMPTY, two), without);
  assert.equal(await hashAhead(identitiesToDerive(EMPTY, two)), 3, "the plan took every digest");
});
