/**
 * The reading of connect's and connect-all's flags (the flags are connect_flags.ts): the
 * addresses of several paths, the HA profile's defaults, the flags -J and --saved refuse, and how
 * a connect run's report becomes a command result.
 */
import { EXIT, UsageError } from "../errors.ts";
import { haProfile, rowOf, type TableField } from "../fabrics/connect_table.ts";
import { checkInt } from "../fabrics/option_checks.ts";
import { type ConnectOptions, DEFAULT_CTRL_LOSS_TMO } from "../fabrics/connect_options.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import type { ConnectIo, ConnectReport } from "../initiator/connect_io.ts";
import { type SavedConnection, savedFromOptions } from "../persist/connections.ts";
import { DEFAULT_RETRY_FOR } from "../persist/units.ts";
import type { CommandResult, OptionValues, RunContext } from "./command.ts";
import { TUNING_FLAGS } from "./connect_flags.ts";
import { connectOptionsFromFlags, secretFilesFromFlags } from "./fabrics_values.ts";

/** The -a values given, in order (none: an empty list; the address check names the flag). */
export function traddrsOf(values: OptionValues): string[] {
  const v = values.traddr;
  return Array.isArray(v) ? v.map(String) : typeof v === "string" ? [v] : [];
}

/**
 * VALUES with the profile's settings for the options not given: the HA profile's (HA), else
 * nvme-cli's ctrl_loss_tmo of 600 s. A flag given on the command line always wins.
 */
export function withProfile(values: OptionValues, ha: boolean): OptionValues {
  const out: OptionValues = { ...values };
  const given = (f: TableField) => {
    const r = rowOf(f);
    return [r.flag, ...(r.aliases ?? [])].some((n) => out[n] !== undefined);
  };
  if (ha) {
    for (const [f, v] of Object.entries(haProfile())) {
      if (!given(f as TableField)) out[rowOf(f as TableField).flag] = String(v);
    }
  }
  if (!given("ctrlLossTmo")) out["ctrl-loss-tmo"] = String(DEFAULT_CTRL_LOSS_TMO);
  return out;
}

/** The paths of `connect -a A -a B …` (or `--ha`), every one checked before anything is written. */
export interface MultipathFlags {
  options: ConnectOptions[];
  ha: boolean;
  /** --persist: the entries to save. */
  save?: SavedConnection[];
}

/** Reads `connect -a A -a B …`: the HA profile unless --no-ha, each address once. */
export async function multipathFromFlags(
  values: OptionValues,
  paths: FabricsPaths,
  target: { nqn: string; addrs: string[] },
): Promise<MultipathFlags> {
  const { nqn, addrs } = target;
  const ha = values["no-ha"] !== true;
  if (values.ha === true && values["no-ha"] === true) {
    throw new UsageError("--ha and --no-ha exclude each other.", { hint: "Use one." });
  }
  const dup = addrs.find((a, i) => addrs.indexOf(a) !== i);
  if (dup !== undefined) {
    throw new UsageError(`-a/--traddr '${dup}' is given twice.`, {
      hint: "Give each path of the subsystem once.",
    });
  }
  const profiled = withProfile(values, ha);
  // Every address is checked before anything is written.
  const options = await Promise.all(
    addrs.map((a) => connectOptionsFromFlags({ ...profiled, traddr: a }, paths, nqn)),
  );
  const files = secretFilesFromFlags(values);
  const save = values.persist === true ? options.map((o) => savedFromOptions(o, files)) : undefined;
  return { options, ha, ...(save ? { save } : {}) };
}

/** --retry-for in milliseconds (default DEFAULT_RETRY_FOR seconds). */
export function retryForMs(values: OptionValues): number {
  const v = values["retry-for"];
  const s = typeof v === "string" ? v : String(DEFAULT_RETRY_FOR);
  return 1000 * checkInt(s, "--retry-for", 0, 86400, "seconds to keep retrying, 0 = once");
}

/** Refuses the flags `connect --saved` does not take (it connects what the file lists). */
export function checkSavedFlags(values: OptionValues): void {
  for (
    const f of ["traddr", "nqn", "hostnqn", "hostid", "host-traddr", ...Object.keys(TUNING_FLAGS)]
  ) {
    if (f === "ctrl-loss-tmo" && values[f] === TUNING_FLAGS[f].default) continue;
    if (values[f] !== undefined) {
      throw new UsageError(`--saved connects the saved connections; --${f} does not apply.`, {
        hint: "Drop the address flags, or connect one subsystem without --saved.",
      });
    }
  }
  if (values.persist === true) {
    throw new UsageError("--saved and --persist exclude each other.", { hint: "Use one." });
  }
}

/** Refuses the flags `connect -J FILE` does not take (it connects what the file lists). */
export function checkConfigFlags(values: OptionValues): void {
  for (const f of ["traddr", "nqn", "persist"]) {
    if (values[f] !== undefined) {
      throw new UsageError(`-J/--config connects what the file lists; --${f} does not apply.`, {
        hint: "Drop it, or connect one subsystem without -J.",
      });
    }
  }
}

/** How a connect run talks: notes to stderr, progress on a terminal or with -v. */
export function connectIo(ctx: RunContext): ConnectIo {
  return {
    note: ctx.note,
    progress: Deno.stderr.isTerminal() || ctx.global.verbose ? ctx.note : undefined,
    verbose: ctx.global.verbose,
  };
}

/** A connect run's report as a command result (exit 1 when anything failed). */
export function resultOf(report: ConnectReport): CommandResult {
  return {
    data: report.data,
    text: () => report.text(),
    ...(report.failed === undefined ? {} : { exitCode: report.failed ? EXIT.failure : EXIT.ok }),
  };
}
