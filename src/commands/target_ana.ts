/**
 * `nvmeof target ana`: planned failover, a port's ANA groups moved to a state live
 * (src/target/ana.ts).
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { dryRunFlag } from "../cli/target_flags.ts";
import { ANA_STATES } from "../configfs/nvmet.ts";
import { UsageError } from "../errors.ts";
import type { AnaResult } from "../target/ana.ts";

async function anaRun(ctx: RunContext): Promise<CommandResult> {
  const { versioned } = await import("../output/contract.ts");
  const { setAnaState } = await import("../target/ana.ts");
  const { planText } = await import("../target/report.ts");
  const v = ctx.values;
  for (const f of ["port", "state"]) {
    if (v[f] === undefined) {
      throw new UsageError(`--${f} is required.`, {
        hint: "For example: nvmeof target ana --port 1 --state inaccessible.",
      });
    }
  }
  const data = setAnaState({
    port: v.port as string,
    state: v.state as string,
    groups: (v.group as string[] | undefined) ?? [],
  }, {
    configfs: ctx.global.configfs,
    dryRun: v["dry-run"] === true,
    force: v.force === true,
    note: ctx.note,
    env: ctx.env?.target,
  });
  const steps = planText(
    "change ANA state",
    `Nothing to change: port ${data.port}'s group(s) ${
      data.groups.map((g) => g.id).join(", ")
    } are ${data.state} already.`,
    { verbose: ctx.global.verbose },
  );
  return {
    data: versioned(data),
    text: (d) => {
      const r = d as AnaResult;
      const tail = r.changed
        ? "\nA live change: 'nvmeof target up' puts back the spec's states."
        : "";
      return steps(d) + tail;
    },
  };
}

/** `nvmeof target ana`. */
export const targetAnaCommand: CommandDetails = {
  description: `
Planned failover: moves the ANA groups of one port (every group of the port, or those given with
--group) to a state, live. Each group is one ana_state write; the kernel tells connected hosts with
an ANA change event and their multipath sends I/O down the paths still optimized, without errors.
The port, its links and the other ports are not touched. Drain a port before maintenance with
'inaccessible', bring it back with 'optimized'.

States: ${ANA_STATES.join(", ")}.

It refuses, with nothing changed, a move that would leave a namespace with no optimized or
non-optimized path on any port (hosts would queue its I/O), unless --force.

This changes the live tree, not the spec: 'nvmeof target up' (and the boot unit) put the spec's
states back, and 'target up --dry-run' shows the difference. Exit 0 when done (or nothing to do),
1 when the port or group does not exist or the kernel refused (rolled back), 2 on a bad state or
flag, 3 when nvmet is not loaded or without root.`,
  options: {
    port: {
      type: "string",
      short: "p",
      value: "ID",
      description: "The port whose groups move (its id, as in the spec)",
    },
    state: {
      type: "string",
      short: "S",
      value: "STATE",
      description: "The ANA state to move to",
      choices: ANA_STATES,
    },
    group: {
      type: "string",
      short: "g",
      value: "ID",
      multiple: true,
      description: "Only this ANA group (default: every group of the port)",
    },
    force: {
      type: "boolean",
      description: "Move even if a namespace is left with no usable path",
    },
    ...dryRunFlag,
  },
  examples: [
    "nvmeof target ana --port 1 --state inaccessible   # drain port 1 before maintenance",
    "nvmeof target ana --port 1 --state optimized      # bring it back",
    "nvmeof target ana -p 2 -g 3 -S non-optimized --dry-run",
    "nvmeof target ana -p 1 -S inaccessible -o json",
  ],
  run: anaRun,
};
