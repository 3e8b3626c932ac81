/**
 * The connect-option table: every row parses under nvme-cli's spelling (negative values too),
 * reaches the option string under the kernel's token, round-trips through a saved connection,
 * comes in from nvme-cli's discovery.conf and config.json, and is refused on a kernel that
 * lacks it.
 */
import assert from "node:assert/strict";
import { parseInvocation } from "../../src/cli/parse.ts";
import { COMMANDS } from "../../src/commands/mod.ts";
import { EnvironmentError, UsageError } from "../../src/errors.ts";
import { unknownTokenError } from "../../src/fabrics/connect.ts";
import { ConnectError } from "../../src/fabrics/connect_errors.ts";
import {
  completionValues,
  CONNECT_OPTIONS,
  rowOf,
  rowOfToken,
} from "../../src/fabrics/connect_table.ts";
import { TUNING_FLAGS } from "../../src/cli/connect_flags.ts";
import { isHostName, tuningFromFlags } from "../../src/cli/fabrics_values.ts";
import { buildOptionString, redactedOptionString } from "../../src/fabrics/option_string.ts";
import { checkKernelOptions, checkTransportOptions } from "../../src/fabrics/option_checks.ts";
import type { ConnectOptions } from "../../src/fabrics/connect_options.ts";
import {
  optionsFromSaved,
  savedFromOptions,
  validateSaved,
} from "../../src/persist/connections.ts";
import { importConfigJson } from "../../src/persist/config_json.ts";
import { importDiscoveryConf } from "../../src/persist/discovery_conf.ts";
import { tempDir } from "../helpers.ts";

const HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HOSTID = "5a1e0000-0000-4000-8000-000000000001";
const NQN = "nqn.2024-01.io.example:disk1";
const BASE: ConnectOptions = {
  transport: "tcp",
  traddr: "10.0.0.2",
  trsvcid: "4420",
  nqn: NQN,
  hostnqn: HOSTNQN,
  hostid: HOSTID,
};
const KEY = "DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0Pn2Z1A==:";

/** Parses `connect ARGS` as main.ts does and returns the table options the flags give. */
async function connectFlags(args: string[]): Promise<Partial<ConnectOptions>> {
  const inv = await parseInvocation(["connect", ...args], COMMANDS);
  return await tuningFromFlags(inv.values);
}

Deno.test("every table row is a connect flag under nvme-cli's long name and short letter", async () => {
  const inv = await parseInvocation(["connect", "--help"], COMMANDS);
  const options = inv.command!.options!;
  for (const r of CONNECT_OPTIONS) {
    assert.ok(options[r.flag], `--${r.flag} is a connect flag`);
    if (r.short) assert.equal(options[r.flag].short, r.short, `-${r.short} is --${r.flag}`);
    for (const a of r.aliases ?? []) assert.ok(options[a], `--${a} is accepted`);
  }
  // nvme-cli's own spellings of the ones nvme-cli has (NVMF_ARGS)
  for (
    const f of [
      "nr-io-queues",
      "nr-write-queues",
      "nr-poll-queues",
      "queue-size",
      "keep-alive-tmo",
      "reconnect-delay",
      "ctrl-loss-tmo",
      "fast_io_fail_tmo",
      "tos",
      "duplicate-connect",
      "disable-sqflow",
      "hdr-digest",
      "data-digest",
      "host-iface",
      "tls",
      "concat",
      "keyring",
      "tls-key",
      "dhchap-secret",
      "dhchap-ctrl-secret",
    ]
  ) assert.ok(options[f], `--${f}`);
});

Deno.test("the short flags parse to their rows, negative values included", async () => {
  assert.deepEqual(
    await connectFlags([
      ..."-i 4 -W 2 -P 1 -Q 64 -k 7 -c 2 -l -1 -F 5 -T 32 -D -g -G -f eth0".split(" "),
      "--disable-sqflow",
    ]),
    {
      hostIface: "eth0",
      nrIoQueues: 4,
      nrWriteQueues: 2,
      nrPollQueues: 1,
      queueSize: 64,
      keepAliveTmo: 7,
      reconnectDelay: 2,
      ctrlLossTmo: -1,
      fastIoFailTmo: 5,
      tos: 32,
      duplicateConnect: true,
      disableSqflow: true,
      hdrDigest: true,
      dataDigest: true,
    },
  );
});

