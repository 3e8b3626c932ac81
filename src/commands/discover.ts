/**
 * `nvmeof discover`: read a discovery controller's log page, as `nvme discover` shows it.
 */
import type { CommandDetails } from "../cli/command.ts";
import { discover } from "../fabrics/controller.ts";
import { type DiscoveryLog, logToNvmeCli, logToText } from "../fabrics/discovery_log.ts";
import {
  ADDRESS_FLAGS,
  HOST_FLAGS,
  hostFromFlags,
  resolvedAddressFromFlags,
} from "../fabrics/flags.ts";
import { resolveHostIdentity } from "../fabrics/host_identity.ts";
import { fabricsPaths } from "../fabrics/paths.ts";

/** `nvmeof discover`. */
export const discoverCommand: CommandDetails = {
  description: `
Connects a discovery controller through /dev/nvme-fabrics, reads the whole discovery log page
(log 70h) with the NVMe admin passthrough ioctl, retrying while its generation counter changes,
and removes the discovery controller again. The target lists only the subsystems linked to the
port you reached that allow this host NQN. -o json prints nvme-cli's keys ('nvme discover -o json').`,
  options: { ...ADDRESS_FLAGS, ...HOST_FLAGS },
  examples: [
    "nvmeof discover -a 10.0.0.2                 # rdma, port 4420",
    "nvmeof discover -t rdma -a 10.0.0.2 -s 4420 -o json",
    "nvmeof discover -a 10.0.0.2 -q nqn.2014-08.org.nvmexpress:uuid:… -I …   # as another host",
  ],
  async run(ctx) {
    const paths = fabricsPaths();
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
