/**
 * `nvmeof rdma devices`: every RDMA device, its ports and GID tables, as libibverbs reports them.
 */
import type { CommandDetails, CommandResult } from "../cli/command.ts";
import { EnvironmentError } from "../errors.ts";
import type { DeviceInfo } from "../rdma/devices.ts";

function text(devices: DeviceInfo[]): string {
  const out: string[] = [];
  for (const d of devices) {
    out.push(`${d.name}: ${d.uverbs}, transport ${d.transport}, node type ${d.node_type}`);
    out.push(
      `  node_guid ${d.node_guid}  sys_image_guid ${d.sys_image_guid}  fw_ver ${d.fw_ver || "-"}`,
    );
    out.push(
      `  vendor_id 0x${d.vendor_id.toString(16)}  vendor_part_id ${d.vendor_part_id}  ` +
        `hw_ver 0x${d.hw_ver.toString(16)}  max_qp ${d.max_qp}  max_qp_wr ${d.max_qp_wr}  ` +
        `max_mr_size ${d.max_mr_size}`,
    );
    for (const p of d.ports) {
      out.push(
        `  port ${p.port}: ${p.state}, ${p.phys_state}, link_layer ${p.link_layer}, ` +
          `active_mtu ${p.active_mtu} (max ${p.max_mtu}), ${p.active_speed} ${p.active_width}`,
      );
      if (p.netdev) {
        out.push(
          `    netdev ${p.netdev} mtu ${p.netdev_mtu ?? "?"} (RoCE active_mtu ${p.active_mtu})`,
        );
      } else {
        out.push(`    lid ${p.lid}  sm_lid ${p.sm_lid}`);
      }
      for (const g of p.gids) {
        out.push(
          `    GID[${String(g.index).padStart(3)}] ${g.gid.padEnd(28)} ${g.type.padEnd(7)} ` +
            `${g.netdev ?? "-"}${g.ip ? `  ip ${g.ip}` : ""}`,
        );
      }
    }
  }
  return out.join("\n") + "\n";
}

export const rdmaDevicesCommand: CommandDetails = {
  description:
    "Lists every RDMA device libibverbs sees: its attributes, each port's state, physical " +
    "state, link layer, active and max MTU, speed and width, and the GID table (index, GID, " +
    "type IB / RoCE v1 / RoCE v2, netdev, IP). For RoCE ports the netdev's MTU is shown beside " +
    "the RoCE MTU: RoCE uses the largest of 256…4096 that fits in the netdev MTU minus headers, " +
    "so a 1500-byte netdev gives active_mtu 1024. The same facts as `ibv_devinfo -v` and " +
    "`rdma link`, in one place.",
  examples: [
    "nvmeof rdma devices",
    "nvmeof rdma devices -o json   # keys are the verbs names (active_mtu, phys_state, gid_tbl_len …)",
  ],
  async run(): Promise<CommandResult<DeviceInfo[]>> {
    const { describeRdmaDevices } = await import("../rdma/devices.ts");
    const { softRoceCommand } = await import("../rdma/soft_roce.ts");
    const devices = describeRdmaDevices();
    if (devices.length === 0) {
      throw new EnvironmentError("No RDMA device found.", {
        hint: `Load your NIC's RDMA driver, or add a Soft-RoCE device: ${softRoceCommand()}.`,
      });
    }
    return { data: devices, text };
  },
};
