/**
 * The doctor's verdict on a storage server whose rxe netdev was set down and up: the kernel log's
 * port events and QP1 send failure, dated, and the listener probe's answer.
 */
import assert from "node:assert/strict";
import type { LivePort } from "../../src/configfs/nvmet.ts";
import type { KmsgRecord } from "../../src/fabrics/kmsg.ts";
import { classifyFlapped, classifyListening } from "../../src/doctor/listening.ts";
import { classifyHostFlapped } from "../../src/doctor/ip_checks.ts";
import {
  connectAgainCommand,
  lastFlap,
  type PortFlap,
  RXE_FLAP_RECORDS,
  rxeRecreateCommand,
  type StuckPath,
  wallClockOf,
} from "../../src/doctor/nic_flap.ts";
import type { ProbeOutcome } from "../../src/nvme/admin_probe.ts";

function rec(usec: number, message: string): KmsgRecord {
  return { priority: 6, seq: usec, usec, message };
}

/** What Linux 6.1 logged in the lab when the target's fab0 was set down for 15 s. */
const FLAP = [
  rec(1_000_000, "infiniband rxe0: set active"),
  rec(50_000_000, "infiniband rxe0: set down"),
  rec(65_000_000, "infiniband rxe0: set active"),
];

const PORT: LivePort = {
  name: "91",
  id: 91,
  attr: { addr_trtype: "rdma", addr_traddr: "10.78.0.1", addr_trsvcid: "4420" },
  subsystems: ["nqn.2024-01.io.nvmeof.ha:bench"],
};

function timeout(): ProbeOutcome {
  return {
    traddr: "10.78.0.1",
    trsvcid: 4420,
    stage: "connect",
    event: "TIMEOUT",
    status: 0,
    privateData: new Uint8Array(0),
    timeoutMs: 3000,
  } as ProbeOutcome;
}

Deno.test("the kernel log lines the verdict reads are rxe's port events", () => {
  for (const r of FLAP) assert.ok(RXE_FLAP_RECORDS.test(r.message), r.message);
  assert.ok(!RXE_FLAP_RECORDS.test("infiniband rxe0: added fab0"));
  assert.ok(!RXE_FLAP_RECORDS.test("nvme nvme0: rdma connection establishment failed (-104)"));
});

Deno.test("the last down of a device and its return; boot's set active is no return", () => {
  assert.deepEqual(lastFlap(FLAP, "rxe0"), {
    device: "rxe0",
    downUsec: 50_000_000,
    upUsec: 65_000_000,
  });
  assert.equal(lastFlap(FLAP, "rxe1"), undefined);
  assert.equal(lastFlap([FLAP[0]], "rxe0"), undefined);
});

Deno.test("a later down replaces an earlier flap; a device still down has no return", () => {
  const f = lastFlap([...FLAP, rec(90_000_000, "infiniband rxe0: set down")], "rxe0");
  assert.deepEqual(f, { device: "rxe0", downUsec: 90_000_000 });
});

Deno.test("kernel log time is dated from the uptime and the clock now", () => {
  const now = Date.UTC(2026, 11, 3, 12, 0, 0);
  assert.equal(wallClockOf(50_000_000, 100, now).toISOString(), "2026-12-03T11:59:10.000Z");
});

const FLAPPED: PortFlap = {
  flap: lastFlap(FLAP, "rxe0")!,
  netdev: "fab0",
  downAt: new Date("2026-12-03T11:59:10Z"),
  upAt: new Date("2026-12-03T11:59:25Z"),
};

Deno.test("a listener silent since its rxe NIC flapped names the NIC, the times and the exact step", () => {
  const c = classifyListening(PORT, timeout(), FLAPPED);
  assert.equal(c.id, "target.port.91.listening");
  assert.equal(c.status, "fail");
  assert.match(
    c.seen,
    /NIC fab0 \(rxe0\) went down at 2026-12-03T11:59:10\.000Z and came back at 2026-12-03T11:59:25\.000Z; port 91's RDMA listener at 10\.78\.0\.1:4420 has not answered since \(TIMEOUT\)/,
  );
  assert.match(c.seen, /management queue pair \(QP1\)/);
  assert.ok(
    c.fix!.includes(
      "rdma link delete rxe0 && rdma link add rxe0 type rxe netdev fab0; " +
        "rm /sys/kernel/config/nvmet/ports/91/subsystems/nqn.2024-01.io.nvmeof.ha:bench; " +
        "ln -s /sys/kernel/config/nvmet/subsystems/nqn.2024-01.io.nvmeof.ha:bench " +
        "/sys/kernel/config/nvmet/ports/91/subsystems/nqn.2024-01.io.nvmeof.ha:bench",
    ),
    c.fix,
  );
  assert.match(c.fix!, /Soft-RoCE only/);
});

Deno.test("an answering listener, a NIC still down, or no flap keep the usual verdicts", () => {
  const ok = { ...timeout(), event: "ESTABLISHED" } as ProbeOutcome;
  assert.equal(classifyFlapped(PORT, ok, FLAPPED), undefined);
  assert.equal(classifyListening(PORT, ok, FLAPPED).status, "ok");
  const down = { ...FLAPPED, flap: { device: "rxe0", downUsec: 50_000_000 }, upAt: undefined };
  assert.equal(classifyFlapped(PORT, timeout(), down), undefined);
  assert.doesNotMatch(classifyListening(PORT, timeout(), down).seen, /went down/);
  assert.doesNotMatch(classifyListening(PORT, timeout()).seen, /went down/);
});