Deno.test("-l -1, -l=-1, --ctrl-loss-tmo -1 and --ctrl-loss-tmo=-1 all mean: never give up", async () => {
  for (
    const args of [["-l", "-1"], ["-l=-1"], ["--ctrl-loss-tmo", "-1"], ["--ctrl-loss-tmo=-1"]]
  ) {
    assert.equal((await connectFlags(args)).ctrlLossTmo, -1, args.join(" "));
  }
  assert.equal((await connectFlags(["-F", "-1"])).fastIoFailTmo, -1);
  assert.equal((await connectFlags(["--fast-io-fail-tmo=-1"])).fastIoFailTmo, -1);
  assert.equal((await connectFlags(["-T", "-1"])).tos, -1);
});

Deno.test("values outside the kernel's ranges are refused naming the flag", async () => {
  for (
    const [args, re] of [
      [["-W", "0"], /-W\/--nr-write-queues 0 is out of range/],
      [["-P", "-1"], /-P\/--nr-poll-queues -1 is out of range/],
      [["-T", "256"], /-T\/--tos 256 is out of range/],
      [["-l", "-2"], /-l\/--ctrl-loss-tmo -2 is out of range/],
      [["-F", "x"], /-F\/--fast_io_fail_tmo 'x' is not a whole number/],
      [["-f", "eth 0"], /-f\/--host-iface 'eth 0' is not a network interface name/],
    ] as const
  ) {
    await assert.rejects(() => connectFlags([...args]), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, re);
      return true;
    });
  }
});

Deno.test("the option string has each row's kernel token; tos -1 is left to the kernel", () => {
  const s = buildOptionString({
    ...BASE,
    hostIface: "eth0",
    nrIoQueues: 4,
    nrWriteQueues: 2,
    nrPollQueues: 1,
    queueSize: 64,
    keepAliveTmo: 7,
    reconnectDelay: 2,
    ctrlLossTmo: -1,
    fastIoFailTmo: 5,
    tos: 32,
    duplicateConnect: true,
    disableSqflow: true,
    hdrDigest: true,
    dataDigest: true,
  });
  assert.equal(
    s,
    `nqn=${NQN},transport=tcp,traddr=10.0.0.2,trsvcid=4420,hostnqn=${HOSTNQN},hostid=${HOSTID},` +
      "host_iface=eth0,nr_io_queues=4,nr_write_queues=2,nr_poll_queues=1,queue_size=64," +
      "keep_alive_tmo=7,reconnect_delay=2,ctrl_loss_tmo=-1,fast_io_fail_tmo=5,tos=32," +
      "duplicate_connect,disable_sqflow,hdr_digest,data_digest",
  );
  assert.doesNotMatch(buildOptionString({ ...BASE, tos: -1, hdrDigest: false }), /tos|digest/);
});

Deno.test("both DH-HMAC-CHAP secrets come from files, -C included, and never print", async () => {
  await using dir = await tempDir();
  const host = `${dir.path}/host.key`;
  const ctrl = `${dir.path}/ctrl.key`;
  Deno.writeTextFileSync(host, KEY + "\n", { mode: 0o600 });
  Deno.writeTextFileSync(ctrl, KEY.replace("c2Vj", "Y3Ry") + "\n", { mode: 0o600 });
  const o = await connectFlags(["--dhchap-secret-file", host, "-C", ctrl]);
  assert.equal(o.dhchapSecret, KEY);
  assert.match(o.dhchapCtrlSecret ?? "", /^DHHC-1:00:Y3Ry/);
  const printed = redactedOptionString({ ...BASE, ...o });
  assert.doesNotMatch(printed, /c2Vj|Y3Ry/);
  assert.match(printed, /dhchap_secret=<secret from file>,dhchap_ctrl_secret=<secret from file>/);
});

