/**
 * `nvmeof connect -J FILE` and `-O`: libnvme's config.json, read and written.
 */
import type { CommandResult, RunContext } from "../cli/command.ts";
import { EXIT, UsageError } from "../errors.ts";
import { connectSubsystem } from "../fabrics/connect.ts";
import {
  checkKernelOptions,
  checkTransportOptions,
  type ConnectOptions,
  redactedOptionString,
  runningKernelRelease,
} from "../fabrics/options.ts";
import { fabricsPaths } from "../fabrics/initiator_paths.ts";
import { configJsonControllers, configJsonOf } from "../persist/config_json.ts";
import { type ConnectAllRow, connectAllText, progressOf } from "./connect_shared.ts";

/** -O/--dump-config: libnvme's config.json of the connections, as text and as JSON alike. */
export function dumpConfig(list: ConnectOptions[]): CommandResult {
  const data = configJsonOf(list);
  return { data, text: () => JSON.stringify(data, null, 2) };
}

/** `connect -J FILE`: every I/O controller of a libnvme config.json, as `nvme connect -J`. */
export async function connectConfigRun(ctx: RunContext, file: string): Promise<CommandResult> {
  for (const f of ["traddr", "nqn", "persist"]) {
    if (ctx.values[f] !== undefined) {
      throw new UsageError(`-J/--config connects what the file lists; --${f} does not apply.`, {
        hint: "Drop it, or connect one subsystem without -J.",
      });
    }
  }
  const { controllers, notes } = await configJsonControllers(file);
  for (const n of notes) ctx.note(n);
  const release = runningKernelRelease();
  for (const o of controllers) {
    checkTransportOptions(o);
    checkKernelOptions(o, release);
  }
  if (ctx.values["dump-config"] === true) return dumpConfig(controllers);
  if (ctx.values["dry-run"] === true) {
    const data = { dry_run: true, file, option_strings: controllers.map(redactedOptionString) };
    return {
      data,
      text: () => data.option_strings.join("\n") || `'${file}' lists no I/O controller`,
    };
  }
  const paths = fabricsPaths();
  const records: ConnectAllRow[] = [];
  for (const o of controllers) {
    const row: ConnectAllRow = {
      subnqn: o.nqn,
      trtype: o.transport,
      traddr: o.traddr,
      trsvcid: o.trsvcid,
      status: "failed",
    };
    try {
      const r = await connectSubsystem(paths, o, { progress: progressOf(ctx) });
      row.status = r.existing ? "already connected" : "connected";
      row.device = r.device;
      row.namespaces = r.namespaces.map((n) => n.device);
    } catch (err) {
      row.reason = (err as Error).message;
    }
    records.push(row);
  }
  const data = { file, records };
  return {
    data,
    text: () => connectAllText(data),
    exitCode: records.some((r) => r.status === "failed") ? EXIT.failure : EXIT.ok,
  };
}
