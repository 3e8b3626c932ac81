import assert from "node:assert/strict";
import { doctorPaths } from "../../src/doctor/kernel_paths.ts";
import { fabricsPaths } from "../../src/fabrics/initiator_paths.ts";
import { HOST_PATH_DEFAULTS, hostPaths, pickHostPaths } from "../../src/host_paths.ts";
import { persistPaths } from "../../src/persist/etc_paths.ts";
import { kernelSourceOptions } from "../../src/target/peers.ts";
import { defaultSpecFile } from "../../src/target/spec_file.ts";

const none = () => undefined;

Deno.test("host paths default to the kernel's and FHS roots; an empty variable counts as unset", () => {
  assert.deepEqual(hostPaths(none), {
    sysfs: "/sys",
    proc: "/proc",
    dev: "/dev",
    libModules: "/lib/modules",
    etcNvme: "/etc/nvme",
    etc: "/etc/nvmeof",
    systemd: "/etc/systemd/system",
  });
  assert.equal(hostPaths((n) => (n === "NVMEOF_SYSFS" ? "" : undefined)).sysfs, "/sys");
});

Deno.test("every room's paths come from the one definition, each variable moving its root", () => {
  const env = (n: string) => `/t/${n}`;
  const h = hostPaths(env);
  for (const [k, d] of Object.entries(HOST_PATH_DEFAULTS)) {
    assert.equal(h[k as keyof typeof h], `/t/${d.env}`);
  }
  assert.deepEqual(fabricsPaths(env), { sysfs: h.sysfs, dev: h.dev, etcNvme: h.etcNvme });
  assert.deepEqual(persistPaths(env), { etc: h.etc, systemd: h.systemd, etcNvme: h.etcNvme });
  const d = doctorPaths("/cfg", env);
  assert.deepEqual([d.sysfs, d.proc, d.libModules, d.configfs], [
    h.sysfs,
    h.proc,
    h.libModules,
    "/cfg",
  ]);
  const k = kernelSourceOptions(env);
  assert.deepEqual([k.sysfs, k.proc], [h.sysfs, h.proc]);
  assert.equal(defaultSpecFile(env), "/t/NVMEOF_ETC/target.yaml");
  assert.equal(defaultSpecFile(none), "/etc/nvmeof/target.yaml");
});

Deno.test("pickHostPaths gives a room exactly the roots it names", () => {
  const env = (n: string) => `/t/${n}`;
  assert.deepEqual(pickHostPaths(["proc", "etc"], env), {
    proc: "/t/NVMEOF_PROC",
    etc: "/t/NVMEOF_ETC",
  });
  assert.deepEqual(pickHostPaths([], env), {});
});
