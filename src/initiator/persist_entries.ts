/**
 * Saving connections for boot from a connect run (--persist): the connections file, and merging
 * new entries into it.
 */
import { connectionsFile, persistPaths } from "../persist/etc_paths.ts";
import {
  loadConnections,
  mergeConnections,
  saveConnections,
  type SavedConnection,
} from "../persist/connections.ts";

/** The connections file of this host (/etc/nvmeof/connections.yaml unless overridden). */
export function savedFile(): string {
  return connectionsFile(persistPaths());
}

/** What persistEntries did. */
export interface PersistOutcome {
  file: string;
  /** A line saying what changed. */
  text: string;
  change: "saved" | "updated" | "unchanged";
}

/** Adds entries to the connections file; returns its path and a line saying what changed. */
export async function persistEntries(add: SavedConnection[]): Promise<PersistOutcome> {
  const file = savedFile();
  const merged = mergeConnections(await loadConnections(file), add);
  if (merged.added.length || merged.replaced.length) await saveConnections(file, merged.list);
  const what = merged.added.length
    ? "saved"
    : merged.replaced.length
    ? "updated the saved entry"
    : "already saved";
  const change = merged.added.length ? "saved" : merged.replaced.length ? "updated" : "unchanged";
  return {
    file,
    text: `${what} in ${file} (reconnected at boot by nvmeof-autoconnect.service)`,
    change,
  };
}
