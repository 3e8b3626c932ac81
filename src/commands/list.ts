/**
 * `nvmeof list`: the host's NVMe namespaces in nvme-cli's shape, or (--paths) nvmeof's own view
 * of subsystems, multipath heads, paths and controllers. Both from the one sysfs reader.
 */
import type { CommandDetails } from "../cli/command.ts";
import { EXIT } from "../errors.ts";

/** `nvmeof list`. */
export const listCommand: CommandDetails = {
  description: `
Without flags, as nvme-cli's 'nvme list': one row per namespace block device (its node,
generic node, serial, model, namespace ID, use, format, firmware), and with -o json nvme-cli's
{"Devices": [{NameSpace, DevicePath, Firmware, ModelNumber, SerialNumber, UsedBytes, MaximumLBA,
PhysicalSize, SectorSize}]}, key for key as nvme-cli 2.3 prints it. The use and format come from
Identify Namespace, so this needs root, as nvme-cli does (on Linux 6.8 and later sysfs has them).
A namespace that cannot be identified (a multipath head with no usable path) is left out, as
nvme-cli leaves it out, but named on stderr, and the exit code is 1.

--paths shows nvmeof's own view from sysfs alone: each subsystem with its iopolicy, its
namespaces (with native multipath the shared head nvmeXnY and every path to it, nvmeXcYnZ: the
controller it goes through, transport, address, controller state, ANA state and its queue's I/O
timeout, which connect --io-timeout sets) and its controllers (transport, address, state,
cntlid, host NQN). A controller that is not live also
shows whether its target address answers ARP here: unanswered means the link to the target is
down or blocked (every reconnect fails before it reaches the target); answered points at the
target side ('nvmeof doctor' says more). With -o json its keys are the sysfs attribute names:
{"subsystems": [{name, subsysnqn, iopolicy, multipath, namespaces: [{name, nsid, size,
io_timeout? (ms, without multipath), paths: [{name, controller, transport, address, state,
ana_state, io_timeout (ms)}]}], controllers: [{…, neighbour?: {state: resolved|failed, address,
mac?, device?}}]}]}. 'nvmeof list-subsys' prints nvme-cli's list-subsys shape.`,
  options: {
    paths: {
      type: "boolean",
      description: "Subsystems, multipath heads, every path with its ANA state, and controllers",
    },
  },
  examples: [
    "nvmeof list",
    "nvmeof list -o json | jq -r '.Devices[].DevicePath'   # as with nvme-cli",
    "nvmeof list --paths   # which path is live, which is optimized, the iopolicy",
    "nvmeof list --paths -o json | jq '.subsystems[].namespaces[].paths[] | {name, state, ana_state}'",
  ],
  async run(ctx) {
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { listSubsystems } = await import("../fabrics/sysfs.ts");
    const { listDevices, withNeighbours } = await import("../fabrics/topology.ts");
    const { versioned } = await import("../output/contract.ts");
    const { devicesJson, devicesText } = await import("../output/nvme_cli_table.ts");
    const { pathViewText } = await import("../output/path_view.ts");
    const { hostPaths } = await import("../host_paths.ts");
    const paths = fabricsPaths();
    const subsystems = await listSubsystems(paths);
    if (ctx.values.paths) {
      const data = versioned({ subsystems: withNeighbours(subsystems, hostPaths().proc) });
      return { data, text: () => pathViewText(data) };
    }
    const { rows, leftOut } = await listDevices(paths, subsystems);
    for (const l of leftOut) {
      ctx.note(`${l.name} is left out: ${l.reason} ('nvmeof list --paths' shows its paths)`);
    }
    return {
      data: devicesJson(rows),
      text: () => devicesText(rows),
      exitCode: leftOut.length ? EXIT.failure : EXIT.ok,
    };
  },
};
