/**
 * nvmeof as a drop-in for `nvme connect` (lab guest, Linux 6.1): the same command line, every
 * connect flag nvme-cli 2.3 and this kernel both have, given to nvme-cli and to nvmeof against one
 * loopback target (plain configfs writes, memory-backed null_blk): the controller each one makes
 * has the same options as the kernel reports them in sysfs. Over rdma (rxe) and over tcp (with
 * both digests, which only tcp takes). Options nvme-cli 2.3 lacks (-F) are checked against sysfs
 * alone, and an option 6.1 lacks (--tls) is refused before anything is written.
 */
import assert from "node:assert/strict";
import { nvmeof, sh } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000c1";
const HI = "1e4a0000-0000-4000-8000-0000000000c1";
const ADDR = "10.77.0.1";
const N = "/sys/kernel/config/nvmet";
const NQN = "nqn.2024-01.io.nvmeof.e2e:compat";
const NB = "nullb_compat";
const PORTS = { rdma: { id: 91, svc: "4491" }, tcp: { id: 92, svc: "4492" } } as const;

/** What the kernel says of a controller's options (the attributes 6.1 has). */
const ATTRS = [
  "transport",
  "subsysnqn",
  "hostnqn",
  "hostid",
  "queue_count",
  "sqsize",
  "kato",
  "reconnect_delay",
  "ctrl_loss_tmo",
  "fast_io_fail_tmo",
];

const UP = [
  "set -e",
  "modprobe null_blk nr_devices=0; modprobe -a nvmet-rdma nvme-rdma nvmet-tcp nvme-tcp",
  `mkdir /sys/kernel/config/nullb/${NB}`,
  `cd /sys/kernel/config/nullb/${NB}; echo 64 > size; echo 1 > memory_backed; echo 1 > power`,
  `mkdir ${N}/subsystems/${NQN}`,
  `echo 1 > ${N}/subsystems/${NQN}/attr_allow_any_host`,
  `mkdir ${N}/subsystems/${NQN}/namespaces/1`,
  `echo /dev/${NB} > ${N}/subsystems/${NQN}/namespaces/1/device_path`,
  `echo 1 > ${N}/subsystems/${NQN}/namespaces/1/enable`,
  ...Object.entries(PORTS).flatMap(([t, p]) => [
    `mkdir ${N}/ports/${p.id}`,
    `echo ${t} > ${N}/ports/${p.id}/addr_trtype; echo ipv4 > ${N}/ports/${p.id}/addr_adrfam`,
    `echo ${ADDR} > ${N}/ports/${p.id}/addr_traddr; echo ${p.svc} > ${N}/ports/${p.id}/addr_trsvcid`,
    `ln -s ${N}/subsystems/${NQN} ${N}/ports/${p.id}/subsystems/${NQN}`,
  ]),
].join("\n");

const DOWN = [
  `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${NQN}" ] && echo 1 > $c/delete_controller; done`,
  ...Object.values(PORTS).flatMap((p) => [
    `rm -f ${N}/ports/${p.id}/subsystems/${NQN}`,
    `rmdir ${N}/ports/${p.id}`,
  ]),
  `echo 0 > ${N}/subsystems/${NQN}/namespaces/1/enable`,
  `rmdir ${N}/subsystems/${NQN}/namespaces/1`,
  `rmdir ${N}/subsystems/${NQN}`,
  `echo 0 > /sys/kernel/config/nullb/${NB}/power`,
  `rmdir /sys/kernel/config/nullb/${NB}`,
].map((l) => `${l} 2>/dev/null`).join("\n") + "\ntrue";

/** The controllers of NQN now, from sysfs. */
async function controllers(): Promise<string[]> {
  const r = await sh(
    `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${NQN}" ] && basename $c; done; true`,
  );
  return r.stdout.split("\n").filter(Boolean);
}

