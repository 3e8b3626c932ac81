/**
 * `nvmeof connect -a A -a B …` (or `--ha`): every path of one subsystem, with the HA profile.
 */
import type { CommandResult, OptionValues, RunContext } from "../cli/command.ts";
import { EXIT, NvmeofError, UsageError } from "../errors.ts";
import { type ConnectResult, connectSubsystem } from "../fabrics/connect.ts";
import { secretFilesFromFlags } from "../fabrics/flags.ts";
import {
  DEFAULT_CTRL_LOSS_TMO,
  namespaceQueuesData,
  namespaceQueueText,
  redactedOptionString,
} from "../fabrics/options.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { savedFromOptions } from "../persist/connections.ts";
import { haProfile, rowOf, type TableField } from "../fabrics/connect_table.ts";
import {
  addr,
  connectOptionsFromFlags,
  connectText,
  persistEntries,
  progressOf,
  savedFile,
} from "./connect_shared.ts";

/** The -a values given, in order (none: an empty list; the address check names the flag). */
export function traddrsOf(values: OptionValues): string[] {
  const v = values.traddr;
  return Array.isArray(v) ? v.map(String) : typeof v === "string" ? [v] : [];
}

/** "keep_alive_tmo=1 reconnect_delay=1 …": the HA profile as option-string tokens. */
export function haText(): string {
  return Object.entries(haProfile()).map(([f, v]) => `${rowOf(f as TableField).token}=${v}`)
    .join(" ");
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

/** One path of `connect -a A -a B`: connected (or found), or why not. */
type PathRow = ConnectResult | {
  traddr: string;
  trsvcid: string;
  status: "failed";
  reason: string;
};

/**
 * `connect -a A -a B …` (or `--ha`): every path of one subsystem, with the HA profile unless
 * --no-ha. Each path is connected even when another fails; exit 1 when any failed.
 */
export async function connectPathsRun(
  ctx: RunContext,
  paths: FabricsPaths,
  nqn: string,
  addrs: string[],
): Promise<CommandResult> {
  const ha = ctx.values["no-ha"] !== true;
  if (ctx.values.ha === true && ctx.values["no-ha"] === true) {
    throw new UsageError("--ha and --no-ha exclude each other.", { hint: "Use one." });
  }
  const dup = addrs.find((a, i) => addrs.indexOf(a) !== i);
  if (dup !== undefined) {
    throw new UsageError(`-a/--traddr '${dup}' is given twice.`, {
      hint: "Give each path of the subsystem once.",
    });
  }
  const values = withProfile(ctx.values, ha);
  // Every address is checked before anything is written.
  const all = await Promise.all(
    addrs.map((a) => connectOptionsFromFlags({ ...values, traddr: a }, paths, nqn)),
  );
  const profile = ha ? haProfile() : undefined;
  const haData = profile
    ? Object.fromEntries(
      Object.keys(profile).map((f) => [rowOf(f as TableField).token, all[0][f as TableField]]),
    )
    : undefined;
  const files = secretFilesFromFlags(ctx.values);
  const persist = ctx.values.persist === true
    ? all.map((o) => savedFromOptions(o, files))
    : undefined;
  if (ctx.values["dry-run"] === true) {
    const data = {
      dry_run: true,
      device: `${paths.dev}/nvme-fabrics`,
      ...(haData ? { ha: haData } : {}),
      option_strings: all.map(redactedOptionString),
      ...namespaceQueuesData(all[0]),
      ...(persist ? { would_save: persist } : {}),
    };
    return {
      data,
      text: () =>
        [...data.option_strings, namespaceQueueText(all[0])].filter((l) => l).join("\n") +
        (persist ? `\nwould save ${persist.length} paths in ${savedFile()}` : ""),
    };
  }
  const rows: PathRow[] = [];
  for (const opts of all) {
    if (ctx.global.verbose) {
      ctx.note(`writing to ${paths.dev}/nvme-fabrics: ${redactedOptionString(opts)}`);
    }
    try {
      rows.push(await connectSubsystem(paths, opts, { progress: progressOf(ctx) }));
    } catch (err) {
      rows.push({
        traddr: opts.traddr,
        trsvcid: opts.trsvcid,
        status: "failed",
        reason: err instanceof NvmeofError
          ? err.message + (err.hint ? " " + err.hint.split("\n")[0] : "")
          : (err as Error).message,
      });
    }
  }
  const saved = persist ? await persistEntries(persist) : undefined;
  const data = {
    subsysnqn: nqn,
    ...(haData ? { ha: haData } : {}),
    paths: rows,
    ...(saved ? { saved: saved.file } : {}),
  };
  return {
    data,
    text: () =>
      [
        ...(haData
          ? [`HA profile: ${Object.entries(haData).map(([k, v]) => `${k}=${v}`).join(" ")}`]
          : []),
        ...rows.map((r) =>
          "status" in r
            ? `failed: '${nqn}' at ${
              addr(ctx.values.transport as string, r.traddr, r.trsvcid)
            }: ${r.reason}`
            : connectText(r)
        ),
        ...(saved ? [saved.text] : []),
      ].join("\n"),
    exitCode: rows.some((r) => "status" in r) ? EXIT.failure : EXIT.ok,
  };
}
