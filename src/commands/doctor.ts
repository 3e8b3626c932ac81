/**
 * `nvmeof doctor`: the NVMe-oF/RDMA troubleshooting checklist as a command. It names the real
 * cause behind "Connection timed out" and "Failed to write to /dev/nvme-fabrics".
 */
import type { CommandDetails } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import { checkAddress, checkNqn, checkTrsvcid, DEFAULT_TRSVCID } from "../fabrics/options.ts";
import { type DoctorReport, reportText } from "../doctor/check.ts";
import { doctorPaths } from "../doctor/paths.ts";
import { runDoctor } from "../doctor/run.ts";
import { intFlag } from "../cli/parse.ts";

const ROLES = ["initiator", "target", "both"] as const;

/** `nvmeof doctor`. */
export const doctorCommand: CommandDetails = {
  description: `
Walks the checklist an engineer walks by hand when 'nvme connect' fails with "Connection timed
out" or "Failed to write to /dev/nvme-fabrics", and prints one line per check: ok, warn, fail or
skip, what was read, and for anything not ok the exact fix. Exit 0 when nothing fails, 1 otherwise.

Host: nvme-fabrics and nvme-rdma loaded or installed, /dev/nvme-fabrics, the host NQN and host ID
files (present and paired), ib_uverbs and rdma_ucm for user-space RDMA.
Fabric: an RDMA device, each port ACTIVE and LINK_UP, the RoCE active MTU against the netdev MTU
(9000 gives 4096, 1500 caps RoCE at 1024), PFC/ECN where the kernel shows them.
Target (when nvmet is loaded here, or --role target): configfs, nvmet and nvmet-rdma, every rdma
port's address on an RDMA netdev and a subsystem linked (the link enables the port), enabled
namespaces, allow_any_host; with -n, the subsystem on the port for -a/-s and the host allowed.
Reachability (with -a): the route leaves through an RDMA netdev, the local address has a RoCE v2
GID, and an NVMe/RDMA admin-queue connect request (the one a Linux host sends) tells whether a
target listens: accepted or an NVMe/RDMA reject means yes; reject reason 8 or UNREACHABLE means
nothing listens there; ADDR_ERROR/ROUTE_ERROR mean no route or no RDMA device; no answer means
dropped packets. With -n as well, the kernel initiator connects for real (one I/O queue) and is
disconnected at once; its errno and kernel log are translated (host not allowed, subsystem not
on that port …).

Roots can be moved for tests: --configfs, NVMEOF_SYSFS, NVMEOF_DEV, NVMEOF_ETC_NVME,
NVMEOF_PROC, NVMEOF_LIB_MODULES.`,
  options: {
    traddr: { type: "string", short: "a", value: "ADDR", description: "Target address to test" },
    trsvcid: {
      type: "string",
      short: "s",
      value: "PORT",
      description: "Target port",
      default: DEFAULT_TRSVCID,
    },
    nqn: {
      type: "string",
      short: "n",
      value: "NQN",
      description: "Subsystem to check on the target and to connect to for real",
    },
    hostnqn: {
      type: "string",
      short: "q",
      value: "NQN",
      description: "Host NQN (default: /etc/nvme/hostnqn)",
    },
    hostid: {
      type: "string",
      short: "I",
      value: "UUID",
      description: "Host ID paired with the host NQN (default: /etc/nvme/hostid)",
    },
    role: {
      type: "string",
      value: "ROLE",
      description:
        "initiator, target or both (default both; target checks are skipped without nvmet)",
    },
    timeout: {
      type: "string",
      value: "MS",
      description: "Bound on each RDMA-CM wait of the reachability probe (default 5000)",
    },
  },
  examples: [
    "nvmeof doctor   # this host only: modules, identity, RDMA ports, MTU, local target",
    "nvmeof doctor -a 10.0.0.2   # and whether an NVMe/RDMA target listens at 10.0.0.2:4420",
    "nvmeof doctor -a 10.0.0.2 -n nqn.2024-01.io.example:disk1   # and connect for real",
    "nvmeof doctor --role target -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -q HOSTNQN   # on the target: is that host allowed, on which port",
    "nvmeof doctor -a 10.0.0.2 -s 4421 -o json   # the same as data",
  ],
  async run(ctx) {
    const v = ctx.values;
    const role = (v.role as string | undefined) ?? "both";
    if (!(ROLES as readonly string[]).includes(role)) {
      throw new UsageError(`--role must be initiator, target or both, not '${role}'.`);
    }
    const traddr = v.traddr === undefined
      ? undefined
      : checkAddress(String(v.traddr), "-a/--traddr");
    const trsvcid = checkTrsvcid(String(v.trsvcid ?? DEFAULT_TRSVCID), "-s/--trsvcid");
    const nqn = v.nqn === undefined ? undefined : checkNqn(String(v.nqn), "-n/--nqn");
    const hostnqn = v.hostnqn === undefined
      ? undefined
      : checkNqn(String(v.hostnqn), "-q/--hostnqn");
    // The pair matters only where the kernel connects (the target checks need the host NQN alone).
    const kernelConnect = nqn !== undefined && traddr !== undefined && role !== "target";
    if (kernelConnect && (v.hostid === undefined) !== (hostnqn === undefined)) {
      throw new UsageError("-q/--hostnqn and -I/--hostid go together for the kernel connect.", {
        hint:
          "The kernel pairs each host NQN with one host ID: give both, or neither (the /etc/nvme files).",
      });
    }
    const report = await runDoctor(doctorPaths(ctx.global.configfs), {
      role: role as DoctorReport["role"],
      traddr,
      trsvcid,
      nqn,
      hostnqn,
      hostid: v.hostid as string | undefined,
      timeoutMs: intFlag(v, "timeout", 5000, 100, 600_000),
    });
    return {
      data: report,
      text: reportText as (d: unknown) => string,
      exitCode: report.summary.fail > 0 ? 1 : 0,
    };
  },
};