/** The option attributes of the one controller of NQN; then deletes it. */
async function readAndDrop(who: string): Promise<Record<string, string>> {
  const [c, ...more] = await controllers();
  assert.ok(c, `${who}: no controller of ${NQN}`);
  assert.deepEqual(more, [], `${who}: one controller`);
  const out: Record<string, string> = {};
  for (const a of ATTRS) {
    const r = await sh(`cat /sys/class/nvme/${c}/${a}`);
    assert.equal(r.code, 0, `${who}: /sys/class/nvme/${c}/${a}: ${r.stderr}`);
    out[a] = r.stdout.trim();
  }
  const addr = await sh(`cat /sys/class/nvme/${c}/address`);
  // the address without src_addr's port-independent text: traddr and trsvcid
  out.address = addr.stdout.trim().split(",").filter((f) => !f.startsWith("src_addr")).join(",");
  await sh(`echo 1 > /sys/class/nvme/${c}/delete_controller`);
  assert.deepEqual(await controllers(), [], `${who}: controller deleted`);
  return out;
}

/** Connects with nvme-cli, then with nvmeof, the same ARGS; returns both sysfs views. */
async function bothWays(args: string[]) {
  const cli = await sh(`nvme connect ${args.map((a) => `'${a}'`).join(" ")}`);
  assert.equal(cli.code, 0, `nvme connect ${args.join(" ")}: ${cli.stdout}${cli.stderr}`);
  const byCli = await readAndDrop("nvme-cli");
  const ours = await nvmeof(["connect", ...args, "-v"]);
  assert.equal(ours.code, 0, `nvmeof connect ${args.join(" ")}: ${ours.stdout}${ours.stderr}`);
  const byUs = await readAndDrop("nvmeof");
  return { byCli, byUs };
}

function common(transport: "rdma" | "tcp"): string[] {
  return [
    ...["-t", transport, "-a", ADDR, "-s", PORTS[transport].svc, "-n", NQN],
    ...["-q", HQ, "-I", HI],
  ];
}

Deno.test({
  name: "nvme connect and nvmeof connect with the same flags make the same controller (rdma, tcp)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    try {
      const up = await sh(UP);
      assert.equal(up.code, 0, `target setup failed: ${up.stderr}`);

      // rdma: every option 6.1's nvme-rdma and nvme-cli 2.3 both take
      const rdma = await bothWays([
        ...common("rdma"),
        ..."-i 2 -W 1 -P 1 -Q 64 -k 7 -c 3 -l -1 -T 0 -D --disable-sqflow".split(" "),
      ]);
      console.log(`rdma, both tools: ${JSON.stringify(rdma.byUs)}`);
      assert.deepEqual(rdma.byUs, rdma.byCli);
      assert.equal(rdma.byUs.sqsize, "63", "queue size 64");
      assert.equal(rdma.byUs.reconnect_delay, "3");
      assert.equal(rdma.byUs.ctrl_loss_tmo, "off", "-l -1: never give up");
      assert.equal(rdma.byUs.kato, "7");

      // tcp: the digests and the rest, ctrl-loss-tmo given as -l=N
      const tcp = await bothWays([
        ...common("tcp"),
        ..."-i 1 -W 1 -Q 32 -k 5 -c 2 --ctrl-loss-tmo=30 -T 8 -g -G".split(" "),
      ]);
      console.log(`tcp, both tools: ${JSON.stringify(tcp.byUs)}`);
      assert.deepEqual(tcp.byUs, tcp.byCli);
      assert.equal(tcp.byUs.transport, "tcp");
      assert.equal(tcp.byUs.ctrl_loss_tmo, "30");
      assert.equal(tcp.byUs.sqsize, "31");

      // -F: nvme-cli 2.3 has no such flag; the kernel shows what nvmeof asked for.
      const f = await nvmeof(["connect", ...common("tcp"), "-F", "4", "-l", "20", "-c", "2"]);
      assert.equal(f.code, 0, f.stderr);
      const withF = await readAndDrop("nvmeof -F");
      assert.equal(withF.fast_io_fail_tmo, "4");
      assert.equal(withF.ctrl_loss_tmo, "20");

      // --tls: not in 6.1; refused before the write, saying which Linux has it.
      const tls = await nvmeof(["connect", ...common("tcp"), "--tls"]);
      assert.equal(tls.code, 3, tls.stdout + tls.stderr);
      assert.match(tls.stderr, /--tls needs Linux ≥ 6\.7; this kernel is '6\.1/);
      assert.deepEqual(await controllers(), [], "nothing connected");
    } finally {
      await sh(DOWN);
    }
  },
});

