/**
 * `nvmeof target down`: remove what a spec describes, or everything (src/target/up.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { dryRunFlag, specFlag } from "../cli/target_flags.ts";
import { UsageError } from "../errors.ts";

async function downRun(ctx: RunContext): Promise<CommandResult> {
  const { versioned } = await import("../output/contract.ts");
  const { planText } = await import("../target/report.ts");
  const { targetDown } = await import("../target/up.ts");
  const v = ctx.values;
  const all = v.all === true;
  if (all && v.file !== undefined) {
    throw new UsageError("Give either -f FILE or --all, not both.", {
      hint: "Run 'nvmeof target down --help'.",
    });
  }
  const data = await targetDown({ all, file: v.file as string | undefined }, {
    configfs: ctx.global.configfs,
    dryRun: v["dry-run"] === true,
    force: v.force === true,
    note: ctx.note,
    env: ctx.env?.target,
  });
  return {
    data: versioned(data),
    text: planText("remove", "Nothing to remove: configfs has none of it.", {
      verbose: ctx.global.verbose,
    }),
  };
}

/** `nvmeof target down`. */
export const targetDownCommand: CommandDetails = {
  description: `
Removes the spec's ports, subsystems (with their namespaces and allowed-host links) and hosts in
the kernel's order: port links, ports, namespaces, allowed hosts, subsystems, hosts. A host entry
still allowed by a remaining subsystem stays. Refuses while hosts are connected to what it would
remove, unless --force: to a subsystem (nvmet's debugfs, this machine's own controllers) or to a
port it removes or that serves a removed subsystem (the port's RDMA CM ids in state CONNECT and
established TCP connections, which is how hosts on other machines show). A failed step rolls back
what the run removed.`,
  options: {
    ...specFlag,
    all: { type: "boolean", description: "Remove every port, subsystem and host in nvmet" },
    force: { type: "boolean", description: "Remove even while hosts are connected" },
    ...dryRunFlag,
  },
  examples: [
    "nvmeof target down -f /etc/nvmeof/target.yaml",
    "nvmeof target down --all --dry-run   # list what would go",
    "nvmeof target down --all --force",
  ],
  run: downRun,
};
