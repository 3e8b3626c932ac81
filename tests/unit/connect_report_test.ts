/** What the connect runs print: addresses read the same as everywhere else, IPv6 in brackets. */
import assert from "node:assert/strict";
import { addr, connectAllText } from "../../src/initiator/connect_report.ts";

Deno.test("connect's reports write an IPv6 target and its referral in brackets", () => {
  assert.equal(addr("rdma", "10.0.0.2", "4420"), "rdma 10.0.0.2:4420");
  assert.equal(addr("tcp", "fd00::2", "4420"), "tcp [fd00::2]:4420");
  const text = connectAllText({
    records: [{
      subnqn: "nqn.2014-08.org.example:s1",
      trtype: "rdma",
      traddr: "fd00::2",
      trsvcid: "4420",
      status: "failed",
      reason: "timed out",
      referral: { trtype: "rdma", traddr: "fd00::3", trsvcid: "8009" },
    }],
  });
  assert.equal(
    text,
    "failed: 'nqn.2014-08.org.example:s1' at rdma [fd00::2]:4420 " +
      "(through the referral to rdma [fd00::3]:8009): timed out",
  );
});
