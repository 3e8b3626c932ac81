/**
 * `nvmeof metrics`: one collection (src/metrics/collect.ts) in Prometheus' text format, on stdout
 * or written atomically for node_exporter's textfile collector.
 */
import { collectorTimeoutFlag, collectorTimeoutMs } from "../cli/metrics_flags.ts";
import { stringFlag } from "../cli/parse.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { FailureError } from "../errors.ts";

/** The mode of a textfile: node_exporter may run as another user. */
const TEXTFILE_MODE = 0o644;

async function metricsRun(ctx: RunContext): Promise<CommandResult> {
  const timeoutMs = collectorTimeoutMs(ctx.values);
  const { CollectorFailureLog, collectFamilies } = await import("../metrics/collect.ts");
  const { renderExposition } = await import("../metrics/exposition.ts");
  const { versioned } = await import("../output/contract.ts");
  const families = await collectFamilies({
    configfs: `${ctx.global.configfs}/nvmet`,
    peers: await ctx.env?.target?.peers(),
    timeoutMs,
    onCollectorError: new CollectorFailureLog((line) => ctx.note(`nvmeof metrics: ${line}`)).failed,
  });
  const exposition = renderExposition(families);
  const textfile = stringFlag(ctx.values, "textfile");
  if (textfile === undefined) {
    return { data: versioned({ families }), text: () => exposition };
  }
  const { writeDurableSync } = await import("../persist/durable.ts");
  if (!textfile.endsWith(".prom")) {
    ctx.note(
      `note: node_exporter's textfile collector reads only *.prom files, not '${textfile}'.`,
    );
  }
  try {
    writeDurableSync(textfile, exposition, TEXTFILE_MODE);
  } catch (err) {
    throw new FailureError(
      `Cannot write the metrics to '${textfile}': ${(err as Error).message}.`,
      {
        hint: "Give a file in an existing directory this user may write, such as " +
          "/var/lib/prometheus/node-exporter/nvmeof.prom.",
        cause: err,
      },
    );
  }
  const data = versioned({ textfile, families });
  return { data, text: () => `wrote ${families.length} metric families to ${textfile}` };
}

/** `nvmeof metrics`. */
export const metricsCommand: CommandDetails = {
  description: `
Collects this machine's NVMe-oF state once and prints it in Prometheus' text format (0.0.4): the
host's fabrics paths and subsystems (/sys/class/nvme), block I/O counters of their devices and of
the target's backing devices, RDMA ports and their counters (/sys/class/infiniband, no library
needed), and the nvmet target (configfs, its listeners and connected hosts). docs/metrics.md lists
every family. A source this machine lacks is left out; each collector's success and time is
reported (nvmeof_scrape_collector_success, nvmeof_scrape_duration_seconds).
--textfile writes the same atomically (a temporary file in the same directory, flushed, renamed;
mode 0644) for node_exporter's textfile collector: run it from a timer. -o json gives the families
as data. 'nvmeof exporter' serves the same over HTTP.`,
  options: {
    textfile: {
      type: "string",
      value: "FILE",
      description: "Write to FILE (atomically, mode 0644) instead of stdout",
    },
    ...collectorTimeoutFlag,
  },
  examples: [
    "nvmeof metrics",
    "nvmeof metrics --textfile /var/lib/prometheus/node-exporter/nvmeof.prom",
    "nvmeof metrics -o json",
    "nvmeof metrics --collector-timeout-ms 30000   # hundreds of paths on a slow machine",
  ],
  run: metricsRun,
};
