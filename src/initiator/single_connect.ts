/**
 * One path of one subsystem (`nvmeof connect -a A -n NQN`): the option string written to
 * /dev/nvme-fabrics, the controller read back, and the entry saved with --persist.
 */
import { connectSubsystem } from "../fabrics/connect.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import {
  namespaceQueuesData,
  namespaceQueueText,
  redactedOptionString,
} from "../fabrics/option_string.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { versioned } from "../output/contract.ts";
import { describeSaved, type SavedConnection } from "../persist/connections.ts";
import { configReport } from "./config_connect.ts";
import { persistEntries, savedFile } from "./persist_entries.ts";
import type { ConnectIo, ConnectReport } from "./connect_io.ts";
import { connectText } from "./connect_report.ts";

/** The path to connect, checked, and what to do with it. */
export interface SingleConnectRequest {
  options: ConnectOptions;
  /** --persist: the entry to save once connected. */
  save?: SavedConnection;
  dryRun: boolean;
  /** -O: report libnvme's config.json of the connection (its text goes to the notes). */
  dumpConfig: boolean;
}

/** Connects one path (or shows what it would write); an identical connection is reported. */
export async function connectSingle(
  paths: FabricsPaths,
  req: SingleConnectRequest,
  io: ConnectIo,
): Promise<ConnectReport> {
  const { options: opts, save } = req;
  if (req.dumpConfig && req.dryRun) return configReport([opts]);
  if (req.dryRun) {
    const data = versioned({
      dry_run: true,
      device: `${paths.dev}/nvme-fabrics`,
      option_string: redactedOptionString(opts),
      ...namespaceQueuesData(opts),
      ...(save ? { would_save: save } : {}),
    });
    return {
      data,
      text: () =>
        [data.option_string, namespaceQueueText(opts)].filter((l) => l).join("\n") +
        (save ? `\nwould save: ${describeSaved(save)} in ${savedFile()}` : ""),
    };
  }
  if (io.verbose) io.note(`writing to ${paths.dev}/nvme-fabrics: ${redactedOptionString(opts)}`);
  const r = await connectSubsystem(paths, opts, { progress: io.progress });
  if (req.dumpConfig) io.note(connectText(r));
  if (req.dumpConfig && !save) return configReport([opts]);
  if (!save) return { data: versioned(r), text: () => connectText(r) };
  const saved = await persistEntries([save]);
  return {
    data: versioned({ ...r, saved: saved.file, saved_change: saved.change }),
    text: () => `${connectText(r)}\n${saved.text}`,
  };
}
