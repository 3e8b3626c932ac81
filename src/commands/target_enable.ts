/**
 * `nvmeof target enable / disable`: the systemd unit that restores the target at boot.
 */
import { stringFlag } from "../cli/parse.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { FailureError } from "../errors.ts";
import { TARGET_UNIT } from "../persist/units.ts";
import { defaultSpecFile } from "../target/spec_file.ts";

function absolute(file: string): string {
  return file.startsWith("/") ? file : `${Deno.cwd()}/${file}`;
}

async function enableRun(ctx: RunContext): Promise<CommandResult> {
  const { persistPaths } = await import("../persist/etc_paths.ts");
  const { selfPath } = await import("../persist/self.ts");
  const { installUnit, targetUnitText, unitChangeText } = await import("../persist/systemd.ts");
  const paths = persistPaths();
  // The unit must not fail at every boot on a spec that is wrong now: validate it first.
  const { loadSpecFile } = await import("../target/spec.ts");
  const file = absolute(stringFlag(ctx.values, "file") ?? defaultSpecFile());
  const spec = await loadSpecFile(file, { checkFiles: ctx.values["skip-device-check"] !== true });
  if (spec.ports.length === 0) {
    throw new FailureError(`The spec '${file}' defines no port, so no host could connect.`, {
      hint: "Add a port (ports: - id: 1, traddr: …, subsystems: […]) before enabling it.",
    });
  }
  const self = selfPath();
  const change = await installUnit(paths, TARGET_UNIT, {
    text: targetUnitText(self, file),
    now: ctx.values.now === true,
    dryRun: ctx.values["dry-run"] === true,
  });
  const data = { ...change, spec_file: file, program: self.path };
  return { data, text: () => unitChangeText(change, "enable") };
}

/** `nvmeof target enable`. */
export const targetEnableCommand: CommandDetails = {
  description: `
Validates the spec (as 'target check' does), then writes ${TARGET_UNIT} to
/etc/systemd/system and enables it (the multi-user.target.wants link 'systemctl enable' makes).
At boot it runs 'nvmeof target up -f FILE' once configfs is mounted and the network and RDMA
devices are up, retrying every 10 s while a port's address is not yet there; at shutdown (or
'systemctl stop') it runs 'nvmeof target down -f FILE'. The unit names this program by its
absolute path: the compiled binary itself, or scripts/nvmeof when run from source.
NVMEOF_SYSTEMD_DIR and NVMEOF_ETC override /etc/systemd/system and /etc/nvmeof.`,
  options: {
    file: {
      type: "string",
      short: "f",
      value: "FILE",
      description: "Target spec the unit applies (default /etc/nvmeof/target.yaml)",
    },
    now: { type: "boolean", description: "Also (re)start the unit now" },
    "skip-device-check": {
      type: "boolean",
      description: "Do not require the spec's devices and key files to exist yet",
    },
    "dry-run": {
      type: "boolean",
      description: "Print the unit and where it would go; write nothing",
    },
  },
  examples: [
    "nvmeof target enable   # /etc/nvmeof/target.yaml at every boot",
    "nvmeof target enable -f /etc/nvmeof/lab.yaml --now",
    "nvmeof target enable --dry-run   # print the unit",
  ],
  run: enableRun,
};

/** `nvmeof target disable`. */
export const targetDisableCommand: CommandDetails = {
  description: `
Removes ${TARGET_UNIT} and its enable link. The running target is left as it is unless --now,
which stops the unit first (that runs 'target down' and removes what the spec made).`,
  options: {
    now: { type: "boolean", description: "Also stop the unit (takes the target down)" },
    "dry-run": { type: "boolean", description: "Show what would be removed; change nothing" },
  },
  examples: ["nvmeof target disable", "nvmeof target disable --now"],
  run: (ctx) => import("../cli/unit_run.ts").then((m) => m.disableUnitRun(TARGET_UNIT)(ctx)),
};
