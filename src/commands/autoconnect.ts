/**
 * `nvmeof enable-autoconnect / disable-autoconnect`: the systemd unit that reconnects the saved
 * connections at boot.
 */
import { stringFlag } from "../cli/parse.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { FailureError } from "../errors.ts";
import { AUTOCONNECT_UNIT, DEFAULT_RETRY_FOR } from "../persist/units.ts";

async function enableRun(ctx: RunContext): Promise<CommandResult> {
  const { checkInt } = await import("../fabrics/option_checks.ts");
  const { loadConnections } = await import("../persist/connections.ts");
  const { connectionsFile, persistPaths } = await import("../persist/etc_paths.ts");
  const { selfPath } = await import("../persist/self.ts");
  const { autoconnectUnitText, installUnit, unitChangeText } = await import(
    "../persist/systemd.ts"
  );
  const paths = persistPaths();
  const file = connectionsFile(paths);
  // A broken connections file would fail at every boot: read and check it now.
  const saved = await loadConnections(file);
  if (saved.length === 0 && ctx.values.force !== true) {
    throw new FailureError(`There are no saved connections in '${file}'.`, {
      hint: "Save some first ('nvmeof connect --persist …', 'nvmeof connections import " +
        "--from-nvme-cli'), or pass --force to install the unit anyway.",
    });
  }
  const retryFor = checkInt(
    stringFlag(ctx.values, "retry-for") ?? String(DEFAULT_RETRY_FOR),
    "--retry-for",
    0,
    86400,
    "seconds the boot-time connect keeps retrying",
  );
  const self = selfPath();
  const change = await installUnit(paths, AUTOCONNECT_UNIT, {
    text: autoconnectUnitText(self, paths, retryFor),
    now: ctx.values.now === true,
    dryRun: ctx.values["dry-run"] === true,
  });
  const data = { ...change, connections_file: file, saved: saved.length, program: self.path };
  return { data, text: () => unitChangeText(change, "enable") };
}

/** `nvmeof enable-autoconnect`. */
export const enableAutoconnectCommand: CommandDetails = {
  description: `
Checks the saved connections (/etc/nvmeof/connections.yaml), then writes ${AUTOCONNECT_UNIT} to
/etc/systemd/system and enables it. At boot, after the network is online and before remote file
systems are mounted, it runs 'nvmeof connect --saved --retry-for SECONDS': targets not reachable
yet are retried with backoff (1 s doubling to 15 s) until the bound, and each attempt is logged to
the journal ('journalctl -u ${AUTOCONNECT_UNIT}'). The unit names this program by its absolute path.`,
  options: {
    "retry-for": {
      type: "string",
      value: "SECONDS",
      description: `How long the boot-time connect keeps retrying (default ${DEFAULT_RETRY_FOR})`,
    },
    now: { type: "boolean", description: "Also run the unit now" },
    force: { type: "boolean", description: "Install even with no saved connections yet" },
    "dry-run": {
      type: "boolean",
      description: "Print the unit and where it would go; write nothing",
    },
  },
  examples: [
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --persist && nvmeof enable-autoconnect",
    "nvmeof enable-autoconnect --retry-for 600   # slow targets",
    "nvmeof enable-autoconnect --dry-run",
  ],
  run: enableRun,
};

/** `nvmeof disable-autoconnect`. */
export const disableAutoconnectCommand: CommandDetails = {
  description: `Removes ${AUTOCONNECT_UNIT} and its enable link; live connections stay up.`,
  options: {
    "dry-run": { type: "boolean", description: "Show what would be removed; change nothing" },
  },
  examples: ["nvmeof disable-autoconnect"],
  run: (ctx) => import("../cli/unit_run.ts").then((m) => m.disableUnitRun(AUTOCONNECT_UNIT)(ctx)),
};
