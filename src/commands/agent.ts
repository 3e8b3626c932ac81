/**
 * `nvmeof agent`: follow discovery controllers and connect what they offer as it appears (the
 * loop is src/agent/run.ts), and `agent enable / disable`: its systemd unit.
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { ADDRESS_FLAGS, HOST_FLAGS } from "../cli/fabrics_flags.ts";
import { CONNECT_COMMAND_FLAGS, TUNING_FLAGS } from "../cli/connect_flags.ts";
import { stringFlag } from "../cli/parse.ts";
import { FailureError, UsageError } from "../errors.ts";
import { AGENT_UNIT } from "../persist/units.ts";
import type { RemovalPolicy } from "../agent/follower.ts";

const DEFAULT_RESCAN_S = "60";

function rescanMs(ctx: RunContext): number {
  const text = stringFlag(ctx.values, "rescan-interval") ?? DEFAULT_RESCAN_S;
  if (!/^\d+$/.test(text) || Number(text) > 86400) {
    throw new UsageError(`Invalid --rescan-interval '${text}': expected seconds, 0 to 86400.`, {
      hint: "Give a whole number of seconds; 0 turns the periodic re-read off.",
    });
  }
  return Number(text) * 1000;
}

/** The removal policies, as --on-removal takes them. */
const REMOVAL_POLICIES = ["leave", "disconnect-unused"] as const satisfies readonly RemovalPolicy[];

function onRemoval(ctx: RunContext): RemovalPolicy {
  const text = stringFlag(ctx.values, "on-removal") ?? "leave";
  const policy = REMOVAL_POLICIES.find((p) => p === text);
  if (!policy) {
    throw new UsageError(`Invalid --on-removal '${text}'.`, {
      hint: `Give one of: ${REMOVAL_POLICIES.join(", ")}.`,
    });
  }
  return policy;
}

async function agentRun(ctx: RunContext): Promise<CommandResult> {
  const interval = rescanMs(ctx);
  const removal = onRemoval(ctx);
  const { connectOptionsFromFlags } = await import("../cli/fabrics_values.ts");
  const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
  const { confBases } = await import("../initiator/connect_all.ts");
  const { discoveryConfControllers, requireDiscoveryConf } = await import(
    "../persist/discovery_conf.ts"
  );
  const { readExclusions } = await import("../persist/exclusions_conf.ts");
  const { hostPaths } = await import("../host_paths.ts");
  const { runAgent } = await import("../agent/run.ts");
  const { decisionText } = await import("../agent/decisions.ts");
  const { versioned } = await import("../output/contract.ts");
  const { writeAll } = await import("../output/write.ts");
  const { Canceller } = await import("../wait.ts");
  const v = ctx.values;
  const paths = fabricsPaths();
  const exclusions = readExclusions(paths.etcNvme);
  const { connectionsFile, persistPaths } = await import("../persist/etc_paths.ts");
  const { isDiscoveryEntry, loadConnections, optionsFromSaved } = await import(
    "../persist/connections.ts"
  );
  const saved = await Promise.all(
    (await loadConnections(connectionsFile(persistPaths())))
      .filter((c) => !isDiscoveryEntry(c)).map(optionsFromSaved),
  );
  const given = v.traddr !== undefined;
  const flags = await connectOptionsFromFlags({ ...v, traddr: v.traddr ?? "0.0.0.0" }, paths, "");
  const host = { hostnqn: flags.hostnqn!, hostid: flags.hostid! };
  const conf = given
    ? await discoveryConfControllers(paths.etcNvme, host)
    : await requireDiscoveryConf(paths.etcNvme, host);
  for (const n of conf?.notes ?? []) ctx.note(n);
  const endpoints = [...(given ? [flags] : []), ...(conf ? confBases(flags, conf) : [])];
  const json = ctx.global.output === "json";
  const emit = (d: Parameters<typeof decisionText>[0]) => {
    writeAll(Deno.stdout, (json ? JSON.stringify(versioned(d)) : decisionText(d)) + "\n");
  };
  using cancel = new Canceller().onSignals();
  const summary = await runAgent(paths, {
    endpoints,
    rescanMs: interval,
    exclusions: exclusions.list,
    onRemoval: removal,
    ha: v["no-ha"] !== true,
    saved,
    proc: hostPaths().proc,
    emit,
    note: ctx.note,
    cancel,
  });
  return { data: summary, streamed: true };
}

