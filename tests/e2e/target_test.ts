/**
 * `nvmeof target` on the real kernel (lab guest): nvmet over Soft-RoCE, with nvme-cli as the
 * independent peer that discovers, connects and does I/O. Each test removes what it made
 * (connections, configfs entries, null_blk and loop devices), even when it fails.
 */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { bash as sh, nvmeof, tempDir } from "../helpers.ts";
import { fileKind } from "../../src/configfs/native.ts";
import { listDir, readText } from "../../src/fabrics/kfs.ts";

// Deno refuses /sys and /dev without --allow-all; the tests read them through libc like nvmeof.

const ADDR = "10.77.0.1";
const HOSTID = "7d3f2b8e-1c4a-4e6b-9f0a-3b5c7d9e1f2a";
const HOSTNQN = `nqn.2014-08.org.nvmexpress:uuid:${HOSTID}`;
const SUB1 = "nqn.2026-10.pk.nextgen:t3-pool-1";
const SUB2 = "nqn.2026-10.pk.nextgen:t3-pool-2";
const NVMET = "/sys/kernel/config/nvmet";

async function must(cmd: string): Promise<string> {
  const r = await sh(cmd);
  assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
  return r.stdout;
}

/** Makes memory-backed null_blk devices and loop devices, and removes them on dispose. */
class Devices implements AsyncDisposable {
  #nullb: string[] = [];
  #loops: string[] = [];
  #dir?: AsyncDisposable & { path: string };

  async nullb(name: string): Promise<string> {
    const dir = `/sys/kernel/config/nullb/${name}`;
    await must(
      `mkdir ${dir} && echo 64 > ${dir}/size && echo 1 > ${dir}/memory_backed && echo 1 > ${dir}/power`,
    );
    this.#nullb.push(dir);
    const index = readText(`${dir}/index`).trim();
    for (const dev of [`/dev/${name}`, `/dev/nullb${index}`]) {
      if (fileKind(dev, { follow: true }) === "block") return dev;
    }
    throw new Error(`null_blk ${name} made no block device`);
  }

  async loop(): Promise<string> {
    this.#dir ??= await tempDir("nvmeof-e2e-loop-");
    const img = `${this.#dir.path}/disk${this.#loops.length}.img`;
    await must(`truncate -s 64M ${img}`);
    const dev = (await must(`losetup -f --show ${img}`)).trim();
    this.#loops.push(dev);
    return dev;
  }

