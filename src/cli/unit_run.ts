/**
 * The `run` that the `… disable` commands share: remove a systemd unit nvmeof installed
 * (`target disable`, `disable-autoconnect`, `exporter disable`, `agent disable`). Each imports this
 * module when it runs, not when its module loads: a module is about 0.2 ms of every `--help` of
 * the commands that share the command's module (docs/benchmarks.md, start-up).
 */
import type { CommandResult, RunContext } from "./command.ts";

/** A command's run that disables and removes `unit` (`--now` stops it first, `--dry-run` shows). */
export function disableUnitRun(unit: string): (ctx: RunContext) => Promise<CommandResult> {
  return async (ctx) => {
    const { persistPaths } = await import("../persist/etc_paths.ts");
    const { removeUnit, unitChangeText } = await import("../persist/systemd.ts");
    const change = await removeUnit(persistPaths(), unit, {
      now: ctx.values.now === true,
      dryRun: ctx.values["dry-run"] === true,
    });
    return { data: change, text: () => unitChangeText(change, "disable") };
  };
}
