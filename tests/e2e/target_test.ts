/**
 * `nvmeof target` on the real kernel (lab guest: nvmet-rdma and nvmet-tcp, rxe at 10.77.0.1,
 * memory-backed null_blk): what the stand-in of the cli tier can only imitate. Text fields as
 * the file spells them, an NQN of no nqn. form, show's output rebuilding the same target, and a
 * port re-applied as another transport. Everything is removed even when the test fails.
 * Linux 6.1 has no attr_firmware or attr_ieee_oui (6.2 added them): the spec leaves them out.
 */
import assert from "node:assert/strict";
import { nvmeof, sh } from "../helpers.ts";

const N = "/sys/kernel/config/nvmet";
const SUB = "nqn.2026-10.pk.nextgen:e2e-target-1";
const PLAIN = "testnqn";
const HOST = "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000e1";
const NB = "nullb_e2e_t";

function spec(dev: string, trtype: "rdma" | "tcp"): string {
  return `hosts:
  - nqn: ${HOST}
subsystems:
  - nqn: ${SUB}
    hosts: [${HOST}]
    serial: 0123
    version: 1.10
    model: 2024
    cntlid_min: 10
    cntlid_max: 20
    namespaces:
      - nsid: 1
        device: ${dev}
  - nqn: ${PLAIN}
    allow_any_host: true
ports:
  - id: 7
    trtype: ${trtype}
    traddr: 10.77.0.1
    trsvcid: 4427
    subsystems: [${SUB}, ${PLAIN}]
`;
}

Deno.test("target up on nvmet: text fields as written, any NQN, show rebuilds it, a port changes transport", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-e2e-target-" });
  const file = `${dir}/t.yaml`;
  const run = (args: string[]) => nvmeof(args);
  try {
    const mk = await sh(
      `set -e; modprobe -a null_blk nvmet-rdma nvmet-tcp; d=/sys/kernel/config/nullb/${NB}; ` +
        `mkdir $d; echo 64 > $d/size; echo 1 > $d/memory_backed; echo 1 > $d/power`,
    );
    assert.equal(mk.code, 0, mk.stderr);
    Deno.writeTextFileSync(file, spec(`/dev/${NB}`, "rdma"));
    const up = await run(["target", "up", "-f", file]);
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stderr, /warning: NQN 'testnqn' is not of the form/);
    const attr = async (name: string) =>
      (await Deno.readTextFile(`${N}/subsystems/${SUB}/attr_${name}`)).trim();
    assert.deepEqual(
      [await attr("serial"), await attr("version"), await attr("model")],
      ["0123", "1.10", "2024"],
    );
    assert.deepEqual([await attr("cntlid_min"), await attr("cntlid_max")], ["10", "20"]);

    // show's output re-applied plans nothing; after down, it rebuilds the same attributes.
    const shown = await run(["target", "show"]);
    assert.equal(shown.code, 0, shown.stderr);
    const shownFile = `${dir}/shown.yaml`;
    Deno.writeTextFileSync(shownFile, shown.stdout);
    const same = await run(["target", "up", "-f", shownFile, "-o", "json"]);
    assert.equal(same.code, 0, same.stderr);
    assert.deepEqual(JSON.parse(same.stdout).steps, []);
    assert.equal((await run(["target", "down", "-f", file])).code, 0);
    const rebuilt = await run(["target", "up", "-f", shownFile]);
    assert.equal(rebuilt.code, 0, rebuilt.stderr);
    assert.deepEqual(
      [await attr("serial"), await attr("version"), await attr("model")],
      ["0123", "1.10", "2024"],
    );

    // The port as tcp: made anew by the kernel's rules, linked again, and a no-op after.
    Deno.writeTextFileSync(file, spec(`/dev/${NB}`, "tcp"));
    const tcp = await run(["target", "up", "--prune", "-f", file]);
    assert.equal(tcp.code, 0, tcp.stderr);
    const port = async (f: string) => (await Deno.readTextFile(`${N}/ports/7/${f}`)).trim();
    assert.deepEqual(
      [await port("addr_trtype"), await port("addr_traddr"), await port("addr_trsvcid")],
      ["tcp", "10.77.0.1", "4427"],
    );
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(`${N}/ports/7/subsystems`))).map((e) => e.name).sort(),
      [SUB, PLAIN].sort(),
    );
    const again = await run(["target", "up", "--prune", "-f", file, "-o", "json"]);
    assert.deepEqual(JSON.parse(again.stdout).steps, []);
  } finally {
    await run(["target", "down", "-f", file, "--force"]);
    await sh(
      `d=/sys/kernel/config/nullb/${NB}; [ -d $d ] && { echo 0 > $d/power; rmdir $d; }; true`,
    );
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
