/**
 * Host (initiator) side checks: the kernel modules, /dev/nvme-fabrics, the host identity files,
 * and the modules user-space RDMA needs. Modules are read from `<sysfs>/module/<name>` (loaded)
 * and `<libModules>/<release>/modules.dep|modules.builtin` (loadable).
 */
import { fileKind } from "../configfs/libc_fs.ts";
import { runningKernelRelease } from "../host/kernel.ts";
import { readText } from "../host/kfs.ts";
import { readHostFiles } from "../fabrics/host_identity.ts";
import { isUuid } from "../fabrics/option_checks.ts";
import { type Check, check } from "./check.ts";
import { multipathChecks } from "./multipath.ts";
import type { DoctorPaths } from "./kernel_paths.ts";

/** Where a kernel module stands. */
export type ModuleState =
  | { state: "loaded" }
  | { state: "builtin" }
  | { state: "loadable"; file: string }
  | { state: "missing"; release: string }
  | { state: "unknown"; why: string };

function tryRead(path: string, max = 1 << 24): string | undefined {
  try {
    return readText(path, max);
  } catch {
    return undefined;
  }
}

/** Whether module `name` (dashes or underscores) is loaded, built in, loadable or absent. */
export function moduleState(paths: DoctorPaths, name: string): ModuleState {
  const u = name.replaceAll("-", "_");
  if (fileKind(`${paths.sysfs}/module/${u}`, { follow: true }) === "dir") {
    // Built-in modules with parameters also appear here; loaded ones have a refcnt file.
    return fileKind(`${paths.sysfs}/module/${u}/refcnt`) === undefined &&
        fileKind(`${paths.sysfs}/module/${u}/initstate`) === undefined
      ? { state: "builtin" }
      : { state: "loaded" };
  }
  const release = runningKernelRelease(paths.proc);
  if (!release) return { state: "unknown", why: `cannot read ${paths.proc}/sys/kernel/osrelease` };
  const dir = `${paths.libModules}/${release}`;
  const same = (file: string) =>
    file.split("/").pop()!.replace(/\.ko(\.[a-z]+)?$/, "").replaceAll("-", "_") === u;
  const builtin = tryRead(`${dir}/modules.builtin`);
  if (builtin?.split("\n").some((l) => l && same(l))) return { state: "builtin" };
  const dep = tryRead(`${dir}/modules.dep`);
  if (dep === undefined) return { state: "unknown", why: `cannot read ${dir}/modules.dep` };
  const line = dep.split("\n").find((l) => l && same(l.split(":")[0]));
  return line ? { state: "loadable", file: line.split(":")[0] } : { state: "missing", release };
}

/**
 * A module check. `needed` says what the module is for; a loadable module is a warning when the
 * kernel loads it on demand (`autoload`), else a failure.
 */
export function moduleCheck(
  paths: DoctorPaths,
  id: string,
  name: string,
  opts: { needed: string; autoload?: string },
): Check {
  const m = moduleState(paths, name);
  switch (m.state) {
    case "loaded":
      return check(id, "ok", `module ${name} is loaded`);
    case "builtin":
      return check(id, "ok", `module ${name} is built into the kernel`);
    case "loadable":
      return check(
        id,
        opts.autoload ? "warn" : "fail",
        `module ${name} is not loaded (it is installed: ${m.file}); ${opts.needed}` +
          (opts.autoload ? `; ${opts.autoload}` : ""),
        `modprobe ${name}   # and to load it at boot: echo ${name} > /etc/modules-load.d/${name}.conf`,
      );
    case "missing":
      return check(
        id,
        "fail",
        `module ${name} is neither loaded nor installed for kernel ${m.release}; ${opts.needed}`,
        `install the kernel's extra modules (Debian/Ubuntu: apt install linux-modules-extra-${m.release}` +
          ` or linux-image-amd64; RHEL: dnf install kernel-modules-extra), then modprobe ${name}`,
      );
    case "unknown":
      return check(
        id,
        "skip",
        `module ${name} is not loaded; could not determine whether it is installed (${m.why})`,
        `look by hand: modinfo ${name}; then modprobe ${name}`,
      );
  }
}

