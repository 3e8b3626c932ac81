/**
 * The nvmet model's ANA groups, referrals and per-namespace group, read from the stand-in
 * configfs, which behaves as the lab's 6.1 kernel was seen to (new groups start inaccessible,
 * group 1 cannot be removed, ids above 128 are refused, an enabled referral refuses changes).
 */
import assert from "node:assert/strict";
import { readTree } from "../../src/configfs/nvmet.ts";
import { standin, SUB1 } from "./target_fixtures.ts";

Deno.test("readTree: a port's ANA groups in id order with their states; group 1 is there unasked", () => {
  using io = standin();
  io.mkdir("ports/1");
  io.mkdir("ports/1/ana_groups/10");
  io.mkdir("ports/1/ana_groups/2");
  io.write("ports/1/ana_groups/2/ana_state", "non-optimized");
  const port = readTree(io).ports[0];
  assert.deepEqual(port.ana_groups, [
    { name: "1", id: 1, state: "optimized" },
    { name: "2", id: 2, state: "non-optimized" },
    { name: "10", id: 10, state: "inaccessible" },
  ]);
});

Deno.test("stand-in: ANA group 1 cannot go, ids past 128 and unknown states are refused", () => {
  using io = standin();
  io.mkdir("ports/1");
  assert.throws(() => io.rmdir("ports/1/ana_groups/1"), /EPERM/);
  assert.throws(() => io.mkdir("ports/1/ana_groups/129"), /EINVAL/);
  assert.throws(() => io.mkdir("ports/1/ana_groups/0"), /EINVAL/);
  io.mkdir("ports/1/ana_groups/2");
  assert.throws(() => io.write("ports/1/ana_groups/2/ana_state", "optimised"), /EINVAL/);
  // A port with a group of its own cannot go before the group does.
  assert.throws(() => io.rmdir("ports/1"), /ENOTEMPTY/);
  io.rmdir("ports/1/ana_groups/2");
  io.rmdir("ports/1");
});

Deno.test("readTree: referrals with their addresses and enable; an enabled one refuses changes", () => {
  using io = standin();
  io.mkdir("ports/1");
  io.mkdir("ports/1/referrals/dc-b");
  for (
    const [f, v] of [
      ["addr_trtype", "rdma"],
      ["addr_adrfam", "ipv4"],
      ["addr_traddr", "10.0.0.9"],
      ["addr_trsvcid", "4420"],
      ["addr_portid", "7"],
    ]
  ) {
    io.write(`ports/1/referrals/dc-b/${f}`, v);
  }
  io.write("ports/1/referrals/dc-b/enable", "1");
  assert.throws(() => io.write("ports/1/referrals/dc-b/addr_traddr", "10.0.0.8"), /EACCES/);
  assert.deepEqual(readTree(io).ports[0].referrals, [{
    name: "dc-b",
    attr: {
      addr_trtype: "rdma",
      addr_adrfam: "ipv4",
      addr_traddr: "10.0.0.9",
      addr_trsvcid: "4420",
      addr_portid: "7",
      addr_treq: "not specified",
    },
    enable: true,
  }]);
});

Deno.test("readTree: ana_grpid per namespace; hosts' hash and group but never their keys", () => {
  using io = standin();
  io.mkdir(`subsystems/${SUB1}`);
  io.mkdir(`subsystems/${SUB1}/namespaces/1`);
  io.write(`subsystems/${SUB1}/namespaces/1/ana_grpid`, "3");
  io.mkdir("hosts/h1");
  io.write("hosts/h1/dhchap_key", "DHHC-1:00:c2VjcmV0c2VjcmV0:");
  io.write("hosts/h1/dhchap_hash", "hmac(sha512)");
  const tree = readTree(io);
  assert.deepEqual(tree.subsystems[0].namespaces[0].ana_grpid, "3");
  assert.deepEqual(tree.subsystems[0].namespaces[0].resv_enable, undefined);
  assert.deepEqual(tree.hosts[0], {
    nqn: "h1",
    dhchap_supported: true,
    dhchap_key_set: true,
    dhchap_ctrl_key_set: false,
    dhchap_hash: "hmac(sha512)",
    dhchap_dhgroup: "null",
  });
  assert.deepEqual(JSON.stringify(tree).includes("DHHC-1"), false);
  assert.deepEqual(tree.discovery_nqn, "nqn.2014-08.org.nvmexpress.discovery");
});

Deno.test("stand-in kernel 6.1: no DH-HMAC-CHAP, ieee_oui, firmware, tsas, max_queue_size, discovery_nqn", () => {
  using io = standin([], { kernel: "6.1" });
  io.mkdir("hosts/h1");
  io.mkdir(`subsystems/${SUB1}`);
  io.mkdir("ports/1");
  const tree = readTree(io);
  assert.deepEqual(tree.hosts[0], { nqn: "h1", dhchap_supported: false, dhchap_key_set: false });
  assert.deepEqual(tree.discovery_nqn, undefined);
  assert.deepEqual(Object.keys(tree.subsystems[0].attr).sort(), [
    "allow_any_host",
    "cntlid_max",
    "cntlid_min",
    "model",
    "pi_enable",
    "qid_max",
    "serial",
    "version",
  ]);
  assert.deepEqual(Object.keys(tree.ports[0].attr).sort(), [
    "addr_adrfam",
    "addr_traddr",
    "addr_treq",
    "addr_trsvcid",
    "addr_trtype",
    "param_inline_data_size",
    "param_pi_enable",
  ]);
});
