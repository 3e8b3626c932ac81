/**
 * `nvmeof doctor`: the NVMe-oF (RDMA, TCP) troubleshooting checklist as a command. It names the real
 * cause behind "Connection timed out" and "Failed to write to /dev/nvme-fabrics".
 */
import type { CommandDetails } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import { ADDRESS_FLAGS } from "../cli/fabrics_flags.ts";
import type { DoctorReport } from "../doctor/check.ts";
import { intFlag, stringFlag } from "../cli/parse.ts";

const ROLES = ["initiator", "target", "both"] as const;

/** `nvmeof doctor`. */
export const doctorCommand: CommandDetails = {
  description: `
Walks the checklist an engineer walks by hand when 'nvme connect' fails with "Connection timed
out" or "Failed to write to /dev/nvme-fabrics", and prints one line per check: ok, warn, fail or
skip, what was read, and for anything not ok the exact fix. Exit 0 when nothing fails, 1 otherwise.

Host: nvme-fabrics and nvme-rdma loaded or installed, /dev/nvme-fabrics, the host NQN and host ID
files (present and paired), ib_uverbs and rdma_ucm for user-space RDMA. Multipath: whether
native NVMe multipath is on (nvme_core.multipath), and per connected subsystem its iopolicy and
every path: a controller connecting, resetting or deleting (with its reconnect delay and
ctrl_loss_tmo, and whether its target address answers ARP: when it does not, every reconnect
fails in address resolution, 'rdma connection establishment failed (-104)', and the link is
named), a path whose ANA state carries no I/O (inaccessible, persistent-loss, change),
and a namespace with no usable path at all (fail). 'nvmeof list --paths' shows the same paths.
Fabric: an RDMA device, each port ACTIVE and LINK_UP, the RoCE active MTU against the netdev MTU
(9000 gives 4096, 1500 caps RoCE at 1024), PFC/ECN where the kernel shows them.
Role: without --role, the local nvmet tree is checked only when -a is an address of this
machine (or no -a is given); a compute node that has nvmet loaded for other reasons is checked
as an initiator only, the target being the other machine. The first line says which role and why.
Target (role both with nvmet loaded here, or --role target): configfs, nvmet and nvmet-rdma,
every rdma port's address on an RDMA netdev and a subsystem linked (the link enables the port),
enabled namespaces, allow_any_host; with -n, the subsystem on the port for -a/-s and the host allowed.
Reachability (with -a), from this host's side:
  address    ICMP echo (a ping socket, DF set) and the ARP entry: no route, or no ARP answer,
             is "target unreachable"
  route/GID  the route leaves through an RDMA netdev; the local address has a RoCE v2 GID
  listener   the NVMe/RDMA admin-queue connect request a Linux host sends: accepted or an
             NVMe/RDMA reject means a target listens; reject reason 8 or UNREACHABLE means
             nothing listens there ("target up but nothing listening" when it answers IP)
  roce_v2    the address answers IP but the CM never replies, twice: UDP 4791 (RoCE v2) is
             dropped by a firewall; TCP 4420 is the CM's service id, not a RoCE port
  path_mtu   DF echoes at the netdev MTU, 1500 and 1120: a reply in fragments or no reply to
             the large one means the target's side carries less; names each side's RoCE MTU
             and which MTU to change
  loss       the RDMA port's hw_counters around 32 Identify Controller transfers from the
             discovery controller: sequence errors or retries mean the fabric is not lossless
With -t tcp, the listener is an NVMe/TCP one and the RDMA checks (devices, GID, RoCE v2, path
MTU, loss) do not apply; host: nvme-tcp instead of nvme-rdma. Towards -a:
  route      the route to the address (any netdev carries TCP)
  address    ICMP echo and the ARP entry, as for rdma
  listener   a TCP connect to -s (default 4420), then the ICReq a Linux host sends: an ICResp
             is an NVMe/TCP target (its PFV, digests, CPDA and MAXH2CDATA named; the probe
             then closes its side and waits for the target to end its own, with a FIN or,
             as nvmet-tcp does, a reset, so no queue is left behind); "refused" is nothing listening on that port (the tcp port is not
             enabled, or is for another address or port); a timeout is a firewall dropping the
             port when the address answers ICMP or ARP, else a wrong address or a target that
             is down; no answer, bytes that are not an ICResp, or a close without a byte is
             something else on that port (or, for a close, an ICReq nvmet-tcp refused, or a
             port that requires TLS); a C2HTermReq is a target that refused the ICReq
With -n as well, the kernel initiator connects for real (one I/O queue) and is disconnected at
once; its errno and kernel log are translated (host not allowed, subsystem not on that port …).

Roots can be moved for tests: --configfs, NVMEOF_SYSFS, NVMEOF_DEV, NVMEOF_ETC_NVME,
NVMEOF_PROC, NVMEOF_LIB_MODULES.`,
  options: {
    transport: {
      ...ADDRESS_FLAGS.transport,
      default: undefined,
      description: "Transport: rdma (or tcp); default rdma, and on the target side its ports' own",
    },
    traddr: { type: "string", short: "a", value: "ADDR", description: "Target address to test" },
    trsvcid: ADDRESS_FLAGS.trsvcid,
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
      description: "initiator, target or both (default: both when -a is local or absent)",
      choices: ROLES,
    },
    timeout: {
      type: "string",
      value: "MS",
      description:
        "Bound on each wait of the reachability probe: RDMA-CM, or the TCP connect and the ICResp (default 5000)",
    },
  },
  examples: [
    "nvmeof doctor   # this host only: modules, identity, RDMA ports, MTU, local target",
    "nvmeof doctor -a 10.0.0.2   # from a compute node: is 10.0.0.2 up, RoCE v2 open, the MTU matched, a target listening",
    "nvmeof doctor -a 10.0.0.2 -n nqn.2024-01.io.example:disk1   # and connect for real",
    "nvmeof doctor --role target -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -q HOSTNQN   # on the target: is that host allowed, on which port",
    "nvmeof doctor -a 10.0.0.2 -s 4421 -o json   # the same as data",
    "nvmeof doctor -t tcp -a 10.0.0.2   # an NVMe/TCP target: TCP connect to 4420, then ICReq/ICResp",
    "nvmeof doctor -t tcp -a 10.0.0.2 -s 8009 -o json   # its discovery port, as data (found: the ICResp)",
  ],
  async run(ctx) {
    const { checkAddress, checkNqn, checkTrsvcid } = await import("../fabrics/option_checks.ts");
    const { DEFAULT_TRSVCID } = await import("../fabrics/connect_options.ts");
    const { transportFromFlags } = await import("../cli/fabrics_values.ts");
    const { reportText } = await import("../doctor/check.ts");
    const { doctorPaths } = await import("../doctor/kernel_paths.ts");
    const { runDoctor } = await import("../doctor/run.ts");
    const v = ctx.values;
    const role = stringFlag(v, "role");
    if (role !== undefined && !(ROLES as readonly string[]).includes(role)) {
      throw new UsageError(`--role must be initiator, target or both, not '${role}'.`);
    }
    const traddr = v.traddr === undefined
      ? undefined
      : checkAddress(String(v.traddr), "-a/--traddr");
    // Undefined when -t is not given: the target side then checks whichever transports its
    // ports use, and the host side takes rdma.
    const transport = v.transport === undefined ? undefined : transportFromFlags(v);
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
      role: role as DoctorReport["role"] | undefined,
      traddr,
      trsvcid,
      transport,
      nqn,
      hostnqn,
      hostid: stringFlag(v, "hostid"),
      timeoutMs: intFlag(v, "timeout", 5000, 100, 600_000),
    });
    return {
      data: report,
      text: reportText as (d: unknown) => string,
      exitCode: report.summary.fail > 0 ? 1 : 0,
    };
  },
};