Deno.test("an inline secret (-S, --dhchap-ctrl-secret, -C DHHC-1:…) is refused with the file form, unechoed", async () => {
  for (
    const args of [
      ["-S", KEY],
      [`--dhchap-secret=${KEY}`],
      ["--dhchap-ctrl-secret", KEY],
      ["-C", KEY],
    ]
  ) {
    await assert.rejects(() => connectFlags(args), (e: Error) => {
      assert.ok(e instanceof UsageError, args[0]);
      assert.match(e.message, /readable|every user/);
      assert.match(
        (e as UsageError).hint ?? "",
        /--dhchap(-ctrl)?-secret-file|\/etc\/nvme\/disk1\.key/,
      );
      assert.doesNotMatch(`${e.message} ${(e as UsageError).hint}`, /c2VjcmV0/);
      return true;
    });
  }
});

Deno.test("tcp-only options are refused on rdma, naming the flag", () => {
  for (const o of [{ hdrDigest: true }, { dataDigest: true }, { hostIface: "eth0" }]) {
    assert.throws(
      () => checkTransportOptions({ ...BASE, transport: "rdma", ...o }),
      /applies to tcp only, not to -t rdma/,
    );
    checkTransportOptions({ ...BASE, ...o });
  }
  checkTransportOptions({ ...BASE, transport: "rdma", disableSqflow: true, tos: 8 });
});

Deno.test("an option the running kernel lacks says which Linux has it (exit 3)", () => {
  assert.throws(() => checkKernelOptions({ ...BASE, tls: true }, "6.1.0-13-amd64"), (e: Error) => {
    assert.ok(e instanceof EnvironmentError);
    assert.match(e.message, /--tls needs Linux ≥ 6\.7; this kernel is '6\.1\.0-13-amd64'/);
    return true;
  });
  assert.throws(
    () => checkKernelOptions({ ...BASE, fastIoFailTmo: 3 }, "5.4.0"),
    /-F\/--fast_io_fail_tmo needs Linux ≥ 5\.10/,
  );
  checkKernelOptions({ ...BASE, tls: true, concat: true }, "6.15.2");
  checkKernelOptions({ ...BASE, fastIoFailTmo: 3, hdrDigest: true, tos: 0 }, "6.1.0");
  checkKernelOptions({ ...BASE, tls: true }, undefined); // unknown: the kernel decides
});

Deno.test("the kernel's 'unknown parameter' refusal of a table token becomes 'needs Linux ≥'", () => {
  const err = new ConnectError(22, "Cannot connect", "", [
    "nvme_fabrics: unknown parameter or missing value 'tls' in ctrl creation request",
  ]);
  const mapped = unknownTokenError(err, "6.1.0-13-amd64");
  assert.ok(mapped instanceof EnvironmentError);
  assert.match(mapped.message, /--tls needs Linux ≥ 6\.7/);
  assert.equal(
    unknownTokenError(new ConnectError(22, "x", "", ["invalid parameter 'foo=1'"]), "6.1"),
    undefined,
  );
});

Deno.test("a saved connection carries every table option and gives the same options back", async () => {
  await using dir = await tempDir();
  const host = `${dir.path}/host.key`;
  const ctrl = `${dir.path}/ctrl.key`;
  Deno.writeTextFileSync(host, KEY, { mode: 0o600 });
  Deno.writeTextFileSync(ctrl, KEY, { mode: 0o600 });
  const o: ConnectOptions = {
    ...BASE,
    hostIface: "eth0",
    nrIoQueues: 4,
    nrWriteQueues: 2,
    nrPollQueues: 1,
    queueSize: 64,
    keepAliveTmo: 7,
    reconnectDelay: 2,
    ctrlLossTmo: -1,
    fastIoFailTmo: 5,
    tos: 32,
    duplicateConnect: true,
    disableSqflow: true,
    hdrDigest: true,
    dataDigest: true,
    dhchapSecret: KEY,
    dhchapCtrlSecret: KEY,
  };
  const saved = savedFromOptions(o, { dhchapSecret: host, dhchapCtrlSecret: ctrl });
  assert.equal(saved.fast_io_fail_tmo, 5);
  assert.equal(saved.reconnect_delay, 2);
  assert.equal(saved.keep_alive_tmo, 7);
  assert.equal(saved.dhchap_ctrl_secret_file, ctrl);
  assert.doesNotMatch(JSON.stringify(saved), /DHHC/);
  // through YAML's types: what validateSaved accepts from the file
  const back = validateSaved(JSON.parse(JSON.stringify(saved)), "c[0]");
  assert.deepEqual(back, saved);
  assert.deepEqual(await optionsFromSaved(back), o);
});

