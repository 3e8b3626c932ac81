/**
 * The doctor's host checks against temporary sysfs, procfs, /lib/modules, /dev and /etc/nvme
 * trees.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers.ts";
import {
  fabricsDeviceCheck,
  hostIdentityCheck,
  moduleCheck,
  moduleState,
} from "../../src/doctor/host.ts";
import type { DoctorPaths } from "../../src/doctor/kernel_paths.ts";

async function tree(root: string, files: Record<string, string>): Promise<DoctorPaths> {
  for (const [p, text] of Object.entries(files)) {
    const full = `${root}/${p}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    if (p.endsWith("/")) continue;
    await Deno.writeTextFile(full, text);
  }
  for (const d of ["sys", "proc", "dev", "etc/nvme", "lib/modules"]) {
    await Deno.mkdir(`${root}/${d}`, { recursive: true });
  }
  return {
    sysfs: `${root}/sys`,
    proc: `${root}/proc`,
    dev: `${root}/dev`,
    etcNvme: `${root}/etc/nvme`,
    libModules: `${root}/lib/modules`,
    configfs: `${root}/config`,
  };
}

const KERNEL = {
  "proc/sys/kernel/osrelease": "6.1.0-57-amd64\n",
  "lib/modules/6.1.0-57-amd64/modules.dep":
    "kernel/drivers/nvme/host/nvme-rdma.ko.xz: kernel/drivers/nvme/host/nvme-fabrics.ko.xz\n" +
    "kernel/drivers/nvme/host/nvme-fabrics.ko.xz: kernel/drivers/nvme/host/nvme-core.ko.xz\n",
  "lib/modules/6.1.0-57-amd64/modules.builtin": "kernel/drivers/infiniband/core/ib_uverbs.ko\n",
  "sys/module/nvme_fabrics/refcnt": "1\n",
};

Deno.test("module state: loaded, built in, installed but not loaded, and not installed", async () => {
  await using d = await tempDir();
  const paths = await tree(d.path, KERNEL);
  assert.equal(moduleState(paths, "nvme-fabrics").state, "loaded");
  assert.equal(moduleState(paths, "ib_uverbs").state, "builtin");
  assert.deepEqual(moduleState(paths, "nvme-rdma"), {
    state: "loadable",
    file: "kernel/drivers/nvme/host/nvme-rdma.ko.xz",
  });
  assert.deepEqual(moduleState(paths, "rdma_ucm"), { state: "missing", release: "6.1.0-57-amd64" });
});

Deno.test("module check: nvme-rdma installed but not loaded warns with modprobe; missing fails with the package", async () => {
  await using d = await tempDir();
  const paths = await tree(d.path, KERNEL);
  const w = moduleCheck(paths, "host.module.nvme_rdma", "nvme-rdma", {
    needed: "x",
    autoload: "the kernel loads it",
  });
  assert.equal(w.status, "warn");
  assert.match(w.seen, /module nvme-rdma is not loaded \(it is installed/);
  assert.match(w.fix!, /^modprobe nvme-rdma/);
  const f = moduleCheck(paths, "host.module.rdma_ucm", "rdma_ucm", { needed: "x" });
  assert.equal(f.status, "fail");
  assert.match(f.fix!, /linux-modules-extra-6\.1\.0-57-amd64/);
  assert.equal(moduleCheck(paths, "m", "nvme-fabrics", { needed: "x" }).status, "ok");
});

Deno.test("module check: without modules.dep it says it could not determine", async () => {
  await using d = await tempDir();
  const paths = await tree(d.path, { "proc/sys/kernel/osrelease": "9.9.9\n" });
  const c = moduleCheck(paths, "m", "nvme-rdma", { needed: "x" });
  assert.equal(c.status, "skip");
  assert.match(c.seen, /could not determine whether it is installed/);
});

Deno.test("host identity: both files ok; one missing fails; neither warns; a bad host ID fails", async () => {
  const nqn = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555";
  await using d = await tempDir();
  const paths = await tree(d.path, {});
  // The env overrides of the real host would hide the files: tests run without them.
  if (
    Deno.env.get("LIBNVME_HOSTNQN") !== undefined || Deno.env.get("LIBNVME_HOSTID") !== undefined
  ) {
    console.log("skipped: LIBNVME_HOSTNQN/LIBNVME_HOSTID are set and override the files");
    return;
  }
  assert.equal((await hostIdentityCheck(paths)).status, "warn");
  await Deno.writeTextFile(`${paths.etcNvme}/hostnqn`, nqn + "\n");
  const one = await hostIdentityCheck(paths);
  assert.equal(one.status, "fail");
  assert.match(one.seen, /hostid is missing while its partner exists/);
  await Deno.writeTextFile(`${paths.etcNvme}/hostid`, "not-a-uuid\n");
  assert.equal((await hostIdentityCheck(paths)).status, "fail");
  await Deno.writeTextFile(`${paths.etcNvme}/hostid`, "11111111-2222-4333-8444-555555555555\n");
  const ok = await hostIdentityCheck(paths);
  assert.equal(ok.status, "ok");
  assert.ok(ok.seen.includes(nqn));
});

Deno.test("/dev/nvme-fabrics: present ok; absent with nvme-fabrics installed warns with modprobe", async () => {
  await using d = await tempDir();
  const paths = await tree(d.path, { ...KERNEL, "sys/module/nvme_fabrics/refcnt": "" });
  await Deno.remove(`${paths.sysfs}/module/nvme_fabrics`, { recursive: true });
  const w = fabricsDeviceCheck(paths);
  assert.equal(w.status, "warn");
  assert.match(w.fix!, /modprobe -a nvme-fabrics nvme-rdma/);
  await Deno.writeTextFile(`${paths.dev}/nvme-fabrics`, "");
  assert.equal(fabricsDeviceCheck(paths).status, "ok");
});
