/**
 * `nvmeof list-subsys`: nvme-cli's list-subsys, text and JSON, from the one sysfs reader.
 */
import type { CommandDetails } from "../cli/command.ts";
import { quote, UsageError } from "../errors.ts";

/** `nvmeof list-subsys`. */
export const listSubsysCommand: CommandDetails = {
  args: "[nvmeXnY]",
  description: `
As nvme-cli's 'nvme list-subsys': the subsystems by host NQN, each with its paths (with native
multipath the controllers of its first namespace's paths, otherwise its controllers): name,
transport, address and state. With -o json nvme-cli's [{HostNQN, HostID, Subsystems: [{Name,
NQN, Paths: [{Name, Transport, Address, State}]}]}], key for key as nvme-cli 2.3 prints it.
Naming a namespace (nvme1n1 or /dev/nvme1n1) shows only its subsystem, and each path's ANA
state (ANAState), as nvme-cli does; where nvme-cli cannot identify that namespace (no usable
path) it lists the controllers without ANAState, while nvmeof, reading sysfs, still shows the
paths and their ANA states. 'nvmeof list --paths' shows every namespace's paths, their ANA
states and the iopolicy.`,
  examples: [
    "nvmeof list-subsys",
    "nvmeof list-subsys -o json | jq -r '.[].Subsystems[].Paths[].Name'",
    "nvmeof list-subsys /dev/nvme1n1 -o json   # with each path's ANAState",
  ],
  async run(ctx) {
    const { readHostFiles } = await import("../fabrics/host_identity.ts");
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { listSubsystems } = await import("../fabrics/sysfs.ts");
    const { groupByHost } = await import("../fabrics/topology.ts");
    const { subsysJson, subsysText } = await import("../output/nvme_cli_table.ts");
    if (ctx.positionals.length > 1) {
      throw new UsageError(`Give at most one namespace, not ${ctx.positionals.length}.`, {
        hint: "e.g. nvmeof list-subsys /dev/nvme1n1",
      });
    }
    const arg = ctx.positionals[0];
    const device = arg?.replace(/^.*\//, "");
    const m = device === undefined ? null : /^nvme(\d+)n(\d+)$/.exec(device);
    if (device !== undefined && !m) {
      throw new UsageError(`Invalid device name ${quote(arg)}.`, {
        hint: "Name a namespace block device such as nvme1n1 ('nvmeof list' shows them).",
      });
    }
    const paths = fabricsPaths();
    let subsystems = await listSubsystems(paths);
    if (m) {
      // nvme-cli's filter: the subsystem whose number is the device's, and that namespace only.
      subsystems = subsystems.filter((s) => s.name === `nvme-subsys${m[1]}`).map((s) => ({
        ...s,
        namespaces: s.namespaces.filter((n) => n.name === device),
      }));
    }
    const hosts = groupByHost(subsystems, await readHostFiles(paths));
    const showAna = m !== null;
    return { data: subsysJson(hosts, showAna), text: () => subsysText(hosts, showAna) };
  },
};
