/**
 * serveInTurn, the loop both RDMA servers (ping and bw, rping) serve their clients with, with no
 * device: turns stand in for the clients; and the summary line the server ends with.
 */
import assert from "node:assert/strict";
import { type ServedClient, serveInTurn, type Turn } from "../../src/rdma/serve.ts";
import { toolServerText } from "../../src/rdma/tool_server.ts";
import { CancelledError } from "../../src/wait.ts";

/** A turn that runs `run`, recording its end. */
function turn(run: (entry: ServedClient) => Promise<void>, log: string[]) {
  return (entry: ServedClient): Turn => ({
    run: () => run(entry),
    end: () => log.push(`end ${entry.client}`),
  });
}

Deno.test("serveInTurn serves --clients N in turn, marks and notes a failure, and goes on", async () => {
  const log: string[] = [];
  const served = await serveInTurn(
    { maxClients: 3, note: (l) => log.push(l) },
    turn((entry) => {
      if (entry.client === 2) return Promise.reject(new Error("payload mismatch"));
      entry.op = "write";
      entry.verified = 10;
      return Promise.resolve();
    }, log),
  );
  assert.deepEqual(served.map((c) => [c.client, c.result, c.error]), [
    [1, "ok", undefined],
    [2, "failed", "payload mismatch"],
    [3, "ok", undefined],
  ]);
  assert.equal(served[0].verified, 10);
  assert.deepEqual(log, ["end 1", "client 2: failed: payload mismatch", "end 2", "end 3"]);
});

Deno.test("serveInTurn lets a turn explain its failure", async () => {
  const served = await serveInTurn(
    { maxClients: 1, note: () => {} },
    () => ({
      run: () => Promise.reject(new Error("IBV_WC_REM_ACCESS_ERR")),
      explain: () => Promise.resolve("The peer went away during the run"),
      end: () => {},
    }),
  );
  assert.equal(served[0].error, "The peer went away during the run");
});

Deno.test("serveInTurn stops on cancel: the turn is ended, not listed", async () => {
  const log: string[] = [];
  const served = await serveInTurn(
    { maxClients: 0, note: (l) => log.push(l) },
    turn((entry) => {
      if (entry.client === 2) return Promise.reject(new CancelledError("SIGINT received"));
      return Promise.resolve();
    }, log),
  );
  assert.deepEqual(served.map((c) => c.client), [1]);
  assert.deepEqual(log, ["end 1", "end 2"]);
});

Deno.test("the ping and bw server's summary writes an IPv6 address in brackets", () => {
  const clients: ServedClient[] = [];
  assert.equal(
    toolServerText({ traddr: "fd00::1", trsvcid: 7174, clients }),
    "served 0 client(s) on [fd00::1]:7174, 0 not ok\n",
  );
  assert.equal(
    toolServerText({ traddr: "0.0.0.0", trsvcid: 7174, clients }),
    "served 0 client(s) on 0.0.0.0:7174, 0 not ok\n",
  );
});
