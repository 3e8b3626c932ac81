/**
 * `nvmeof discover`: read a discovery controller's log page, as `nvme discover` shows it.
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { EXIT } from "../errors.ts";
import type { DiscoveryLog } from "../fabrics/discovery_log.ts";
import { ADDRESS_FLAGS, HOST_FLAGS } from "../cli/fabrics_flags.ts";

/** `nvmeof discover`. */
export const discoverCommand: CommandDetails = {
  description: `
Connects a discovery controller through /dev/nvme-fabrics, reads the whole discovery log page
(log 70h) with the NVMe admin passthrough ioctl, retrying while its generation counter changes,
and removes the discovery controller again. The target lists only the subsystems linked to the
port you reached that allow this host NQN. -o json prints nvme-cli's keys ('nvme discover -o json').

Without -a, as nvme-cli, every discovery controller listed in /etc/nvme/discovery.conf (one line
of nvme-cli flags each; NVMEOF_ETC_NVME moves /etc/nvme) is asked in turn; -o json then prints a
list with one log per line. Exit 1 if any of them failed.`,
  options: { ...ADDRESS_FLAGS, ...HOST_FLAGS },
  examples: [
    "nvmeof discover -a 10.0.0.2                 # rdma, port 4420",
    "nvmeof discover -t rdma -a 10.0.0.2 -s 4420 -o json",
    "nvmeof discover -a 10.0.0.2 -q nqn.2014-08.org.nvmexpress:uuid:… -I …   # as another host",
    "nvmeof discover   # every controller of /etc/nvme/discovery.conf",
  ],
  async run(ctx) {
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { hostFromFlags, resolvedAddressFromFlags } = await import("../cli/fabrics_values.ts");
    const { resolveHostIdentity } = await import("../fabrics/host_identity.ts");
    const { discover } = await import("../fabrics/kernel_controller.ts");
    const { logToNvmeCli, logToText } = await import("../fabrics/discovery_log.ts");
    const paths = fabricsPaths();
    if (ctx.values.traddr === undefined) return await discoverConfRun(ctx);
    const address = await resolvedAddressFromFlags(ctx.values);
    const host = hostFromFlags(ctx.values);
    const id = await resolveHostIdentity(host, paths);
    const log = await discover(paths, {
      ...address,
      ...(host.hostTraddr ? { hostTraddr: host.hostTraddr } : {}),
      hostnqn: id.hostnqn,
      hostid: id.hostid,
    });
    return {
      data: logToNvmeCli(log),
      text: () => logToText(log as DiscoveryLog),
    };
  },
};

/** `discover` without -a: each discovery controller of discovery.conf, as nvme-cli does. */
async function discoverConfRun(ctx: RunContext): Promise<CommandResult> {
  const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
  const { hostFromFlags } = await import("../cli/fabrics_values.ts");
  const { resolveHostIdentity } = await import("../fabrics/host_identity.ts");
  const { requireDiscoveryConf } = await import("../persist/discovery_conf.ts");
  const { discover } = await import("../fabrics/kernel_controller.ts");
  const { logToNvmeCli, logToText } = await import("../fabrics/discovery_log.ts");
  const paths = fabricsPaths();
  const id = await resolveHostIdentity(hostFromFlags(ctx.values), paths);
  const conf = await requireDiscoveryConf(paths.etcNvme, id);
  for (const n of conf.notes) ctx.note(n);
  const logs: DiscoveryLog[] = [];
  let failed = 0;
  for (const c of conf.controllers) {
    try {
      logs.push(await discover(paths, c));
    } catch (err) {
      failed++;
      ctx.note(`${(err as Error).message}`);
    }
  }
  const data = logs.map(logToNvmeCli);
  return {
    data,
    text: () => logs.map((l) => logToText(l)).join("\n\n"),
    exitCode: failed ? EXIT.failure : EXIT.ok,
  };
}
