/**
 * nvmeof with a plain directory standing in for nvmet configfs (tests/standin/configfs.ts): the
 * entry point of the cli tier's target tests, run by tests/standin/nvmeof. It passes its
 * TargetEnv to the product's main, which knows nothing of stand-ins.
 *
 * NVMEOF_CONFIGFS_FAIL injects failures (`#3=EIO;link ports/1/subsystems/x=EADDRNOTAVAIL`) to
 * prove rollback. Connected hosts are read as on the kernel: TCP from NVMEOF_PROC's net/tcp,
 * subsystem hosts below NVMEOF_SYSFS; RDMA CM ids, which the kernel gives through netlink, from
 * the JSON list in the file NVMEOF_STANDIN_CM_IDS names (none without it).
 */
import { main } from "../../main.ts";
import { fileKind } from "../../src/configfs/libc_fs.ts";
import type { CmIdEntry } from "../../src/rdma/restrack.ts";
import { kernelSourceOptions, kernelSources } from "../../src/target/peers.ts";
import type { TargetEnv } from "../../src/target/env.ts";
import { parseFailures, StandinConfigfs } from "./configfs.ts";

function standinCmIds(): CmIdEntry[] {
  const file = Deno.env.get("NVMEOF_STANDIN_CM_IDS");
  return file ? JSON.parse(Deno.readTextFileSync(file)) as CmIdEntry[] : [];
}

const target: TargetEnv = {
  // The stand-in is a directory of the test's own: its owner may change it, as root may configfs.
  requireWriter() {},
  open(configfs, options) {
    const root = `${configfs}/nvmet`;
    if (!options.prepare && fileKind(root, { follow: true }) === undefined) return undefined;
    const failures = parseFailures(Deno.env.get("NVMEOF_CONFIGFS_FAIL") ?? "");
    return new StandinConfigfs(root, { failures });
  },
  peers: () => Promise.resolve({ ...kernelSources(kernelSourceOptions()), cmIds: standinCmIds }),
};

Deno.exit(await main(Deno.args, { target }));
