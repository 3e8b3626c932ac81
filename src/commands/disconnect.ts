/**
 * `nvmeof disconnect` and `nvmeof disconnect-all`: delete fabrics controllers through sysfs.
 */
import type { CommandDetails } from "../cli/command.ts";
import { EXIT, FailureError, UsageError } from "../errors.ts";
import { deleteController } from "../fabrics/controller.ts";
import { checkNqn } from "../fabrics/options.ts";
import { fabricsPaths } from "../fabrics/paths.ts";
import { type ControllerInfo, listControllers } from "../fabrics/sysfs.ts";

interface DisconnectRow {
  device: string;
  subsysnqn: string;
  transport: string;
  traddr?: string;
  trsvcid?: string;
  status: "disconnected" | "failed";
  reason?: string;
}

async function remove(controllers: ControllerInfo[]): Promise<DisconnectRow[]> {
  const paths = fabricsPaths();
  const rows: DisconnectRow[] = [];
  for (const c of controllers) {
    const row: DisconnectRow = {
      device: c.name,
      subsysnqn: c.subsysnqn,
      transport: c.transport,
      ...(c.address.traddr ? { traddr: c.address.traddr } : {}),
      ...(c.address.trsvcid ? { trsvcid: c.address.trsvcid } : {}),
      status: "disconnected",
    };
    try {
      await deleteController(paths, c.name);
    } catch (err) {
      row.status = "failed";
      row.reason = (err as Error).message;
    }
    rows.push(row);
  }
  return rows;
}

function text(d: { controllers: DisconnectRow[] }): string {
  if (d.controllers.length === 0) return "no controllers to disconnect";
  return d.controllers.map((r) =>
    r.status === "disconnected"
      ? `disconnected ${r.device} ('${r.subsysnqn}')`
      : `failed to disconnect ${r.device} ('${r.subsysnqn}'): ${r.reason}`
  ).join("\n");
}

function result(rows: DisconnectRow[]) {
  const data = { controllers: rows };
  return {
    data,
    text: () => text(data),
    exitCode: rows.some((r) => r.status === "failed") ? EXIT.failure : EXIT.ok,
  };
}

/** `nvmeof disconnect`. */
export const disconnectCommand: CommandDetails = {
  description: `
-n deletes every controller connected to that subsystem NQN; -d deletes one controller by its
device name. Deleting writes 1 to /sys/class/nvme/nvmeN/delete_controller; the kernel flushes
and removes the namespaces' block devices before it returns. Naming something that is not
connected is a failure (exit 1).`,
  options: {
    nqn: { type: "string", short: "n", value: "NQN", description: "Subsystem NQN to disconnect" },
    device: {
      type: "string",
      short: "d",
      value: "nvmeN",
      description: "Controller to disconnect",
      complete: "controllers",
    },
  },
  examples: [
    "nvmeof disconnect -n nqn.2024-01.io.example:disk1",
    "nvmeof disconnect -d nvme1",
    "nvmeof disconnect -d /dev/nvme1 -o json",
  ],
  async run(ctx) {
    const nqn = ctx.values.nqn as string | undefined;
    const device = ctx.values.device as string | undefined;
    if ((nqn === undefined) === (device === undefined)) {
      throw new UsageError("Give exactly one of -n/--nqn and -d/--device.", {
        hint:
          "e.g. nvmeof disconnect -n nqn.2024-01.io.example:disk1, or nvmeof disconnect -d nvme1.",
      });
    }
    const all = await listControllers(fabricsPaths());
    let chosen: ControllerInfo[];
    if (nqn !== undefined) {
      checkNqn(nqn, "-n/--nqn");
      chosen = all.filter((c) => c.subsysnqn === nqn && c.transport !== "pcie");
      if (chosen.length === 0) {
        throw new FailureError(`No controller is connected to '${nqn}'.`, {
          hint: "'nvmeof list' shows the connected subsystems.",
        });
      }
    } else {
      const name = device!.replace(/^\/dev\//, "");
      if (!/^nvme\d+$/.test(name)) {
        throw new UsageError(`-d/--device '${device}' is not a controller name like nvme1.`, {
          hint: "Give the controller (nvme1), not a namespace (nvme1n1); 'nvmeof list' shows them.",
        });
      }
      chosen = all.filter((c) => c.name === name);
      if (chosen.length === 0) {
        throw new FailureError(`Controller '${name}' does not exist.`, {
          hint: "'nvmeof list' shows the connected controllers.",
        });
      }
      if (chosen[0].transport === "pcie") {
        throw new UsageError(`'${name}' is a local PCIe controller, not a fabrics connection.`, {
          hint: "Only fabrics controllers can be disconnected.",
        });
      }
    }
    return result(await remove(chosen));
  },
};

/** `nvmeof disconnect-all`. */
export const disconnectAllCommand: CommandDetails = {
  description: `
Deletes every NVMe over Fabrics controller (discovery controllers included); local PCIe
controllers are never touched. With --transport only those of that transport.`,
  options: {
    transport: {
      type: "string",
      short: "t",
      value: "TRTYPE",
      description: "Only this transport (rdma, tcp, loop)",
      choices: ["rdma", "tcp", "loop"],
    },
  },
  examples: ["nvmeof disconnect-all", "nvmeof disconnect-all --transport rdma -o json"],
  async run(ctx) {
    const t = ctx.values.transport as string | undefined;
    if (t !== undefined && !["rdma", "tcp", "fc", "loop"].includes(t)) {
      throw new UsageError(`Transport '${t}' is not a fabrics transport.`, {
        hint: "Use rdma, tcp, fc or loop.",
      });
    }
    const all = await listControllers(fabricsPaths());
    const chosen = all.filter((c) =>
      c.transport !== "pcie" && (t === undefined || c.transport === t) &&
      !c.state.startsWith("deleting")
    );
    return result(await remove(chosen));
  },
};
