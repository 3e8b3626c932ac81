/**
 * `nvmeof exporter`: serves `nvmeof metrics` over HTTP for Prometheus (src/metrics/exporter.ts),
 * and `exporter enable / disable`: its systemd unit.
 */
import { stringFlag } from "../cli/parse.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import type { SocketAddress } from "../net/address.ts";
import { EXPORTER_UNIT } from "../persist/units.ts";
import { DEFAULT_CACHE_MS, DEFAULT_LISTEN } from "../metrics/defaults.ts";
import { collectorTimeoutFlag, collectorTimeoutMs, msFlag } from "../cli/metrics_flags.ts";

/** The --listen value as an address; a UsageError when it is none. */
async function listenAddress(text: string): Promise<SocketAddress> {
  const { parseHostPort } = await import("../net/address.ts");
  const listen = parseHostPort(text);
  if (!listen) {
    throw new UsageError(`Invalid --listen '${text}': expected ADDR:PORT.`, {
      hint: "Give an IP address and a port: 127.0.0.1:9723, 0.0.0.0:9723, [::1]:9723.",
    });
  }
  return listen;
}

async function exporterRun(ctx: RunContext): Promise<CommandResult> {
  const listen = await listenAddress(stringFlag(ctx.values, "listen") ?? DEFAULT_LISTEN);
  const cacheMs = msFlag(ctx.values, "cache-ms", DEFAULT_CACHE_MS);
  const timeoutMs = collectorTimeoutMs(ctx.values);
  const { CollectorFailureLog, collectFamilies, createdControllers } = await import(
    "../metrics/collect.ts"
  );
  const { serveMetrics } = await import("../metrics/exporter.ts");
  const { hostPort } = await import("../net/address.ts");
  const peers = await ctx.env?.target?.peers();
  const configfs = `${ctx.global.configfs}/nvmet`;
  const failures = new CollectorFailureLog((line) => ctx.note(`nvmeof exporter: ${line}`));
  using created = createdControllers();
  const collect = async () => {
    const families = await collectFamilies({
      configfs,
      peers,
      created,
      timeoutMs,
      onCollectorError: failures.failed,
    });
    failures.collected();
    return families;
  };
  const stop = new AbortController();
  const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
  const onSignal = () => stop.abort();
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  try {
    const summary = await serveMetrics({
      listen,
      cacheMs,
      collect,
      onListen: (a) =>
        ctx.note(`nvmeof exporter: listening on http://${hostPort(a.address, a.port)}/metrics`),
    }, stop.signal);
    return {
      data: summary,
      text: () =>
        `nvmeof exporter: stopped (${summary.requests} requests, ${summary.collections} ` +
        "collections)",
    };
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onSignal);
  }
}

async function enableRun(ctx: RunContext): Promise<CommandResult> {
  const listen = stringFlag(ctx.values, "listen");
  if (listen !== undefined) await listenAddress(listen); // a typo must not become a failing service
  const { persistPaths } = await import("../persist/etc_paths.ts");
  const { selfPath } = await import("../persist/self.ts");
  const { exporterUnitText, installUnit, unitChangeText } = await import("../persist/systemd.ts");
  const self = selfPath();
  const change = await installUnit(persistPaths(), EXPORTER_UNIT, {
    text: exporterUnitText(self, listen),
    now: ctx.values.now === true,
    dryRun: ctx.values["dry-run"] === true,
  });
  const data = { ...change, listen: listen ?? DEFAULT_LISTEN, program: self.path };
  return { data, text: () => unitChangeText(change, "enable") };
}

/** `nvmeof exporter`. */
export const exporterCommand: CommandDetails = {
  description: `
Serves what 'nvmeof metrics' prints over HTTP for Prometheus: GET /metrics (text format 0.0.4)
and GET /healthz; any other path is 404, any other method 405. It listens on ${DEFAULT_LISTEN}
unless --listen names another address (0.0.0.0:9723 for every address; port 0 picks a free
one) and prints the address on stderr. One collection runs at a time: scrapes meanwhile share it,
and it is reused for --cache-ms; each collector has its own time limit. Path state changes are
counted from its start (nvmeof_path_state_changes_total). SIGTERM or SIGINT stops it (exit 0).
It cannot listen: exit 3, with the reason. 'nvmeof exporter enable' installs it as a service.`,
  options: {
    listen: {
      type: "string",
      value: "ADDR:PORT",
      description: `Address and port to listen on (default ${DEFAULT_LISTEN})`,
    },
    "cache-ms": {
      type: "string",
      value: "MS",
      description: `Reuse a collection for MS ms (default ${DEFAULT_CACHE_MS})`,
    },
    ...collectorTimeoutFlag,
  },
  examples: [
    "nvmeof exporter",
    "nvmeof exporter --listen 0.0.0.0:9723",
    "curl -s http://127.0.0.1:9723/metrics | grep nvmeof_path_up",
  ],
  run: exporterRun,
};

/** `nvmeof exporter enable`. */
export const exporterEnableCommand: CommandDetails = {
  description: `
Writes ${EXPORTER_UNIT} to /etc/systemd/system and enables it (the multi-user.target.wants
link 'systemctl enable' makes): it runs 'nvmeof exporter' after network-online.target, restarted
when it fails, with /usr, /boot and /etc read-only. --listen is checked, then passed to the unit. The unit
names this program by its absolute path. NVMEOF_SYSTEMD_DIR overrides /etc/systemd/system.`,
  options: {
    listen: {
      type: "string",
      value: "ADDR:PORT",
      description: `Address and port the exporter listens on (default ${DEFAULT_LISTEN})`,
    },
    now: { type: "boolean", description: "Also (re)start the unit now" },
    "dry-run": {
      type: "boolean",
      description: "Print the unit and where it would go; write nothing",
    },
  },
  examples: [
    "nvmeof exporter enable --now",
    "nvmeof exporter enable --listen 0.0.0.0:9723 --now",
    "nvmeof exporter enable --dry-run   # print the unit",
  ],
  run: enableRun,
};

/** `nvmeof exporter disable`. */
export const exporterDisableCommand: CommandDetails = {
  description: `Removes ${EXPORTER_UNIT} and its enable link; --now also stops it.`,
  options: {
    now: { type: "boolean", description: "Also stop the unit" },
    "dry-run": { type: "boolean", description: "Show what would be removed; change nothing" },
  },
  examples: ["nvmeof exporter disable --now"],
  run: (ctx) => import("../cli/unit_run.ts").then((m) => m.disableUnitRun(EXPORTER_UNIT)(ctx)),
};