Deno.test("nvme-cli's discovery.conf flags land in the table's saved keys", () => {
  const r = importDiscoveryConf(
    "-t tcp -a 10.0.0.2 -s 8009 -W 2 --fast_io_fail_tmo=5 -T 8 -g --data-digest -l -1 " +
      "--reconnect-delay=3 -k 9 --host-iface=eth1 --persistent\n",
    "discovery.conf",
    { hostnqn: HOSTNQN, hostid: HOSTID },
    "/etc/nvmeof",
  );
  const c = r.connections[0];
  assert.equal(c.nr_write_queues, 2);
  assert.equal(c.fast_io_fail_tmo, 5);
  assert.equal(c.tos, 8);
  assert.equal(c.hdr_digest, true);
  assert.equal(c.data_digest, true);
  assert.equal(c.ctrl_loss_tmo, -1);
  assert.equal(c.reconnect_delay, 3);
  assert.equal(c.keep_alive_tmo, 9);
  assert.equal(c.host_iface, "eth1");
});

Deno.test("libnvme's config.json port keys land in the table's saved keys; both keys move to files", () => {
  const r = importConfigJson(
    JSON.stringify([{
      hostnqn: HOSTNQN,
      hostid: HOSTID,
      subsystems: [{
        nqn: NQN,
        ports: [{
          transport: "tcp",
          traddr: "10.0.0.2",
          trsvcid: "4420",
          nr_poll_queues: 2,
          fast_io_fail_tmo: 4,
          disable_sqflow: true,
          duplicate_connect: true,
          dhchap_key: KEY,
          dhchap_ctrl_key: KEY,
        }],
      }],
    }]),
    "config.json",
    "/etc/nvmeof",
  );
  const c = r.connections[0];
  assert.equal(c.nr_poll_queues, 2);
  assert.equal(c.fast_io_fail_tmo, 4);
  assert.equal(c.disable_sqflow, true);
  assert.equal(c.duplicate_connect, true);
  assert.match(c.dhchap_secret_file ?? "", /^\/etc\/nvmeof\/keys\/[0-9a-f]{12}\.key$/);
  assert.match(c.dhchap_ctrl_secret_file ?? "", /^\/etc\/nvmeof\/keys\/[0-9a-f]{12}\.ctrl\.key$/);
  assert.equal(r.keyFiles.length, 2);
  assert.doesNotMatch(r.notes.join("\n"), /c2Vj/);
});

Deno.test("the table gives completions their value lists and the token lookup", () => {
  assert.deepEqual(completionValues().transport, ["rdma", "tcp"]);
  assert.equal(rowOfToken("fast_io_fail_tmo"), rowOf("fastIoFailTmo"));
  for (const r of CONNECT_OPTIONS) assert.ok(TUNING_FLAGS[r.flag], r.flag);
});

Deno.test("host names are told from addresses as libnvme tells them", () => {
  for (const n of ["storage1.example.com", "localhost", "a-b.c1"]) assert.ok(isHostName(n), n);
  for (const n of ["10.0.0.2", "10.0.0.300", "fe80::1%eth0", "-bad", "a..b", "x_y"]) {
    assert.ok(!isHostName(n), n);
  }
});