Deno.test({
  name: "-a by host name, connect-all from discovery.conf, disconnect of a list, disconnect-all -r",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const NAME = "storage1.nvmeof-lab.example";
    const etc = await Deno.makeTempDir({ prefix: "nvmeof-e2e-etc-nvme-" });
    try {
      const up = await sh(UP);
      assert.equal(up.code, 0, `target setup failed: ${up.stderr}`);
      // the guest's /etc is a throw-away overlay; the line is removed again below
      await sh(`echo '${ADDR} ${NAME}' >> /etc/hosts`);
      const byName = await nvmeof([
        "connect",
        ...["-t", "tcp", "-a", NAME, "-s", PORTS.tcp.svc, "-n", NQN, "-q", HQ, "-I", HI],
      ]);
      assert.equal(byName.code, 0, byName.stderr);
      const [c] = await controllers();
      const addr = await sh(`cat /sys/class/nvme/${c}/address`);
      assert.match(addr.stdout, new RegExp(`traddr=${ADDR.replaceAll(".", "\\.")},trsvcid=4492`));

      const gone = "nqn.2024-01.io.nvmeof.e2e:not-connected";
      const off = await nvmeof(["disconnect", "-n", `${NQN},${gone}`, "-o", "json"]);
      assert.equal(off.code, 0, off.stderr);
      const offData = JSON.parse(off.stdout);
      assert.deepEqual(offData.controllers.map((r: { device: string }) => r.device), [c]);
      assert.deepEqual(offData.not_connected, [gone]);
      assert.deepEqual(await controllers(), []);

      await Deno.writeTextFile(`${etc}/hostnqn`, HQ + "\n");
      await Deno.writeTextFile(`${etc}/hostid`, HI + "\n");
      await Deno.writeTextFile(
        `${etc}/discovery.conf`,
        `# as nvme-cli reads it\n--transport=tcp --traddr=${ADDR} --trsvcid=${PORTS.tcp.svc} -l -1\n`,
      );
      const all = await nvmeof(["connect-all", "-o", "json"], { env: { NVMEOF_ETC_NVME: etc } });
      assert.equal(all.code, 0, all.stdout + all.stderr);
      const mine = JSON.parse(all.stdout).records.filter((r: { subnqn: string }) =>
        r.subnqn === NQN
      );
      assert.deepEqual(mine.map((r: { status: string; traddr: string }) => r.status), [
        "connected",
      ]);
      const [d] = await controllers();
      assert.equal((await sh(`cat /sys/class/nvme/${d}/ctrl_loss_tmo`)).stdout.trim(), "off");

      const rdma = await nvmeof(["disconnect-all", "-r", "rdma", "-o", "json"]);
      assert.equal(rdma.code, 0, rdma.stderr);
      assert.deepEqual(await controllers(), [d], "-r rdma leaves the tcp controller");
      const tcp = await nvmeof(["disconnect-all", "-r", "tcp"]);
      assert.equal(tcp.code, 0, tcp.stderr);
      assert.deepEqual(await controllers(), []);
    } finally {
      await sh(`sed -i '/${NAME}/d' /etc/hosts`);
      await Deno.remove(etc, { recursive: true }).catch(() => {});
      await sh(DOWN);
    }
  },
});
