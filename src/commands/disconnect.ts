/**
 * `nvmeof disconnect` and `nvmeof disconnect-all`: delete fabrics controllers through sysfs.
 */
import type { CommandDetails } from "../cli/command.ts";
import { EnvironmentError, EXIT, FailureError, UsageError } from "../errors.ts";
import type { ControllerInfo } from "../fabrics/sysfs.ts";

interface DisconnectRow {
  device: string;
  subsysnqn: string;
  transport: string;
  traddr?: string;
  trsvcid?: string;
  status: "disconnected" | "failed";
  reason?: string;
}

async function remove(controllers: ControllerInfo[], verb: string): Promise<DisconnectRow[]> {
  const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
  const { deleteController } = await import("../fabrics/kernel_controller.ts");
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
      // Not root: every other controller would fail alike; say so once, as connect and target do.
      if (err instanceof EnvironmentError) {
        throw new EnvironmentError(
          `Cannot disconnect ${c.name} ('${c.subsysnqn}'): permission denied.`,
          {
            cause: err,
            hint:
              `Disconnecting needs root (CAP_SYS_ADMIN). Run it as root (sudo nvmeof ${verb} …).`,
          },
        );
      }
      row.status = "failed";
      row.reason = (err as Error).message;
    }
    rows.push(row);
  }
  return rows;
}

function text(d: { controllers: DisconnectRow[]; not_connected?: string[] }): string {
  const none = (d.not_connected ?? []).map((n) => `'${n}' is not connected (nothing to do)`);
  if (d.controllers.length === 0) {
    return none.length ? none.join("\n") : "no controllers to disconnect";
  }
  return none.concat(
    d.controllers.map((r) =>
      r.status === "disconnected"
        ? `disconnected ${r.device} ('${r.subsysnqn}')`
        : `failed to disconnect ${r.device} ('${r.subsysnqn}'): ${r.reason}`
    ),
  ).join("\n");
}

async function result(rows: DisconnectRow[], notConnected: string[] = []) {
  const { versioned } = await import("../output/contract.ts");
  const data = versioned({
    controllers: rows,
    ...(notConnected.length ? { not_connected: notConnected } : {}),
  });
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
device name; both take comma-separated lists, as nvme-cli does. Deleting writes 1 to
/sys/class/nvme/nvmeN/delete_controller; the kernel flushes and removes the namespaces' block
devices before it returns. A subsystem that is not connected is reported (stderr, and
'not_connected' in JSON) and is not an error (exit 0, as nvme-cli); a controller name that does
not exist is (exit 1). Disconnecting needs root (exit 3 otherwise).`,
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
    "nvmeof disconnect -n nqn.2024-01.io.example:disk1,nqn.2024-01.io.example:disk2",
    "nvmeof disconnect -d nvme1",
    "nvmeof disconnect -d /dev/nvme1 -o json",
  ],
  async run(ctx) {
    const { listControllers } = await import("../fabrics/sysfs.ts");
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { checkNqn } = await import("../fabrics/option_checks.ts");
    const nqn = ctx.values.nqn as string | undefined;
    const device = ctx.values.device as string | undefined;
    if ((nqn === undefined) === (device === undefined)) {
      throw new UsageError("Give exactly one of -n/--nqn and -d/--device.", {
        hint:
          "e.g. nvmeof disconnect -n nqn.2024-01.io.example:disk1, or nvmeof disconnect -d nvme1.",
      });
    }
    const all = await listControllers(fabricsPaths());
    const chosen: ControllerInfo[] = [];
    const notConnected: string[] = [];
    if (nqn !== undefined) {
      // nvme-cli takes a comma-separated list, and a subsystem not connected is not an error
      // (scripts that make sure something is gone rely on that): it is reported, exit 0.
      for (const n of listOf(nqn)) {
        checkNqn(n, "-n/--nqn");
        const of = all.filter((c) => c.subsysnqn === n && c.transport !== "pcie");
        if (of.length === 0) {
          notConnected.push(n);
          ctx.note(`'${n}' is not connected; nothing to disconnect.`);
        }
        chosen.push(...of.filter((c) => !chosen.includes(c)));
      }
    } else {
      for (const d of listOf(device!)) {
        const name = d.replace(/^\/dev\//, "");
        if (!/^nvme\d+$/.test(name)) {
          throw new UsageError(`-d/--device '${d}' is not a controller name like nvme1.`, {
            hint:
              "Give the controller (nvme1), not a namespace (nvme1n1); 'nvmeof list' shows them.",
          });
        }
        const c = all.find((c) => c.name === name);
        if (!c) {
          throw new FailureError(`Controller '${name}' does not exist.`, {
            hint: "'nvmeof list' shows the connected controllers.",
          });
        }
        if (c.transport === "pcie") {
          throw new UsageError(`'${name}' is a local PCIe controller, not a fabrics connection.`, {
            hint: "Only fabrics controllers can be disconnected.",
          });
        }
        if (!chosen.includes(c)) chosen.push(c);
      }
    }
    return result(await remove(chosen, "disconnect"), notConnected);
  },
};

/** The items of a comma-separated flag value (nvme-cli's lists), empty items dropped. */
function listOf(value: string): string[] {
  const items = value.split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) {
    throw new UsageError(`'${value}' names nothing.`, {
      hint: "Give one name, or several separated by commas.",
    });
  }
  return items;
}

/** `nvmeof disconnect-all`. */
export const disconnectAllCommand: CommandDetails = {
  description: `
Deletes every NVMe over Fabrics controller (discovery controllers included); local PCIe
controllers are never touched. With --transport only those of that transport.`,
  options: {
    transport: {
      type: "string",
      short: "r",
      value: "TRTYPE",
      description: "Only this transport (rdma, tcp, fc, loop); -r as in nvme-cli",
      choices: ["rdma", "tcp", "fc", "loop"],
    },
    trtype: {
      type: "string",
      short: "t",
      value: "TRTYPE",
      description: "Same as -r/--transport",
      choices: ["rdma", "tcp", "fc", "loop"],
    },
  },
  examples: [
    "nvmeof disconnect-all",
    "nvmeof disconnect-all -r tcp   # only the tcp controllers, as 'nvme disconnect-all -r tcp'",
    "nvmeof disconnect-all --transport rdma -o json",
  ],
  async run(ctx) {
    const { listControllers } = await import("../fabrics/sysfs.ts");
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const t = (ctx.values.transport ?? ctx.values.trtype) as string | undefined;
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
    return result(await remove(chosen, "disconnect-all"));
  },
};
