/**
 * `list`, `list-subsys` and `list --paths` against nvme-cli on the real kernel (lab guest, Linux
 * 6.1 with native multipath): one subsystem exported on an rdma port and a tcp port of the
 * loopback target (plain configfs writes; the tcp port's ANA group 1 non-optimized), connected
 * once through each, so the host has one head and two paths. nvme-cli and nvmeof read the same
 * state; their JSON is compared key for key and value for value. Everything is removed even when
 * an assertion fails. nvmeof runs as few times as possible (each start is slow under TCG).
 */
import assert from "node:assert/strict";
import { nvmeof, sh } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:1e4a0000-0000-4000-8000-0000000000c9";
const HI = "1e4a0000-0000-4000-8000-0000000000c9";
const NQN = "nqn.2024-01.io.nvmeof.e2e:list-compat";
const ADDR = "10.77.0.1";
const N = "/sys/kernel/config/nvmet";
const NB = "nullb_listc";
const PORTS = [
  { id: 91, trtype: "rdma", svc: "4491", ana: "optimized" },
  { id: 92, trtype: "tcp", svc: "4492", ana: "non-optimized" },
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
  ...PORTS.flatMap((p) => [
    `mkdir ${N}/ports/${p.id}`,
    `echo ${p.trtype} > ${N}/ports/${p.id}/addr_trtype; echo ipv4 > ${N}/ports/${p.id}/addr_adrfam`,
    `echo ${ADDR} > ${N}/ports/${p.id}/addr_traddr; echo ${p.svc} > ${N}/ports/${p.id}/addr_trsvcid`,
    `echo ${p.ana} > ${N}/ports/${p.id}/ana_groups/1/ana_state`,
    `ln -s ${N}/subsystems/${NQN} ${N}/ports/${p.id}/subsystems/${NQN}`,
  ]),
].join("\n");

const DOWN = [
  `for p in ${
    PORTS.map((p) => p.id).join(" ")
  }; do echo optimized > ${N}/ports/$p/ana_groups/1/ana_state; done`,
  `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${NQN}" ] && echo 1 > $c/delete_controller; done`,
  ...PORTS.flatMap((
    p,
  ) => [`rm -f ${N}/ports/${p.id}/subsystems/${NQN}`, `rmdir ${N}/ports/${p.id}`]),
  `echo 0 > ${N}/subsystems/${NQN}/namespaces/1/enable`,
  `rmdir ${N}/subsystems/${NQN}/namespaces/1`,
  `rmdir ${N}/subsystems/${NQN}`,
  `echo 0 > /sys/kernel/config/nullb/${NB}/power`,
  `rmdir /sys/kernel/config/nullb/${NB}`,
].map((l) => `${l} 2>/dev/null`).join("\n");

