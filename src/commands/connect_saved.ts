/**
 * `nvmeof connect --saved`: every saved connection, retried with backoff (what
 * nvmeof-autoconnect.service runs).
 */
import type { CommandResult, OptionValues, RunContext } from "../cli/command.ts";
import { EXIT, UsageError } from "../errors.ts";
import { connectSubsystem } from "../fabrics/connect.ts";
import { discover } from "../fabrics/controller.ts";
import { TUNING_FLAGS } from "../fabrics/flags.ts";
import { checkInt, redactedOptionString } from "../fabrics/options.ts";
import { fabricsPaths } from "../fabrics/initiator_paths.ts";
import {
  describeSaved,
  isDiscoveryEntry,
  loadConnections,
  optionsFromSaved,
  type SavedConnection,
} from "../persist/connections.ts";
import { retrySaved } from "../persist/retry.ts";
import { DEFAULT_RETRY_FOR } from "../persist/systemd.ts";
import { type ConnectAllRow, connectAllText, progressOf, savedFile } from "./connect_shared.ts";
import { connectEntries } from "./connect_all.ts";

/** A row of `connect --saved`: one per controller, as in connect-all. */
interface SavedRow extends ConnectAllRow {
  /** "discovery" for rows that came from a saved discovery controller. */
  via?: string;
}

function retryForMs(values: OptionValues): number {
  const v = values["retry-for"];
  const s = typeof v === "string" ? v : String(DEFAULT_RETRY_FOR);
  return 1000 * checkInt(s, "--retry-for", 0, 86400, "seconds to keep retrying, 0 = once");
}

export async function connectSavedRun(ctx: RunContext): Promise<CommandResult> {
  for (
    const f of ["traddr", "nqn", "hostnqn", "hostid", "host-traddr", ...Object.keys(TUNING_FLAGS)]
  ) {
    if (f === "ctrl-loss-tmo" && ctx.values[f] === TUNING_FLAGS[f].default) continue;
    if (ctx.values[f] !== undefined) {
      throw new UsageError(`--saved connects the saved connections; --${f} does not apply.`, {
        hint: "Drop the address flags, or connect one subsystem without --saved.",
      });
    }
  }
  if (ctx.values.persist === true) {
    throw new UsageError("--saved and --persist exclude each other.", { hint: "Use one." });
  }
  const bound = retryForMs(ctx.values);
  const file = savedFile();
  const entries = await loadConnections(file);
  if (ctx.values["dry-run"] === true) {
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
  const paths = fabricsPaths();
  const note = ctx.note;
  const result = await retrySaved<SavedConnection, SavedRow>(
    entries,
    async (c) => {
      const opts = await optionsFromSaved(c);
      if (isDiscoveryEntry(c)) {
        const log = await discover(paths, opts);
        const rows: SavedRow[] = (await connectEntries(paths, opts, log.entries, true, ctx)).map(
          (r) => ({ ...r, via: `discovery ${opts.traddr}:${opts.trsvcid}` }),
        );
        const failed = rows.filter((r) => r.status === "failed");
        return {
          rows,
          done: failed.length === 0,
          reason: failed.map((r) => `'${r.subnqn}': ${r.reason}`).join("; "),
        };
      }
      const r = await connectSubsystem(paths, opts, { progress: progressOf(ctx) });
      return {
        rows: [{
          subnqn: r.subsysnqn,
          trtype: r.transport,
          traddr: r.traddr,
          trsvcid: r.trsvcid,
          status: r.existing ? "already connected" : "connected",
          device: r.device,
          namespaces: r.namespaces.map((n) => n.device),
        }],
        done: true,
      };
    },
    describeSaved,
    (c, reason) => ({
      subnqn: c.nqn,
      trtype: c.transport,
      traddr: c.traddr,
      trsvcid: c.trsvcid,
      status: "failed",
      reason,
    }),
    { retryForMs: bound, note },
  );
  const data = {
    file,
    attempts: result.attempts,
    elapsed_ms: result.elapsed_ms,
    records: result.rows,
  };
  return {
    data,
    text: () => entries.length === 0 ? `no saved connections in ${file}` : connectAllText(data),
    exitCode: result.rows.some((r) => r.status === "failed") ? EXIT.failure : EXIT.ok,
  };
}