/** The host identity files: both present, a valid UUID host ID. */
export async function hostIdentityCheck(paths: DoctorPaths): Promise<Check> {
  const id = "host.identity";
  let files;
  try {
    files = await readHostFiles(paths);
  } catch (err) {
    return check(id, "skip", `could not read the host identity: ${(err as Error).message}`);
  }
  const { hostnqn, hostid } = files;
  const gen =
    "nvmeof hostnqn --generate   # writes /etc/nvme/hostnqn and /etc/nvme/hostid together";
  if (!hostnqn && !hostid) {
    return check(
      id,
      "warn",
      `neither ${files.hostnqnSource} nor ${files.hostidSource} exists: connects use the kernel's ` +
        "default host NQN, which changes at every nvme-fabrics module load (targets with allowed_hosts refuse it)",
      gen,
    );
  }
  if (!hostnqn || !hostid) {
    const missing = !hostnqn ? files.hostnqnSource : files.hostidSource;
    return check(
      id,
      "fail",
      `${missing} is missing while its partner exists: the kernel pairs host NQN and host ID, and a ` +
        "host NQN sent without its host ID fails with EINVAL",
      `create the missing half (${
        gen.split("   #")[0]
      } makes a fresh pair; then update the target's allowed_hosts)`,
    );
  }
  if (!isUuid(hostid)) {
    return check(
      id,
      "fail",
      `host ID '${hostid}' in ${files.hostidSource} is not a UUID (the kernel rejects it with EINVAL)`,
      `write a UUID there: uuidgen > ${files.hostidSource} (or ${gen.split("   #")[0]})`,
    );
  }
  return check(id, "ok", `host NQN '${hostnqn}' with host ID ${hostid}`);
}

/** The /dev/nvme-fabrics device. */
export function fabricsDeviceCheck(
  paths: DoctorPaths,
  transport: "rdma" | "tcp" = "rdma",
): Check {
  const dev = `${paths.dev}/nvme-fabrics`;
  const kind = fileKind(dev, { follow: true });
  if (kind !== undefined) return check("host.dev.nvme_fabrics", "ok", `${dev} exists`);
  const m = moduleState(paths, "nvme-fabrics");
  return check(
    "host.dev.nvme_fabrics",
    m.state === "loadable" ? "warn" : "fail",
    `${dev} does not exist` +
      (m.state === "loadable" ? " (module nvme-fabrics is not loaded; it is installed)" : ""),
    `modprobe -a nvme-fabrics nvme-${transport}`,
  );
}

/** All host-side checks; `transport` picks the host transport module and whether RDMA's user space matters. */
export async function hostChecks(
  paths: DoctorPaths,
  transport: "rdma" | "tcp" = "rdma",
): Promise<Check[]> {
  const user = "needed by user-space RDMA (nvmeof doctor's reachability test, rping, perftest)";
  const transportModule = moduleCheck(paths, `host.module.nvme_${transport}`, `nvme-${transport}`, {
    needed: `it is the NVMe/${transport.toUpperCase()} host transport`,
    autoload: `the kernel requests it at the first connect with transport=${transport}`,
  });
  return [
    moduleCheck(paths, "host.module.nvme_fabrics", "nvme-fabrics", {
      needed: "it provides /dev/nvme-fabrics",
      autoload: "nvmeof connect loads it when needed",
    }),
    transportModule,
    fabricsDeviceCheck(paths, transport),
    await hostIdentityCheck(paths),
    ...(transport === "rdma"
      ? [
        moduleCheck(paths, "host.module.ib_uverbs", "ib_uverbs", { needed: user }),
        moduleCheck(paths, "host.module.rdma_ucm", "rdma_ucm", { needed: user }),
      ]
      : []),
    ...await multipathChecks(paths),
  ];
}
