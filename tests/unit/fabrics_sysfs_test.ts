import assert from "node:assert/strict";
import { EnvironmentError, UsageError } from "../../src/errors.ts";
import {
  generateHostFiles,
  resolveHostIdentity,
  uuidOfNqn,
} from "../../src/fabrics/host_identity.ts";
import type { FabricsPaths } from "../../src/fabrics/initiator_paths.ts";
import {
  listControllers,
  listSubsystems,
  matchesConnection,
  parseAddress,
} from "../../src/fabrics/sysfs.ts";
import { listDir, readText } from "../../src/host/kfs.ts";
import { tempDir } from "../helpers.ts";

const HQ = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001";
const HI = "5a1e0000-0000-4000-8000-000000000001";

/** Writes a sysfs-like tree: one rdma subsystem with a multipath head, one discovery subsystem. */
export async function fakeSysfs(root: string): Promise<void> {
  const w = async (path: string, text: string) => {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text + "\n");
  };
  const ctrl = async (name: string, nqn: string, state: string, trsvcid: string) => {
    const d = `sys/class/nvme/${name}`;
    await w(`${d}/transport`, "rdma");
    await w(`${d}/address`, `traddr=10.77.0.1,trsvcid=${trsvcid}`);
    await w(`${d}/subsysnqn`, nqn);
    await w(`${d}/hostnqn`, HQ);
    await w(`${d}/hostid`, HI);
    await w(`${d}/cntlid`, "1");
    await w(`${d}/state`, state);
  };
  await ctrl("nvme1", "nqn.2024-01.io.example:a", "live", "4420");
  await w("sys/class/nvme/nvme1/nvme1c1n1/nsid", "1");
  await w("sys/class/nvme/nvme1/nvme1c1n1/size", "131072");
  await ctrl("nvme10", "nqn.2024-01.io.example:b", "deleting", "4420");
  await w("sys/class/nvme-subsystem/nvme-subsys1/subsysnqn", "nqn.2024-01.io.example:a");
  await w("sys/class/nvme-subsystem/nvme-subsys1/subsystype", "nvm");
  await w("sys/class/nvme-subsystem/nvme-subsys1/iopolicy", "numa");
  await Deno.mkdir(`${root}/sys/class/nvme-subsystem/nvme-subsys1/nvme1`);
  await w("sys/class/nvme-subsystem/nvme-subsys1/nvme1n1/nsid", "1");
  await w("sys/class/nvme-subsystem/nvme-subsys1/nvme1n1/size", "131072");
}

function paths(root: string): FabricsPaths {
  return { sysfs: `${root}/sys`, dev: `${root}/dev`, etcNvme: `${root}/etc/nvme` };
}

Deno.test("sysfs address attribute parses into its tokens", () => {
  assert.deepEqual(parseAddress("traddr=10.0.0.2,trsvcid=4420,host_traddr=10.0.0.1\n"), {
    traddr: "10.0.0.2",
    trsvcid: "4420",
    host_traddr: "10.0.0.1",
  });
  assert.deepEqual(parseAddress(""), {});
});

Deno.test("controllers are read from class/nvme in numeric order with their namespaces", async () => {
  await using dir = await tempDir();
  await fakeSysfs(dir.path);
  const cs = await listControllers(paths(dir.path));
  assert.deepEqual(cs.map((c) => c.name), ["nvme1", "nvme10"]);
  assert.equal(cs[0].address.traddr, "10.77.0.1");
  assert.equal(cs[0].hostnqn, HQ);
  assert.deepEqual(cs[0].namespaces, [
    {
      name: "nvme1n1",
      device: `${dir.path}/dev/nvme1n1`,
      nsid: 1,
      size: 64 * 1024 * 1024,
      path: "nvme1c1n1",
    },
  ]);
});

Deno.test("subsystems list their controllers and shared namespace heads", async () => {
  await using dir = await tempDir();
  await fakeSysfs(dir.path);
  const [s] = await listSubsystems(paths(dir.path));
  assert.equal(s.subsysnqn, "nqn.2024-01.io.example:a");
  assert.equal(s.subsystype, "nvm");
  assert.deepEqual(s.controllers.map((c) => c.name), ["nvme1"]);
  assert.deepEqual(s.namespaces.map((n) => [n.name, n.size]), [["nvme1n1", 67108864]]);
});

Deno.test("a subsystem's path devices take nsid, size and block size from their head, read once", async () => {
  await using dir = await tempDir();
  await fakeSysfs(dir.path);
  const head = `${dir.path}/sys/class/nvme-subsystem/nvme-subsys1/nvme1n1`;
  await Deno.mkdir(`${head}/queue`);
  await Deno.writeTextFile(`${head}/queue/logical_block_size`, "4096\n");
  // The path's own attributes say otherwise: listSubsystems must not read them.
  const path = `${dir.path}/sys/class/nvme/nvme1/nvme1c1n1`;
  await Deno.writeTextFile(`${path}/nsid`, "7\n");
  await Deno.writeTextFile(`${path}/size`, "8\n");
  await Deno.writeTextFile(`${path}/ana_state`, "optimized\n");
  const [s] = await listSubsystems(paths(dir.path));
  assert.deepEqual(s.controllers[0].namespaces, [{
    name: "nvme1n1",
    device: `${dir.path}/dev/nvme1n1`,
    nsid: 1,
    size: 64 * 1024 * 1024,
    sector_size: 4096,
    path: "nvme1c1n1",
    ana_state: "optimized",
  }]);
  assert.deepEqual(s.namespaces[0].paths.map((p) => [p.name, p.ana_state]), [
    ["nvme1c1n1", "optimized"],
  ]);
  assert.equal(s.namespaces[0].sector_size, 4096);
  // A controller read alone has no head at hand: its path device's own attributes.
  const [alone] = await listControllers(paths(dir.path));
  assert.deepEqual([alone.namespaces[0].nsid, alone.namespaces[0].size], [7, 8 * 512]);
});