async function enableRun(ctx: RunContext): Promise<CommandResult> {
  const removal = onRemoval(ctx);
  if (ctx.values.force !== true) {
    // A unit with nothing to follow would fail at every boot: read discovery.conf now.
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { resolveHostIdentity } = await import("../fabrics/host_identity.ts");
    const { discoveryConfControllers } = await import("../persist/discovery_conf.ts");
    const paths = fabricsPaths();
    const id = await resolveHostIdentity({}, paths);
    const file = `${paths.etcNvme}/discovery.conf`;
    const conf = await discoveryConfControllers(paths.etcNvme, id);
    if (!conf?.controllers.length) {
      throw new FailureError(
        `The agent would have nothing to follow: '${file}' ${
          conf ? "lists no discovery controller" : "does not exist"
        }.`,
        {
          hint: `List the discovery controllers there, one line of nvme-cli flags each ` +
            "(--transport=rdma --traddr=10.0.0.2 --trsvcid=4420), or pass --force to install " +
            "the unit anyway.",
        },
      );
    }
  }
  const { persistPaths } = await import("../persist/etc_paths.ts");
  const { selfPath } = await import("../persist/self.ts");
  const { agentUnitText, installUnit, unitChangeText } = await import("../persist/systemd.ts");
  const self = selfPath();
  const change = await installUnit(persistPaths(), AGENT_UNIT, {
    text: agentUnitText(self, removal === "leave" ? [] : ["--on-removal", removal]),
    now: ctx.values.now === true,
    dryRun: ctx.values["dry-run"] === true,
  });
  const data = { ...change, program: self.path };
  return { data, text: () => unitChangeText(change, "enable") };
}

/** `nvmeof agent`. */
export const agentCommand: CommandDetails = {
  description: `
Follows discovery controllers and connects what they offer, as it appears: every line of
/etc/nvme/discovery.conf (nvme-cli's file, as 'connect-all' reads it) and the endpoint given
with -a. For each it holds one persistent discovery controller (an existing one is used, never
a second; one it makes has the HA profile's keep-alive and reconnect delay, 1 s each, so that a
storage server's return is read within seconds; with --no-ha a keep-alive of 30 s, as
'nvme discover -p'), reads the log page, and connects each NVM subsystem entry through
connect-all's walk: controllers that exist already are recognised (transport, address, service
id, subsystem NQN, host NQN, host address and interface), discovery entries are ignored. A
referral the host can reach becomes an endpoint followed the same way. The tuning flags apply
to the I/O controllers it makes. A subsystem the logs offer at several paths (every log of a
scan is read before any connect) is connected with connect's HA profile for what the flags
leave unset, as 'connect -a A -a B' does; --no-ha keeps the kernel's defaults. A path a saved
connection names ('connect --persist', in /etc/nvmeof/connections.yaml) is connected with its
saved options over all of these. A path already connected keeps its settings.

It reads the kernel's uevents itself (no udevd): a Discovery Log Change event on a followed
discovery controller (NVME_AEN=0x70f002) reads that log again; its reconnection
(NVME_EVENT=rediscover) or loss, and the removal of a controller it connected, read that
endpoint again; all are read at start and every --rescan-interval seconds as a backstop. One
scan runs at a time; events meanwhile cause one more scan after it. A failed connect or an
unreachable endpoint is retried with back-off (1 s doubling to 60 s) and said once per change.

/etc/nvme/exclusions.conf keeps subsystems and addresses out: one exclusion per line, written
as nvme-cli flags (--nqn=NQN, --traddr=ADDR, --trsvcid=PORT, --transport=T); an entry that
matches every flag of a line is never connected, nor followed when it is a referral.

What leaves a log: by default (--on-removal leave) the agent disconnects nothing and says so
once (the kernel gives up on a path whose subsystem went after ctrl-loss-tmo). With
--on-removal disconnect-unused it disconnects a path it connected itself (in this run or an
earlier one) once no namespace of it is mounted, a swap area, held by device-mapper or md, or
open in a process; one in use is kept, said once, and checked again at every scan. It never
disconnects what it did not connect. A controller removed by hand is connected again while its
subsystem is in the log: stop the agent first.

It runs in the foreground and prints one line per decision (with -o json, one JSON object per
line); SIGINT or SIGTERM stops it (exit 0), leaving every controller in place. What it follows
and did is kept in /run/nvmeof/agent.json: 'nvmeof agent status' shows it.
'nvmeof agent enable' installs it as a service.`,
  options: {
    ...ADDRESS_FLAGS,
    ...HOST_FLAGS,
    ...TUNING_FLAGS,
    // As connect's: no default filled in, so that the HA profile can tell it was not given.
    "ctrl-loss-tmo": CONNECT_COMMAND_FLAGS["ctrl-loss-tmo"],
    "on-removal": {
      type: "string",
      value: "POLICY",
      description: "A path it connected that leaves the log: leave (default) or disconnect-unused",
    },
    "no-ha": {
      type: "boolean",
      description:
        "The kernel's timeouts for every path; discovery controllers as 'nvme discover -p'",
    },
    "rescan-interval": {
      type: "string",
      value: "SECONDS",
      description:
        `Read every log again this often (default ${DEFAULT_RESCAN_S}; 0 = only on events)`,
    },
  },
  examples: [
    "nvmeof agent   # every discovery controller of /etc/nvme/discovery.conf",
    "nvmeof agent -t rdma -a 10.0.0.2 -s 4420",
    "nvmeof agent -a 10.0.0.2 -o json | jq -c 'select(.action == \"connected\")'",
    "nvmeof agent --on-removal disconnect-unused   # take away what left the log, unless used",
    "echo '--nqn=nqn.2024-01.io.example:scratch' >> /etc/nvme/exclusions.conf   # never this one",
    "nvmeof agent enable --now   # as a service, after the network is online",
  ],
  run: agentRun,
};

