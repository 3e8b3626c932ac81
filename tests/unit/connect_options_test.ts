import assert from "node:assert/strict";
import { UsageError } from "../../src/errors.ts";
import { addressFromFlags, hostFromFlags, tuningFromFlags } from "../../src/cli/fabrics_values.ts";
import { buildOptionString, redactedOptionString } from "../../src/fabrics/option_string.ts";
import { checkNqn, validateConnectOptions } from "../../src/fabrics/option_checks.ts";
import type { ConnectOptions } from "../../src/fabrics/connect_options.ts";
import { tempDir } from "../helpers.ts";

const HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HOSTID = "5a1e0000-0000-4000-8000-000000000001";
const BASE: ConnectOptions = {
  transport: "rdma",
  traddr: "10.0.0.2",
  trsvcid: "4420",
  nqn: "nqn.2024-01.io.example:disk1",
  hostnqn: HOSTNQN,
  hostid: HOSTID,
};

Deno.test("option string carries the required tokens in nvme-cli's order", () => {
  assert.equal(
    buildOptionString(BASE),
    `nqn=nqn.2024-01.io.example:disk1,transport=rdma,traddr=10.0.0.2,trsvcid=4420,` +
      `hostnqn=${HOSTNQN},hostid=${HOSTID}`,
  );
});

Deno.test("option string has a token for every tuning flag", () => {
  const s = buildOptionString({
    ...BASE,
    hostTraddr: "10.0.0.1",
    nrIoQueues: 4,
    queueSize: 256,
    keepAliveTmo: 7,
    reconnectDelay: 3,
    ctrlLossTmo: -1,
    dhchapSecret: "DHHC-1:00:c2VjcmV0c2VjcmV0:",
  });
  assert.equal(
    s,
    `nqn=nqn.2024-01.io.example:disk1,transport=rdma,traddr=10.0.0.2,trsvcid=4420,` +
      `host_traddr=10.0.0.1,hostnqn=${HOSTNQN},hostid=${HOSTID},nr_io_queues=4,queue_size=256,` +
      `keep_alive_tmo=7,reconnect_delay=3,ctrl_loss_tmo=-1,dhchap_secret=DHHC-1:00:c2VjcmV0c2VjcmV0:`,
  );
});

Deno.test("the printable option string hides the DH-HMAC-CHAP secret", () => {
  const s = redactedOptionString({ ...BASE, dhchapSecret: "DHHC-1:00:c2VjcmV0c2VjcmV0:" });
  assert.doesNotMatch(s, /c2VjcmV0/);
  assert.match(s, /dhchap_secret=<secret from file>/);
});

Deno.test("flags map to options: -t -a -s, -q -I -w", () => {
  assert.deepEqual(
    addressFromFlags({ transport: "rdma", traddr: "fe80::1%rxe0", trsvcid: "4421" }),
    {
      transport: "rdma",
      traddr: "fe80::1%rxe0",
      trsvcid: "4421",
    },
  );
  assert.deepEqual(
    hostFromFlags({ hostnqn: HOSTNQN, hostid: HOSTID.toUpperCase(), "host-traddr": "10.0.0.1" }),
    { hostnqn: HOSTNQN, hostid: HOSTID, hostTraddr: "10.0.0.1" },
  );
});

Deno.test("flags map to options: -i -Q -k -c -l", async () => {
  assert.deepEqual(
    await tuningFromFlags({
      "nr-io-queues": "2",
      "queue-size": "64",
      "keep-alive-tmo": "0",
      "reconnect-delay": "1",
      "ctrl-loss-tmo": "-1",
    }),
    { nrIoQueues: 2, queueSize: 64, keepAliveTmo: 0, reconnectDelay: 1, ctrlLossTmo: -1 },
  );
});

Deno.test("queue size outside the kernel's 16..1024 is refused naming the flag", async () => {
  for (const v of ["15", "1025", "abc"]) {
    await assert.rejects(() => tuningFromFlags({ "queue-size": v }), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, /-Q\/--queue-size/);
      return true;
    });
  }
});

Deno.test("zero I/O queues and a zero reconnect delay are refused", async () => {
  await assert.rejects(
    () => tuningFromFlags({ "nr-io-queues": "0" }),
    /-i\/--nr-io-queues 0 is out of range/,
  );
  await assert.rejects(() => tuningFromFlags({ "reconnect-delay": "0" }), /-c\/--reconnect-delay/);
});

