/**
 * Failover the storage server plans, and a path of another transport, on host1's multipath head
 * (verified random writes, fio direct QD 16, as tests/fabric/ha_test.ts):
 *   (c) `nvmeof target ana` makes port 1's ANA group inaccessible while port 1's path carries the
 *       I/O, then optimized again: I/O moves to port 2's path and comes back;
 *   (e) one rdma path (port 1, link 0) and one tcp path (port 2, link 1) to one subsystem, the rdma
 *       link loses carrier at both ends, then comes back.
 * The target is made from a spec by `nvmeof target up`; port 2's group 1 is non-optimized, so the
 * kernel's numa iopolicy puts the I/O on port 1's path (the preferred path), and back on it once
 * it is optimized again. Each run: zero fio errors, data verified, the pause bounded and reported,
 * and `nvmeof list --paths` showing each path's state and ANA state at each step.
 */
import assert from "node:assert/strict";
import { jsonOn, must, nvmeofOn, on, setLink } from "./fabric.ts";
import {
  assertIoClean,
  failover,
  FAULTS,
  HA_NQN,
  hostClock,
  iosBetween,
  listPaths,
  pathIos,
  type PathState,
  type Rig,
} from "./ha.ts";

const SPEC = "/tmp/ha_planned/target.yaml";
/** Seconds a drain or a cut lasts. */
const HOLD = 12;
/** A planned failover must not pause I/O noticeably; generous for TCG on a shared machine. */
const PLANNED_BOUND_MS = 3000;
/** The HA profile's bound for a cut link (tests/fabric/ha_test.ts). */
const CUT_BOUND_MS = 8000;

/** The spec: port 1 rdma on link 0, port 2 (TRTYPE) on link 1 with group 1 non-optimized. */
function spec(trtype: "rdma" | "tcp"): string {
  return `subsystems:
  - nqn: ${HA_NQN}
    allow_any_host: true
    namespaces: [{nsid: 1, device: /dev/habench}]
ports:
  - {id: 1, trtype: rdma, traddr: 10.78.0.1, trsvcid: 4420, subsystems: ["${HA_NQN}"]}
  - id: 2
    trtype: ${trtype}
    traddr: 10.78.1.1
    trsvcid: 4420
    subsystems: ["${HA_NQN}"]
    ana_groups: [{id: 1, state: non-optimized}]
`;
}

async function targetUp(trtype: "rdma" | "tcp"): Promise<void> {
  await must(
    "target",
    `${FAULTS} nullb_up && mkdir -p ${SPEC.replace(/\/[^/]+$/, "")} && cat > ${SPEC} <<'EOF'\n${
      spec(trtype)
    }EOF`,
  );
  const up = await nvmeofOn("target", ["target", "up", "-f", SPEC]);
  assert.equal(up.code, 0, up.stderr);
}

async function targetDown(): Promise<void> {
  await nvmeofOn("target", ["target", "down", "-f", SPEC, "--force"]);
  await on("target", `${FAULTS} nullb_down`);
}

/** The spec's target, host1 connected by MODE (guest_faults.sh's host_connect), numa iopolicy. */
function specRig(trtype: "rdma" | "tcp", mode: string): Rig {
  return {
    async up() {
      await targetUp(trtype);
      return (await must("host1", `${FAULTS} host_connect ${mode} numa`)).trim();
    },
    async down() {
      await on("host1", `${FAULTS} host_disconnect`);
      await targetDown();
    },
  };
}

/** `transport traddr state ana_state` per path, port 1's first. */
function show(paths: PathState[]): string[] {
  return paths.map((p) => `${p.transport} ${p.traddr} ${p.state} ${p.ana_state ?? "-"}`);
}