async function statusRun(): Promise<CommandResult> {
  const { readStatus, statusText } = await import("../agent/status.ts");
  const { runDirPath } = await import("../host/run_dir.ts");
  const { versioned } = await import("../output/contract.ts");
  const found = readStatus();
  if (!found) {
    const file = `${runDirPath()}/agent.json`;
    return {
      data: versioned({ running: false, file }),
      text: () => `agent not running: no state at '${file}' (it has not run since boot)`,
      exitCode: 1,
    };
  }
  const data = versioned({ running: found.running, file: found.file, ...found.status });
  return { data, text: () => statusText(found), exitCode: found.running ? 0 : 1 };
}

/** `nvmeof agent status`. */
export const agentStatusCommand: CommandDetails = {
  description: `
Shows what the agent running on this host follows and did, from the state it keeps in
/run/nvmeof/agent.json after every scan: each endpoint (following through which discovery
controller, or unreachable and why; the last generation read and when), the subsystems it
connected, and its counts of scans, uevents and failed connects. Exit 0 while it runs, 1 when it
does not (the last run's state is still shown). Root only: the directory is root's.`,
  examples: ["nvmeof agent status", "nvmeof agent status -o json | jq '.endpoints[].genctr'"],
  run: statusRun,
};

/** `nvmeof agent enable`. */
export const agentEnableCommand: CommandDetails = {
  description: `
Writes ${AGENT_UNIT} to /etc/systemd/system and enables it: it runs 'nvmeof agent' after
network-online.target, following the discovery controllers of /etc/nvme/discovery.conf, and is
restarted when it fails (not when its configuration is wrong: exit 2). discovery.conf is read
first: with no discovery controller in it nothing is installed, unless --force. The unit names
this program by its absolute path. NVMEOF_SYSTEMD_DIR overrides /etc/systemd/system.`,
  options: {
    now: { type: "boolean", description: "Also (re)start the unit now" },
    force: { type: "boolean", description: "Install even with no discovery controller listed yet" },
    "on-removal": {
      type: "string",
      value: "POLICY",
      description: "The agent's --on-removal: leave (default) or disconnect-unused",
    },
    "dry-run": {
      type: "boolean",
      description: "Print the unit and where it would go; write nothing",
    },
  },
  examples: [
    "echo '--transport=rdma --traddr=10.0.0.2 --trsvcid=4420' >> /etc/nvme/discovery.conf",
    "nvmeof agent enable --now",
    "nvmeof agent enable --dry-run   # print the unit",
    "nvmeof agent enable --now --on-removal disconnect-unused",
  ],
  run: enableRun,
};

/** `nvmeof agent disable`. */
export const agentDisableCommand: CommandDetails = {
  description: `Removes ${AGENT_UNIT} and its enable link; --now also stops it. Controllers stay.`,
  options: {
    now: { type: "boolean", description: "Also stop the unit" },
    "dry-run": { type: "boolean", description: "Show what would be removed; change nothing" },
  },
  examples: ["nvmeof agent disable --now"],
  run: (ctx) => import("../cli/unit_run.ts").then((m) => m.disableUnitRun(AGENT_UNIT)(ctx)),
};
