/**
 * `nvmeof list`: the host's NVMe subsystems, controllers and namespaces, from sysfs.
 */
import type { CommandDetails } from "../cli/command.ts";
import { fabricsPaths } from "../fabrics/paths.ts";
import { listSubsystems, type SubsystemInfo } from "../fabrics/sysfs.ts";
import { humanSize } from "../output/render.ts";

function text(d: { subsystems: SubsystemInfo[] }): string {
  if (d.subsystems.length === 0) return "no NVMe subsystems";
  const out: string[] = [];
  for (const s of d.subsystems) {
    out.push(`${s.name}  ${s.subsysnqn}${s.subsystype ? `  (${s.subsystype})` : ""}`);
    for (const c of s.controllers) {
      const a = c.address;
      const where = a.traddr ? ` ${a.traddr}${a.trsvcid ? ":" + a.trsvcid : ""}` : "";
      const from = a.host_traddr ? ` from ${a.host_traddr}` : "";
      out.push(
        `  ${c.name}  ${c.transport}${where}${from}  ${c.state}  cntlid ${c.cntlid}  host ${c.hostnqn}`,
      );
    }
    for (const n of s.namespaces) {
      out.push(`  ${n.device}  nsid ${n.nsid}  ${humanSize(n.size)}`);
    }
  }
  return out.join("\n");
}

/** `nvmeof list`. */
export const listCommand: CommandDetails = {
  description: `
Reads /sys/class/nvme-subsystem and /sys/class/nvme: each subsystem with its controllers
(transport, address, state, host NQN) and namespaces (block device, size in bytes). JSON keys
are the sysfs attribute names.`,
  examples: ["nvmeof list", "nvmeof list -o json"],
  async run() {
    const data = { subsystems: await listSubsystems(fabricsPaths()) };
    return { data, text: () => text(data) };
  },
};