Deno.test("an NQN of 223 bytes is refused, 222 accepted", () => {
  const ok = "nqn.2024-01.io.example:" + "x".repeat(222 - 23);
  assert.equal(new TextEncoder().encode(ok).length, 222);
  assert.equal(checkNqn(ok, "-n/--nqn"), ok);
  assert.throws(
    () => checkNqn(ok + "y", "-n/--nqn"),
    /is 223 bytes; the kernel accepts at most 222/,
  );
});

Deno.test("an NQN with a comma or whitespace is refused (the kernel splits on them)", () => {
  assert.throws(() => checkNqn("nqn.a,b", "-n/--nqn"), UsageError);
  assert.throws(() => checkNqn("nqn.a b", "-n/--nqn"), UsageError);
  assert.throws(() => checkNqn("", "-n/--nqn"), /is empty/);
});

Deno.test("addresses that do not parse are refused before anything is written", () => {
  for (const bad of ["10.0.0", "10.0.0.256", "host.example", "1::2::3", "10.0.0.1,x", ""]) {
    assert.throws(() => addressFromFlags({ traddr: bad }), UsageError, bad);
  }
  assert.throws(() => addressFromFlags({}), /target address is missing/);
  assert.throws(() => addressFromFlags({ traddr: "10.0.0.1", trsvcid: "70000" }), /-s\/--trsvcid/);
  assert.throws(() => addressFromFlags({ traddr: "10.0.0.1", transport: "fc" }), /not supported/);
});

Deno.test("a host ID that is not a UUID is refused", () => {
  assert.throws(
    () => hostFromFlags({ hostid: "not-a-uuid" }),
    /-I\/--hostid 'not-a-uuid' is not a UUID/,
  );
  assert.throws(() => validateConnectOptions({ ...BASE, hostid: "x" }), UsageError);
});

Deno.test("the DH-HMAC-CHAP secret comes from a file and is checked without echoing it", async () => {
  await using dir = await tempDir();
  const good = `${dir.path}/good.key`;
  const bad = `${dir.path}/bad.key`;
  await Deno.writeTextFile(good, "DHHC-1:01:c2VjcmV0c2VjcmV0c2VjcmV0:\n", { mode: 0o600 });
  await Deno.writeTextFile(bad, "hunter2\n", { mode: 0o600 });
  assert.equal(
    (await tuningFromFlags({ "dhchap-secret-file": good })).dhchapSecret,
    "DHHC-1:01:c2VjcmV0c2VjcmV0c2VjcmV0:",
  );
  await assert.rejects(() => tuningFromFlags({ "dhchap-secret-file": bad }), (e: Error) => {
    assert.doesNotMatch(e.message, /hunter2/);
    assert.match(e.message, /not hold one DH-HMAC-CHAP key in DHHC-1 form/);
    return true;
  });
  await assert.rejects(
    () => tuningFromFlags({ "dhchap-secret-file": `${dir.path}/missing` }),
    /--dhchap-secret-file: key file '.*missing' does not exist/,
  );
});

Deno.test("connect refuses a key file others can read, with the chmod fix, as the target does", async () => {
  await using dir = await tempDir();
  const open = `${dir.path}/open.key`;
  await Deno.writeTextFile(open, "DHHC-1:01:c2VjcmV0c2VjcmV0c2VjcmV0:\n", { mode: 0o644 });
  await Deno.chmod(open, 0o644);
  await assert.rejects(() => tuningFromFlags({ "dhchap-secret-file": open }), (e: Error) => {
    assert.match(e.message, /readable or writable by group or others \(mode 644\)/);
    assert.match((e as UsageError).hint ?? "", /chmod 600/);
    assert.doesNotMatch(e.message, /c2VjcmV0/);
    return true;
  });
});

Deno.test("connect refuses an empty key file", async () => {
  await using dir = await tempDir();
  const empty = `${dir.path}/empty.key`;
  await Deno.writeTextFile(empty, "\n", { mode: 0o600 });
  await assert.rejects(
    () => tuningFromFlags({ "dhchap-secret-file": empty }),
    /key file '.*empty.key' is empty/,
  );
});