async function json<T>(script: string): Promise<T> {
  const r = await sh(script);
  assert.equal(r.code, 0, `${script}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

async function ours<T>(args: string[]): Promise<T> {
  const r = await nvmeof([...args, "-o", "json"]);
  assert.equal(r.code, 0, `nvmeof ${args.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

interface Host {
  HostNQN: string;
  HostID?: string;
  Subsystems: { Name: string; NQN: string; Paths: { Name: string }[] }[];
}

/** Our subsystem under our host, its paths ordered by controller name (nvme-cli 2.3 lists newest first). */
function mine(hosts: Host[]) {
  const h = hosts.find((x) => x.HostNQN === HQ);
  assert.ok(h, `host ${HQ} listed`);
  const s = h.Subsystems.find((x) => x.NQN === NQN);
  assert.ok(s, `${NQN} listed`);
  const byName = (a: { Name: string }, b: { Name: string }) =>
    a.Name.localeCompare(b.Name, "en", { numeric: true });
  return {
    host: { ...h, Subsystems: undefined },
    subsystem: { ...s, Paths: s.Paths.sort(byName) },
  };
}

Deno.test("two paths to one subsystem: list, list-subsys and list --paths agree with nvme-cli key for key", async () => {
  try {
    const made = await sh(UP);
    assert.equal(made.code, 0, `target setup failed: ${made.stderr}`);
    for (const p of PORTS) {
      const c = await nvmeof([
        "connect",
        "-t",
        p.trtype,
        "-a",
        ADDR,
        "-s",
        p.svc,
        "-n",
        NQN,
        "-q",
        HQ,
        "-I",
        HI,
        "-i",
        "1",
      ]);
      assert.equal(c.code, 0, `connect over ${p.trtype}: ${c.stderr}`);
    }
    // The head appears when the namespace is scanned, a moment after the connect returns.
    const settle = await sh(
      `for i in $(seq 50); do n=$(ls -d /sys/class/nvme/nvme*/nvme*c*n1 2>/dev/null | ` +
        `while read d; do [ "$(cat $(dirname $d)/subsysnqn)" = "${NQN}" ] && echo $d; done | wc -l); ` +
        `[ "$n" = 2 ] && exit 0; sleep 0.2; done; exit 1`,
    );
    assert.equal(settle.code, 0, "both paths appear in sysfs");
    const subsys = (await sh(
      `for s in /sys/class/nvme-subsystem/nvme-subsys*; do [ "$(cat $s/subsysnqn)" = "${NQN}" ] && basename $s; done`,
    )).stdout.trim();
    assert.match(subsys, /^nvme-subsys\d+$/);
    const must = await sh(`echo round-robin > /sys/class/nvme-subsystem/${subsys}/iopolicy`);
    assert.equal(must.code, 0, must.stderr);
    const head = `nvme${subsys.slice("nvme-subsys".length)}n1`;

    // nvme list -o json: our head's entry is the same object, key for key, value for value.
    type Devices = { Devices: Record<string, unknown>[] };
    const theirList = await json<Devices>("nvme list -o json");
    const ourList = await ours<Devices>(["list"]);
    const pick = (d: Devices) => d.Devices.filter((x) => x.DevicePath === `/dev/${head}`);
    assert.equal(pick(theirList).length, 1, `nvme list shows /dev/${head}`);
    assert.deepEqual(pick(ourList), pick(theirList));
    assert.deepEqual(
      ourList.Devices.map((x) => x.DevicePath).sort(),
      theirList.Devices.map((x) => x.DevicePath).sort(),
      "the same devices",
    );
    assert.equal(pick(ourList)[0].PhysicalSize, 64 * 1024 * 1024);

    // nvme list-subsys -o json, and with the namespace named (ANAState per path).
    for (const arg of ["", `/dev/${head}`]) {
      const theirs = mine(await json<Host[]>(`nvme list-subsys ${arg} -o json`));
      const us = mine(await ours<Host[]>(["list-subsys", ...(arg ? [arg] : [])]));
      assert.deepEqual(us, theirs, `list-subsys ${arg}`);
      assert.equal(theirs.subsystem.Paths.length, 2);
    }
    const named = mine(await ours<Host[]>(["list-subsys", head])).subsystem.Paths as unknown as {
      Transport: string;
      ANAState: string;
      State: string;
    }[];
    assert.deepEqual(
      named.map((p) => [p.Transport, p.State, p.ANAState]).sort(),
      [["rdma", "live", "optimized"], ["tcp", "live", "non-optimized"]],
    );

    // nvmeof's path view: the head, both paths with their ANA states, the iopolicy.
    const view = await ours<
      {
        subsystems: {
          name: string;
          subsysnqn: string;
          iopolicy: string;
          multipath: boolean;
          namespaces: { name: string; paths: { transport: string; ana_state: string }[] }[];
        }[];
      }
    >(["list", "--paths"]);
    const s = view.subsystems.find((x) => x.subsysnqn === NQN)!;
    assert.equal(s.name, subsys);
    assert.equal(s.multipath, true);
    assert.equal(s.iopolicy, "round-robin");
    assert.equal(s.namespaces[0].name, head);
    assert.deepEqual(
      s.namespaces[0].paths.map((p) => [p.transport, p.ana_state]).sort(),
      [["rdma", "optimized"], ["tcp", "non-optimized"]],
    );

    // The target makes the tcp path inaccessible (an ANA change): nvme-cli and nvmeof read the
    // new state alike, and doctor names the path.
    const tcpPath = (await sh(
      `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${NQN}" ] && ` +
        `[ "$(cat $c/transport)" = tcp ] && basename $c; done`,
    )).stdout.trim();
    const rdmaPath = (await sh(
      `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn)" = "${NQN}" ] && ` +
        `[ "$(cat $c/transport)" = rdma ] && basename $c; done`,
    )).stdout.trim();
    const anaFile = `/sys/class/nvme/${tcpPath}/${
      head.replace(/n(\d+)$/, `c${tcpPath.slice(4)}n$1`)
    }/ana_state`;
    await sh(`echo inaccessible > ${N}/ports/${PORTS[1].id}/ana_groups/1/ana_state`);
    const changed = await sh(
      `for i in $(seq 150); do [ "$(cat ${anaFile})" = inaccessible ] && exit 0; sleep 0.2; done; exit 1`,
    );
    assert.equal(changed.code, 0, `${anaFile} becomes inaccessible`);
    assert.deepEqual(
      mine(await ours<Host[]>(["list-subsys", head])),
      mine(await json<Host[]>(`nvme list-subsys /dev/${head} -o json`)),
      "after the ANA change",
    );
    type Report = { checks: { id: string; status: string; seen: string; fix?: string }[] };
    const doctor = async () => {
      const r = await nvmeof(["doctor", "--role", "initiator", "-o", "json"]);
      const rep = JSON.parse(r.stdout) as Report;
      const get = (id: string) => {
        const c = rep.checks.find((x) => x.id === id);
        assert.ok(c, `no ${id} in ${rep.checks.map((x) => x.id).join(", ")}`);
        return c;
      };
      return { multipath: get("host.multipath"), paths: get(`host.paths.${subsys}`) };
    };
    const d1 = await doctor();
    assert.equal(d1.multipath.status, "ok", d1.multipath.seen);
    assert.equal(d1.paths.status, "warn", d1.paths.seen);
    assert.match(d1.paths.seen, /iopolicy round-robin, 2 paths/);
    assert.match(
      d1.paths.seen,
      new RegExp(`${tcpPath} tcp ${ADDR}:${PORTS[1].svc} live inaccessible`),
    );
    assert.match(d1.paths.fix!, new RegExp(`path ${tcpPath} is ANA inaccessible`));

    // The rdma port goes away: its path leaves 'live', nothing carries I/O, doctor fails it.
    await sh(`rm ${N}/ports/${PORTS[0].id}/subsystems/${NQN}`);
    const down = await sh(
      `for i in $(seq 300); do [ "$(cat /sys/class/nvme/${rdmaPath}/state)" != live ] && exit 0; ` +
        `sleep 0.2; done; exit 1`,
    );
    assert.equal(down.code, 0, `${rdmaPath} leaves live`);
    const d2 = await doctor();
    assert.equal(d2.paths.status, "fail", d2.paths.seen);
    assert.match(
      d2.paths.seen,
      new RegExp(`${rdmaPath} rdma ${ADDR}:${PORTS[0].svc} (connecting|resetting)`),
    );
    assert.match(d2.paths.fix!, new RegExp(`^no usable path to ${head}`));
    // Without a usable path the head refuses Identify: nvme-cli leaves it out of its list, and so
    // does nvmeof, naming it on stderr with exit 1.
    const gone = (d: Devices) => d.Devices.filter((x) => x.DevicePath === `/dev/${head}`);
    assert.deepEqual(gone(await json<Devices>("nvme list -o json")), []);
    const partial = await nvmeof(["list", "-o", "json"]);
    assert.equal(partial.code, 1, partial.stderr);
    assert.deepEqual(gone(JSON.parse(partial.stdout)), []);
    assert.match(partial.stderr, new RegExp(`${head} is left out: `));

    // nvme-cli cannot Identify a namespace without a usable path, so it drops it and lists the
    // controllers without ANAState; nvmeof reads the paths from sysfs and still shows them.
    const theirs = mine(await json<Host[]>(`nvme list-subsys /dev/${head} -o json`)).subsystem;
    const us = mine(await ours<Host[]>(["list-subsys", head])).subsystem;
    type P = { Name: string; State: string; ANAState?: string; Address: string };
    const states = (x: typeof us) =>
      (x.Paths as unknown as P[]).map((p) => [p.Name, p.Address, p.State === "live"]);
    assert.deepEqual(states(us), states(theirs), "after the rdma port went away");
    assert.deepEqual(
      (us.Paths as unknown as P[]).map((p) => [p.Name, p.ANAState]),
      [[rdmaPath, "optimized"], [tcpPath, "inaccessible"]].sort((a, b) =>
        a[0].localeCompare(b[0], "en", { numeric: true })
      ),
    );
  } finally {
    await sh(DOWN);
  }
});
