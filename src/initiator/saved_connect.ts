/**
 * `nvmeof connect --saved`: every saved connection, retried with backoff (what
 * nvmeof-autoconnect.service runs); a saved discovery controller connects what its log lists.
 */
import { connectSubsystem } from "../fabrics/connect.ts";
import { discover } from "../fabrics/kernel_controller.ts";
import { redactedOptionString } from "../fabrics/option_string.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { hostPort } from "../net/address.ts";
import {
  describeSaved,
  isDiscoveryEntry,
  loadConnections,
  optionsFromSaved,
  type SavedConnection,
} from "../persist/connections.ts";
import { retrySaved } from "../persist/retry.ts";
import { connectEntries } from "./connect_all.ts";
import { savedFile } from "./persist_entries.ts";
import type { ConnectIo, ConnectReport } from "./connect_io.ts";
import {
  type ConnectAllRow,
  connectAllText,
  connectedRow,
  failedRow,
  rowsReport,
} from "./connect_report.ts";

/** A row of `connect --saved`: one per controller, as in connect-all. */
interface SavedRow extends ConnectAllRow {
  /** "discovery" for rows that came from a saved discovery controller. */
  via?: string;
}

/** Connects one saved entry: a subsystem, or every subsystem a saved discovery controller lists. */
async function connectSavedEntry(paths: FabricsPaths, c: SavedConnection, io: ConnectIo) {
  const opts = await optionsFromSaved(c);
  if (isDiscoveryEntry(c)) {
    const log = await discover(paths, opts);
    const rows: SavedRow[] = (await connectEntries(paths, opts, log.entries, { follow: true, io }))
      .map((r) => ({ ...r, via: `discovery ${hostPort(opts.traddr, opts.trsvcid)}` }));
    const failed = rows.filter((r) => r.status === "failed");
    return {
      rows,
      done: failed.length === 0,
      reason: failed.map((r) => `'${r.subnqn}': ${r.reason}`).join("; "),
    };
  }
  const r = await connectSubsystem(paths, opts, { progress: io.progress });
  const where = { subnqn: r.subsysnqn, trtype: r.transport, traddr: r.traddr, trsvcid: r.trsvcid };
  return { rows: [connectedRow(where, r)], done: true };
}

/**
 * Connects every saved connection, retrying the unreachable ones with backoff for up to
 * RETRY_FOR_MS; a dry run shows the option strings.
 */
export async function connectSaved(
  paths: FabricsPaths,
  req: { retryForMs: number; dryRun: boolean },
  io: ConnectIo,
): Promise<ConnectReport> {
  const file = savedFile();
  const entries = await loadConnections(file);
  if (req.dryRun) {
    const opts = await Promise.all(entries.map(optionsFromSaved));
    const data = {
      dry_run: true,
      file,
      connections: opts.map((o, i) => ({
        ...(isDiscoveryEntry(entries[i]) ? { connect_all: true } : {}),
        option_string: redactedOptionString(o),
      })),
    };
    return {
      data,
      text: () =>
        data.connections.length
          ? data.connections.map((c) => (c.connect_all ? "connect-all via " : "") + c.option_string)
            .join("\n")
          : `no saved connections in ${file}`,
    };
  }
  const result = await retrySaved<SavedConnection, SavedRow>(
    entries,
    (c) => connectSavedEntry(paths, c, io),
    describeSaved,
    (c, reason) =>
      failedRow(
        { subnqn: c.nqn, trtype: c.transport, traddr: c.traddr, trsvcid: c.trsvcid },
        reason,
      ),
    { retryForMs: req.retryForMs, note: io.note },
  );
  const data = {
    file,
    attempts: result.attempts,
    elapsed_ms: result.elapsed_ms,
    records: result.rows,
  };
  return rowsReport(
    data,
    (d) => entries.length === 0 ? `no saved connections in ${file}` : connectAllText(d),
  );
}
