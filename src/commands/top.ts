/**
 * `nvmeof top`: the exported metric families (docs/metrics.md) as a live terminal view, a one-off
 * listing, or JSON lines. The loops are src/metrics/top_loop.ts, the view src/metrics/top_view.ts,
 * the screen src/output/top_screen.ts.
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { collectorTimeoutFlag, collectorTimeoutMs } from "../cli/metrics_flags.ts";
import { intFlag } from "../cli/parse.ts";
import { UsageError } from "../errors.ts";

/** --interval's bounds and default, in seconds. */
const INTERVAL = { default: "1", min: 0.1, max: 3600 } as const;
const MS_PER_SECOND = 1000;

function intervalMs(raw: unknown): number {
  const text = String(raw ?? INTERVAL.default);
  const s = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || s < INTERVAL.min || s > INTERVAL.max) {
    throw new UsageError(
      `--interval must be seconds from ${INTERVAL.min} to ${INTERVAL.max}, not '${text}'.`,
    );
  }
  return s * MS_PER_SECOND;
}

async function topRun(ctx: RunContext): Promise<CommandResult> {
  const interval = intervalMs(ctx.values.interval);
  const count = ctx.values.count === undefined ? undefined : intFlag(ctx.values, "count", 1, 1);
  const timeoutMs = collectorTimeoutMs(ctx.values);
  const json = ctx.global.output === "json";
  const { collectFamilies, createdControllers } = await import("../metrics/collect.ts");
  const { runLive, topViews } = await import("../metrics/top_loop.ts");
  const { topScreen } = await import("../output/top_screen.ts");
  const { colorWanted, processTerminal } = await import("../output/terminal.ts");
  const { writeAll } = await import("../output/write.ts");
  using created = createdControllers();
  const source = {
    collect: () =>
      collectFamilies({ configfs: `${ctx.global.configfs}/nvmet`, created, timeoutMs }),
    host: Deno.hostname(),
    intervalMs: interval,
  };
  const color = colorWanted();
  if (!json && ctx.values.once !== true && Deno.stdout.isTerminal()) {
    const end = await runLive(source, {
      terminal: processTerminal(),
      screen: (view, size) => topScreen(view, { width: size.columns, height: size.rows, color }),
      count,
    });
    return { data: { end }, streamed: true };
  }
  const { versioned } = await import("../output/contract.ts");
  const width = Deno.stdout.isTerminal() ? Deno.consoleSize().columns : Infinity;
  let first = true;
  for await (const view of topViews(source, count ?? 1)) {
    const text = json
      ? JSON.stringify(versioned(view)) + "\n"
      : (first ? "" : "\n") + topScreen(view, { width, height: Infinity, color }).join("\n") +
        "\n";
    first = false;
    if (!writeAll(Deno.stdout, text)) break; // the reader is gone
  }
  return { data: {}, streamed: true };
}

/** `nvmeof top`. */
export const topCommand: CommandDetails = {
  description: `
A live view of this host's NVMe over Fabrics I/O, from the same metric families the exporter
exports (docs/metrics.md): each subsystem (NQN, iopolicy, live paths of all) with its namespaces'
and its paths' I/O (reads and writes per second, MB/s, average latency in ms, I/Os in flight),
each path's controller, transport, address, state and ANA state per namespace; the RDMA error
counters that moved; and on a storage server its nvmet ports (listening, connections, the hosts
connected) and its namespaces' I/O. Rates are over the last interval; the first screen has none.

On a terminal it redraws every --interval seconds and when the window is resized; q or Ctrl-C
quits and gives the terminal back as it was. When stdout is not a terminal, or with --once, it
prints one view (two collections --interval apart) as text. -o json prints --count views as JSON
lines, one object a line ({"nvmeof_json": 1, time, host, interval_seconds, subsystems,
rdma_errors, target: {ports, namespaces}, failed_collectors}), for scripts. NO_COLOR turns colour off.`,
  options: {
    interval: {
      type: "string",
      value: "S",
      description: `Seconds between refreshes (${INTERVAL.min} to ${INTERVAL.max})`,
      default: INTERVAL.default,
    },
    count: {
      type: "string",
      value: "N",
      description: "Stop after N refreshes (JSON lines or listings: N views; default 1 there)",
    },
    once: { type: "boolean", description: "Print one view as text and exit, even on a terminal" },
    ...collectorTimeoutFlag,
  },
  examples: [
    "nvmeof top",
    "nvmeof top --interval 5   # slower refresh",
    "nvmeof top --once   # one view with one second's rates, e.g. in a bug report",
    "nvmeof top -o json --count 10 --interval 2 | jq -c '.subsystems[] | {subsystem_nqn, paths_live}'",
    "nvmeof top --configfs /mnt/config --once   # a storage server whose configfs is elsewhere",
  ],
  run: topRun,
};
