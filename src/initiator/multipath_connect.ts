/**
 * Every path of one subsystem (`nvmeof connect -a A -a B …`, or `--ha`), each connected even
 * when another fails.
 */
import { type ConnectResult, connectSubsystem } from "../fabrics/connect.ts";
import { haProfile, rowOf, type TableField } from "../fabrics/connect_table.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import {
  namespaceQueuesData,
  namespaceQueueText,
  redactedOptionString,
} from "../fabrics/option_string.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import type { SavedConnection } from "../persist/connections.ts";
import { persistEntries, savedFile } from "./persist_entries.ts";
import type { ConnectIo, ConnectReport } from "./connect_io.ts";
import { addr, connectText, failureReason } from "./connect_report.ts";

/** The paths to connect, checked, and what to do with them. */
export interface MultipathRequest {
  nqn: string;
  /** One per path, in the order given (the profile already applied). */
  options: ConnectOptions[];
  /** Report the HA profile's settings. */
  ha: boolean;
  /** --persist: the entries to save once every path was tried. */
  save?: SavedConnection[];
  dryRun: boolean;
}

/** One path: connected (or found), or why not. */
type PathRow = ConnectResult | {
  traddr: string;
  trsvcid: string;
  status: "failed";
  reason: string;
};

/**
 * Connects every path of one subsystem, each even when another fails; `failed` when any did.
 * A dry run shows the option strings and writes nothing.
 */
export async function connectPaths(
  paths: FabricsPaths,
  req: MultipathRequest,
  io: ConnectIo,
): Promise<ConnectReport> {
  const { nqn, options: all, save } = req;
  const profile = req.ha ? haProfile() : undefined;
  const haData = profile
    ? Object.fromEntries(
      Object.keys(profile).map((f) => [rowOf(f as TableField).token, all[0][f as TableField]]),
    )
    : undefined;
  if (req.dryRun) {
    const data = {
      dry_run: true,
      device: `${paths.dev}/nvme-fabrics`,
      ...(haData ? { ha: haData } : {}),
      option_strings: all.map(redactedOptionString),
      ...namespaceQueuesData(all[0]),
      ...(save ? { would_save: save } : {}),
    };
    return {
      data,
      text: () =>
        [...data.option_strings, namespaceQueueText(all[0])].filter((l) => l).join("\n") +
        (save ? `\nwould save ${save.length} paths in ${savedFile()}` : ""),
    };
  }
  const rows: PathRow[] = [];
  for (const opts of all) {
    if (io.verbose) io.note(`writing to ${paths.dev}/nvme-fabrics: ${redactedOptionString(opts)}`);
    try {
      rows.push(await connectSubsystem(paths, opts, { progress: io.progress }));
    } catch (err) {
      rows.push({
        traddr: opts.traddr,
        trsvcid: opts.trsvcid,
        status: "failed",
        reason: failureReason(err),
      });
    }
  }
  const saved = save ? await persistEntries(save) : undefined;
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
            ? `failed: '${nqn}' at ${addr(all[0].transport, r.traddr, r.trsvcid)}: ${r.reason}`
            : connectText(r)
        ),
        ...(saved ? [saved.text] : []),
      ].join("\n"),
    failed: rows.some((r) => "status" in r),
  };
}