Deno.test("the step that makes an rxe device anew", () => {
  assert.equal(
    rxeRecreateCommand("rxe1", "fab1"),
    "rdma link delete rxe1 && rdma link add rxe1 type rxe netdev fab1",
  );
});

/** host1's probe towards the target, sent twice from its rxe0, met by silence. */
function hostSilence(device = "rxe0"): ProbeOutcome {
  return {
    ...timeout(),
    attempts: 2,
    src: { addr: "10.78.0.2", device, port: 1 },
  };
}

Deno.test("no CM answer since this host's own rxe NIC flapped names the NIC, the times and the step", () => {
  const c = classifyHostFlapped(hostSilence(), FLAPPED);
  assert.ok(c);
  assert.equal(c.id, "reach.listener");
  assert.equal(c.status, "fail");
  assert.ok(
    c.seen.startsWith(
      "this host's NIC fab0 (rxe0) went down at 2026-12-03T11:59:10.000Z and came back at " +
        "2026-12-03T11:59:25.000Z; its RDMA-CM has not answered since: no reply from 10.78.0.1:4420 " +
        "to 2 connect request(s)",
    ),
    c.seen,
  );
  assert.ok(
    c.fix?.startsWith(
      "make rxe0 anew: rdma link delete rxe0 && rdma link add rxe0 type rxe netdev fab0 " +
        "(Soft-RoCE only; drops this host's connections on rxe0); then nvmeof connect --saved",
    ),
    c.fix,
  );
});

Deno.test("a host's flap with paths stuck through the device: disconnect them, make it anew, connect them again", () => {
  const stuck: StuckPath[] = [
    {
      controller: "nvme0",
      nqn: "nqn.2024-01.io.x:a",
      traddr: "10.78.0.1",
      trsvcid: "4420",
      ha: true,
    },
    {
      controller: "nvme3",
      nqn: "nqn.2024-01.io.x:it's",
      traddr: "10.78.0.1",
      trsvcid: "4420",
      hostTraddr: "10.78.0.2",
      ha: false,
    },
  ];
  const one = classifyHostFlapped(hostSilence(), FLAPPED, stuck.slice(0, 1));
  assert.ok(one?.fix);
  assert.equal(
    one.fix,
    "disconnect the path: nvmeof disconnect -d nvme0 (it returns once the connect attempt pending " +
      "through rxe0 gives up: up to about 100 s on Linux 6.1; made anew before that, the device's " +
      "delete hangs in the kernel until then); then make rxe0 anew: rdma link delete rxe0 && rdma " +
      "link add rxe0 type rxe netdev fab0 (Soft-RoCE only; drops this host's connections on rxe0); " +
      "then connect it again: nvmeof connect -t rdma -a 10.78.0.1 -s 4420 -n nqn.2024-01.io.x:a " +
      "--ha (or nvmeof connect --saved, for saved connections)",
  );
  // The order is the point: every disconnect before the delete, every connect after the add.
  const two = classifyHostFlapped(hostSilence(), FLAPPED, stuck)!.fix!;
  const at = (s: string) => {
    const i = two.indexOf(s);
    assert.ok(i >= 0, `${s} not in: ${two}`);
    return i;
  };
  assert.ok(
    at("nvmeof disconnect -d nvme0 && nvmeof disconnect -d nvme3") < at("rdma link delete"),
  );
  assert.ok(
    at("rdma link add rxe0") <
      at("nvmeof connect -t rdma -a 10.78.0.1 -s 4420 -n nqn.2024-01.io.x:a --ha && "),
  );
  // An NQN with a quote is quoted for the shell; -w kept; no --ha for other timeouts.
  assert.ok(two.includes(`-n 'nqn.2024-01.io.x:it'\\''s' -w 10.78.0.2 (or`), two);
});

Deno.test("connect again: the command a stuck path was made with", () => {
  assert.equal(
    connectAgainCommand({
      controller: "nvme1",
      nqn: "nqn.2024-01.io.x:a b",
      traddr: "fe80::1%fab0",
      trsvcid: "4420",
      ha: true,
    }),
    "nvmeof connect -t rdma -a fe80::1%fab0 -s 4420 -n 'nqn.2024-01.io.x:a b' --ha",
  );
});

Deno.test("the host's flap verdict needs silence, a return, and the device the probe left from", () => {
  // An answer (a reject) is not silence: the target's RDMA-CM and this host's both work.
  const rejected = { ...hostSilence(), event: "REJECTED", status: 8 } as ProbeOutcome;
  assert.equal(classifyHostFlapped(rejected, FLAPPED), undefined);
  // Still down: no return, no verdict of this kind (the route check says the NIC is down).
  assert.equal(classifyHostFlapped(hostSilence(), { ...FLAPPED, upAt: undefined }), undefined);
  // The probe left from rxe1: rxe0's flap is not why it met silence.
  assert.equal(classifyHostFlapped(hostSilence("rxe1"), FLAPPED), undefined);
  // No flap in the log at all.
  assert.equal(classifyHostFlapped(hostSilence(), undefined), undefined);
});