Deno.test("a controller being deleted does not count as an existing connection", async () => {
  await using dir = await tempDir();
  await fakeSysfs(dir.path);
  const [a, b] = await listControllers(paths(dir.path));
  const key = { transport: "rdma", traddr: "10.77.0.1", trsvcid: "4420", hostnqn: HQ };
  assert.ok(matchesConnection(a, { ...key, subsysnqn: "nqn.2024-01.io.example:a" }));
  assert.ok(
    !matchesConnection(a, { ...key, subsysnqn: "nqn.2024-01.io.example:a", trsvcid: "4421" }),
  );
  assert.ok(
    !matchesConnection(a, { ...key, subsysnqn: "nqn.2024-01.io.example:a", hostnqn: "nqn.other" }),
  );
  assert.ok(!matchesConnection(b, { ...key, subsysnqn: "nqn.2024-01.io.example:b" }));
});

Deno.test("an absent sysfs gives empty lists, not errors", async () => {
  await using dir = await tempDir();
  assert.deepEqual(await listControllers(paths(dir.path)), []);
  assert.deepEqual(await listSubsystems(paths(dir.path)), []);
  assert.deepEqual(listDir(`${dir.path}/nope`), []);
  assert.throws(() => readText(`${dir.path}/nope`), /ENOENT/);
});

Deno.test("host identity: a UUID host NQN gives its host ID", async () => {
  await using dir = await tempDir();
  assert.equal(uuidOfNqn(HQ), HI);
  assert.equal(uuidOfNqn("nqn.2024-01.io.example:h"), undefined);
  const id = await resolveHostIdentity({ hostnqn: HQ }, paths(dir.path), () => undefined);
  assert.equal(id.hostid, HI);
});

Deno.test("host identity: a non-UUID host NQN without -I is refused (kernel pairing rule)", async () => {
  await using dir = await tempDir();
  await assert.rejects(
    () =>
      resolveHostIdentity(
        { hostnqn: "nqn.2024-01.io.example:h" },
        paths(dir.path),
        () => undefined,
      ),
    (e: Error) => e instanceof UsageError && /needs its host ID/.test(e.message),
  );
  await assert.rejects(
    () => resolveHostIdentity({ hostid: HI }, paths(dir.path), () => undefined),
    /needs its host NQN/,
  );
});

Deno.test("host identity: no files and no flags is an environment error naming the fix", async () => {
  await using dir = await tempDir();
  await assert.rejects(
    () => resolveHostIdentity({}, paths(dir.path), () => undefined),
    (e: Error) =>
      e instanceof EnvironmentError && /hostnqn --generate/.test((e as EnvironmentError).hint!),
  );
});

Deno.test("host identity: LIBNVME_HOSTNQN/LIBNVME_HOSTID override the files", async () => {
  await using dir = await tempDir();
  const env = (n: string) =>
    ({ LIBNVME_HOSTNQN: "nqn.2024-01.io.example:h", LIBNVME_HOSTID: HI })[n];
  const id = await resolveHostIdentity({}, paths(dir.path), env);
  assert.equal(id.hostnqn, "nqn.2024-01.io.example:h");
  assert.equal(id.hostnqnSource, "env LIBNVME_HOSTNQN");
});

Deno.test("--generate writes a matching pair, then never overwrites", async () => {
  await using dir = await tempDir();
  const p = paths(dir.path);
  const first = await generateHostFiles(p);
  assert.equal(first.written.length, 2);
  assert.equal(first.hostnqn, `nqn.2014-08.org.nvmexpress:uuid:${first.hostid}`);
  assert.equal((await Deno.readTextFile(`${p.etcNvme}/hostid`)).trim(), first.hostid);
  const second = await generateHostFiles(p);
  assert.deepEqual(second.written, []);
  assert.equal(second.hostid, first.hostid);
  const id = await resolveHostIdentity({}, p, () => undefined);
  assert.equal(id.hostnqn, first.hostnqn);
});

Deno.test("--generate takes the host ID from an existing UUID host NQN", async () => {
  await using dir = await tempDir();
  const p = paths(dir.path);
  await Deno.mkdir(p.etcNvme, { recursive: true });
  await Deno.writeTextFile(`${p.etcNvme}/hostnqn`, HQ + "\n");
  const g = await generateHostFiles(p);
  assert.equal(g.hostid, HI);
  assert.deepEqual(g.written, [`${p.etcNvme}/hostid`]);
  assert.equal((await Deno.readTextFile(`${p.etcNvme}/hostnqn`)).trim(), HQ);
});