  async [Symbol.asyncDispose]() {
    for (const l of this.#loops) await sh(`losetup -d ${l}`);
    for (const n of this.#nullb) await sh(`echo 0 > ${n}/power; rmdir ${n}`);
    await this.#dir?.[Symbol.asyncDispose]();
  }
}

/** Disconnects every controller of the test's subsystems and clears nvmet, on dispose. */
function cleanup(): AsyncDisposable {
  return {
    async [Symbol.asyncDispose]() {
      for (const s of [SUB1, SUB2]) await sh(`nvme disconnect -n ${s}`);
      const r = await nvmeof(["target", "down", "--all", "--force"]);
      if (r.code !== 0) console.error(`cleanup: target down failed: ${r.stderr}`);
    },
  };
}

function liveTree(): string {
  const out: string[] = [];
  const walk = (p: string) => {
    for (const name of listDir(p)) {
      const f = `${p}/${name}`;
      const kind = fileKind(f);
      if (kind === "link") out.push(`${f} -> link`);
      else if (kind === "dir") {
        out.push(f + "/");
        walk(f);
      } else if (!/revalidate_size|dhchap_key|dhchap_ctrl_key/.test(name)) {
        try {
          out.push(`${f} = ${readText(f).trim()}`);
        } catch {
          out.push(`${f} (unreadable)`);
        }
      }
    }
  };
  walk(NVMET);
  return out.sort().join("\n");
}

function read(path: string): string {
  try {
    return readText(path).trim();
  } catch {
    return "";
  }
}

/** Block devices of a connected subsystem, by nsid (waits for udev-less /dev nodes). */
/**
 * The block devices of `subnqn` by nsid, once at least `want` have appeared (the kernel scans a
 * new controller's namespaces one by one, so the first can show up before the others).
 */
async function namespaceDevices(subnqn: string, want = 1): Promise<Map<number, string>> {
  for (let i = 0; i < 50; i++) {
    const found = new Map<number, string>();
    for (const cls of ["/sys/class/nvme-subsystem", "/sys/class/nvme"]) {
      for (const e of listDir(cls)) {
        if (read(`${cls}/${e}/subsysnqn`) !== subnqn) continue;
        for (const n of listDir(`${cls}/${e}`)) {
          if (!/^nvme\d+n\d+$/.test(n)) continue;
          const nsid = Number(read(`/sys/block/${n}/nsid`) || "0");
          if (nsid && fileKind(`/dev/${n}`, { follow: true }) === "block") {
            found.set(nsid, `/dev/${n}`);
          }
        }
      }
    }
    if (found.size >= want || (found.size && i === 49)) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  return new Map();
}

async function connect(subnqn: string): Promise<void> {
  await must(
    `nvme connect -t rdma -a ${ADDR} -s 4420 -n ${subnqn} --hostnqn ${HOSTNQN} --hostid ${HOSTID}`,
  );
}

/** Writes a random 1 MiB through `dev` and reads it back with direct I/O. */
async function roundTripIo(dev: string, seekMiB: number): Promise<void> {
  await using t = await tempDir("nvmeof-e2e-io-");
  await must(`head -c 1048576 /dev/urandom > ${t.path}/in`);
  await must(
    `dd if=${t.path}/in of=${dev} bs=1M count=1 seek=${seekMiB} oflag=direct conv=fsync status=none`,
  );
  await must(
    `dd if=${dev} of=${t.path}/out bs=1M count=1 skip=${seekMiB} iflag=direct status=none`,
  );
  await must(`cmp ${t.path}/in ${t.path}/out`);
}

function spec(dev: { a: string; b: string; loop: string }) {
  return {
    hosts: [{ nqn: HOSTNQN }],
    subsystems: [
      {
        nqn: SUB1,
        hosts: [HOSTNQN],
        namespaces: [{ nsid: 1, device: dev.a }, { nsid: 2, device: dev.loop }],
      },
      { nqn: SUB2, hosts: [HOSTNQN], namespaces: [{ nsid: 1, device: dev.b }] },
    ],
    ports: [{
      id: 1,
      trtype: "rdma",
      adrfam: "ipv4",
      traddr: ADDR,
      trsvcid: 4420,
      subsystems: [SUB1, SUB2],
    }],
  };
}

Deno.test("target up serves two subsystems over RDMA: nvme-cli discovers, connects and does I/O; up again is a no-op; show round-trips; down empties configfs", async () => {
  await using _c = cleanup();
  await using devs = new Devices();
  await using t = await tempDir("nvmeof-e2e-spec-");
  const dev = {
    a: await devs.nullb("nullb_t3a"),
    b: await devs.nullb("nullb_t3b"),
    loop: await devs.loop(),
  };
  const file = `${t.path}/target.yaml`;
  Deno.writeTextFileSync(file, stringify(spec(dev)));

  const up = await nvmeof(["target", "up", "-f", file]);
  assert.equal(up.code, 0, up.stderr);
  assert.match(up.stdout, /^Apply the spec with \d+ step/);

  const disc = JSON.parse(
    await must(
      `nvme discover -t rdma -a ${ADDR} -s 4420 --hostnqn ${HOSTNQN} --hostid ${HOSTID} -o json`,
    ),
  );
  const subs = (disc.records as Array<{ subtype: string; subnqn: string; trtype: string }>)
    .filter((r) => r.subtype === "nvme subsystem");
  assert.deepEqual(subs.map((r) => r.subnqn).sort(), [SUB1, SUB2]);
  assert.ok(subs.every((r) => r.trtype === "rdma"));

  await connect(SUB1);
  const ns1 = await namespaceDevices(SUB1, 2);
  assert.deepEqual([...ns1.keys()].sort(), [1, 2], "SUB1 shows nsid 1 (null_blk) and 2 (loop)");
  await roundTripIo(ns1.get(1)!, 3);
  await roundTripIo(ns1.get(2)!, 5);

  const again = await nvmeof(["target", "up", "-f", file]);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /^No changes: configfs already matches the spec/);

  const shown = await nvmeof(["target", "show"]);
  assert.equal(shown.code, 0, shown.stderr);
  Deno.writeTextFileSync(`${t.path}/shown.yaml`, shown.stdout);
  const round = await nvmeof(["target", "up", "-f", `${t.path}/shown.yaml`]);
  assert.equal(round.code, 0, round.stderr);
  assert.match(round.stdout, /^No changes/);

  await must(`nvme disconnect -n ${SUB1}`);
  const down = await nvmeof(["target", "down", "-f", file]);
  assert.equal(down.code, 0, down.stderr);
  for (const d of ["hosts", "subsystems", "ports"]) {
    assert.deepEqual(
      listDir(`${NVMET}/${d}`),
      [],
      `${d} is empty`,
    );
  }
});

Deno.test("changing one subsystem's namespace device leaves a host connected to the other subsystem doing I/O", async () => {
  await using _c = cleanup();
  await using devs = new Devices();
  await using t = await tempDir("nvmeof-e2e-spec-");
  const dev = {
    a: await devs.nullb("nullb_t3c"),
    b: await devs.nullb("nullb_t3d"),
    loop: await devs.loop(),
  };
  const file = `${t.path}/target.yaml`;
  const s = spec(dev);
  Deno.writeTextFileSync(file, stringify(s));
  assert.equal((await nvmeof(["target", "up", "-f", file])).code, 0);
  await connect(SUB2);
  const ns2 = await namespaceDevices(SUB2);
  const ctrl2 = (await must(`grep -l ${SUB2} /sys/class/nvme/nvme*/subsysnqn`)).trim();
  await roundTripIo(ns2.get(1)!, 1);

  const other = await devs.nullb("nullb_t3e");
  s.subsystems[0].namespaces[0].device = other;
  Deno.writeTextFileSync(file, stringify(s));
  const dry = await nvmeof(["target", "up", "-f", file, "--dry-run", "-o", "json"]);
  const steps = JSON.parse(dry.stdout).steps.map((
    x: { op: string; path: string; value?: string },
  ) => `${x.op} ${x.path}${x.value !== undefined ? " = " + x.value : ""}`);
  const ns = `subsystems/${SUB1}/namespaces/1`;
  assert.deepEqual(steps, [
    `write ${ns}/enable = 0`,
    `write ${ns}/device_path = ${other}`,
    `write ${ns}/enable = 1`,
  ]);
  const up = await nvmeof(["target", "up", "-f", file]);
  assert.equal(up.code, 0, up.stderr);
  assert.equal(read(`${NVMET}/${ns}/device_path`), other);

  await roundTripIo(ns2.get(1)!, 2);
  const state = read(ctrl2.replace(/subsysnqn$/, "state"));
  assert.equal(state, "live", "the other subsystem's controller never reconnected");
});

Deno.test("an unknown device and an address not configured are refused with the tree unchanged", async () => {
  await using _c = cleanup();
  await using devs = new Devices();
  await using t = await tempDir("nvmeof-e2e-spec-");
  const dev = {
    a: await devs.nullb("nullb_t3f"),
    b: await devs.nullb("nullb_t3g"),
    loop: await devs.loop(),
  };
  const file = `${t.path}/target.yaml`;
  const s = spec(dev);
  Deno.writeTextFileSync(file, stringify(s));
  assert.equal((await nvmeof(["target", "up", "-f", file])).code, 0);
  const before = liveTree();

  const bad = structuredClone(s);
  bad.subsystems[1].namespaces[0].device = "/dev/nullb_t3_missing";
  Deno.writeTextFileSync(`${t.path}/bad-dev.yaml`, stringify(bad));
  const r1 = await nvmeof(["target", "up", "-f", `${t.path}/bad-dev.yaml`]);
  assert.equal(r1.code, 1);
  assert.match(
    r1.stderr,
    /subsystems\[1\]\.namespaces\[0\]\.device: device '\/dev\/nullb_t3_missing' does not exist/,
  );
  assert.equal(liveTree(), before);

  const moved = structuredClone(s) as ReturnType<typeof spec> & {
    ports: Array<Record<string, unknown>>;
  };
  moved.ports.push({
    id: 2,
    trtype: "rdma",
    adrfam: "ipv4",
    traddr: "10.77.0.99",
    trsvcid: 4420,
    subsystems: [SUB2],
  });
  moved.subsystems[0].namespaces.push({ nsid: 3, device: dev.b });
  Deno.writeTextFileSync(`${t.path}/bad-addr.yaml`, stringify(moved));
  const r2 = await nvmeof(["target", "up", "-f", `${t.path}/bad-addr.yaml`]);
  assert.equal(r2.code, 1, r2.stdout);
  assert.match(
    r2.stderr,
    /EADDRNOTAVAIL \(99\)\. The \d+ earlier step\(s\) of this run were rolled back; configfs is as before\./,
  );
  assert.match(r2.stderr, /not an address configured on this host/);
  assert.equal(liveTree(), before);
});

Deno.test("the one-line form exports a device that nvme-cli can connect to, and down --all removes it", async () => {
  await using _c = cleanup();
  await using devs = new Devices();
  const dev = await devs.nullb("nullb_t3h");
  const args = [
    "target",
    "up",
    "--nqn",
    SUB1,
    "--device",
    dev,
    "--traddr",
    ADDR,
    "--allow-host",
    HOSTNQN,
  ];
  const up = await nvmeof(args);
  assert.equal(up.code, 0, up.stderr);
  assert.match((await nvmeof(args)).stdout, /^No changes/);
  await connect(SUB1);
  const ns = await namespaceDevices(SUB1);
  await roundTripIo(ns.get(1)!, 0);
  const busy = await nvmeof(["target", "down", "--all"]);
  await must(`nvme disconnect -n ${SUB1}`);
  const down = await nvmeof(["target", "down", "--all"]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(busy.code, 1, "down refuses while a host is connected");
  assert.match(busy.stderr, /Hosts are still connected/);
  assert.deepEqual(listDir(`${NVMET}/subsystems`), []);
});