/** host1's paths once OK holds of them (polled for up to 60 s); failing with the last seen. */
async function pathsWhen(what: string, ok: (p: PathState[]) => boolean): Promise<string[]> {
  const until = Date.now() + 60_000;
  for (;;) {
    const seen = await listPaths();
    if (ok(seen)) return show(seen);
    if (Date.now() > until) {
      assert.fail(`list --paths never showed ${what}: ${show(seen).join("; ")}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

interface AnaOut {
  nvmeof_json: number;
  changed: boolean;
  port: number;
  groups: { id: number; old: string; new: string }[];
}

Deno.test("target ana on the real kernel: a dry run and a stranding move change nothing; target up restores", async () => {
  try {
    await targetUp("rdma");
    const state = (p: number) =>
      must("target", `cat /sys/kernel/config/nvmet/ports/${p}/ana_groups/1/ana_state`).then((s) =>
        s.trim()
      );
    const dry = await jsonOn<AnaOut & { steps: unknown[] }>("target", [
      "target",
      "ana",
      "-p",
      "1",
      "-S",
      "inaccessible",
      "--dry-run",
    ]);
    assert.equal(dry.changed, false);
    assert.deepEqual(dry.steps, [{
      op: "write",
      path: "ports/1/ana_groups/1/ana_state",
      value: "inaccessible",
      old: "optimized",
    }]);
    assert.equal(await state(1), "optimized");
    // Port 1 drained, port 2 would be the namespace's last usable path.
    await jsonOn("target", ["target", "ana", "-p", "1", "-S", "inaccessible"]);
    assert.equal(await state(1), "inaccessible");
    const strand = await nvmeofOn("target", ["target", "ana", "-p", "2", "-S", "inaccessible"]);
    assert.equal(strand.code, 1, strand.stderr);
    assert.match(strand.stderr, /no optimized or non-optimized path on any port/);
    assert.equal(await state(2), "non-optimized");
    // The spec's states come back with target up.
    const up = await nvmeofOn("target", ["target", "up", "-f", SPEC]);
    assert.equal(up.code, 0, up.stderr);
    assert.equal(await state(1), "optimized");
  } finally {
    await targetDown();
  }
});

Deno.test("(c) planned failover: port 1's group inaccessible under verified I/O, then optimized: no error, I/O moves and returns", async () => {
  const seen: Record<string, string[]> = {};
  const writes: Record<string, Record<string, number>> = {};
  let restoredAt: Record<string, number> = {};
  const r = await failover("planned", specRig("rdma", "nvmeof"), async (link) => {
    assert.equal(link, 0, "the I/O runs on port 1's path (port 2's group is non-optimized)");
    seen.before = await pathsWhen(
      "both live, port 1 optimized",
      (p) => p.length === 2 && p[0].ana_state === "optimized" && p[1].ana_state === "non-optimized",
    );
    const cut = await hostClock();
    const drain = await jsonOn<AnaOut>("target", [
      "target",
      "ana",
      "--port",
      "1",
      "--state",
      "inaccessible",
    ]);
    assert.deepEqual(drain.groups, [{ id: 1, old: "optimized", new: "inaccessible" }]);
    seen.drained = await pathsWhen("port 1 inaccessible", (p) => p[0].ana_state === "inaccessible");
    const w0 = await pathIos();
    await new Promise((res) => setTimeout(res, HOLD * 1000));
    writes.drained = iosBetween(w0, await pathIos());
    const back = await hostClock();
    await jsonOn("target", ["target", "ana", "--port", "1", "--state", "optimized"]);
    seen.restored = await pathsWhen(
      "port 1 optimized again",
      (p) => p[0].ana_state === "optimized",
    );
    restoredAt = await pathIos();
    return [cut, back];
  }, {
    async after() {
      writes.restored = iosBetween(restoredAt, await pathIos());
    },
  });
  console.log(
    `(c) list --paths: ${JSON.stringify(seen)}; I/Os per path: ${JSON.stringify(writes)}`,
  );
  assertIoClean(r, PLANNED_BOUND_MS);
  // While drained, every I/O went down port 2's path; once restored, port 1's path again.
  assert.equal(writes.drained["10.78.0.1"], 0, JSON.stringify(writes));
  assert.ok(writes.drained["10.78.1.1"] > 0, JSON.stringify(writes));
  assert.ok(writes.restored["10.78.0.1"] > 0, JSON.stringify(writes));
});

Deno.test("(e) an rdma path and a tcp path to one subsystem, the rdma link cut: no error, I/O on tcp, the rdma path comes back", async () => {
  const seen: Record<string, string[]> = {};
  let atCut: Record<string, number> = {};
  let sinceCut: Record<string, number> = {};
  const r = await failover("rdma-tcp", specRig("tcp", "nvmeof-rdma-tcp"), async (link) => {
    assert.equal(link, 0, "the I/O runs on the rdma path (the tcp port's group is non-optimized)");
    seen.before = await pathsWhen(
      "rdma optimized, tcp non-optimized",
      (p) =>
        p.length === 2 && p[0].transport === "rdma" && p[0].ana_state === "optimized" &&
        p[1].transport === "tcp" && p[1].ana_state === "non-optimized",
    );
    await setLink("target", 0, false, "host1");
    await setLink("host1", 0, false);
    seen.cut = await pathsWhen(
      "the rdma path down, tcp live",
      (p) => p[0].state !== "live" && p[1].state === "live",
    );
    atCut = await pathIos();
    await new Promise((res) => setTimeout(res, HOLD * 1000));
    await setLink("target", 0, true, "host1");
    await setLink("host1", 0, true);
    return ["carrier", "carrier"];
  }, {
    async after() {
      seen.back = await pathsWhen("both live again", (p) => p.every((x) => x.state === "live"));
      sinceCut = iosBetween(atCut, await pathIos());
    },
  });
  console.log(
    `(e) list --paths: ${JSON.stringify(seen)}; I/Os since the cut: ${JSON.stringify(sinceCut)}`,
  );
  assertIoClean(r, CUT_BOUND_MS);
  assert.notEqual(r.back_s, "never", "the rdma path never came back");
  const states = r.states.map(([, s]) => s);
  assert.ok(states.some((s) => s === "connecting" || s === "resetting"), states.join(" "));
  assert.equal(states.at(-1), "live");
  // The tcp path carried the I/O during the cut; the rdma path took it back once live.
  assert.ok(sinceCut["10.78.1.1"] > 0 && sinceCut["10.78.0.1"] > 0, JSON.stringify(sinceCut));
});
