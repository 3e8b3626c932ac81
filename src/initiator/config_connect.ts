/**
 * libnvme's config.json, read and written: `nvmeof connect -J FILE` connects every I/O
 * controller it lists (as `nvme connect -J`), `-O` prints the connections as one.
 */
import { connectSubsystem } from "../fabrics/connect.ts";
import { checkKernelOptions, checkTransportOptions } from "../fabrics/option_checks.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import { redactedOptionString } from "../fabrics/option_string.ts";
import { runningKernelRelease } from "../host/kernel.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { configJsonControllers, configJsonOf } from "../persist/config_json.ts";
import type { ConnectIo, ConnectReport } from "./connect_io.ts";
import { type ConnectAllRow, connectedRow, failedRow, rowsReport } from "./connect_report.ts";

/** -O/--dump-config: libnvme's config.json of the connections, as text and as JSON alike. */
export function configReport(list: ConnectOptions[]): ConnectReport {
  const data = configJsonOf(list);
  return { data, text: () => JSON.stringify(data, null, 2) };
}

/** What `connect -J FILE` does with the file. */
export interface ConfigConnectRequest {
  file: string;
  dryRun: boolean;
  /** -O: print the file's connections back as config.json, connecting nothing. */
  dumpConfig: boolean;
}

/**
 * Connects every I/O controller of a libnvme config.json, each even when another fails; every
 * controller's options are checked first.
 */
export async function connectConfig(
  paths: FabricsPaths,
  req: ConfigConnectRequest,
  io: ConnectIo,
): Promise<ConnectReport> {
  const { file } = req;
  const { controllers, notes } = await configJsonControllers(file);
  for (const n of notes) io.note(n);
  const release = runningKernelRelease();
  for (const o of controllers) {
    checkTransportOptions(o);
    checkKernelOptions(o, release);
  }
  if (req.dumpConfig) return configReport(controllers);
  if (req.dryRun) {
    const data = { dry_run: true, file, option_strings: controllers.map(redactedOptionString) };
    return {
      data,
      text: () => data.option_strings.join("\n") || `'${file}' lists no I/O controller`,
    };
  }
  const records: ConnectAllRow[] = [];
  for (const o of controllers) {
    const where = { subnqn: o.nqn, trtype: o.transport, traddr: o.traddr, trsvcid: o.trsvcid };
    try {
      const r = await connectSubsystem(paths, o, { progress: io.progress });
      records.push(connectedRow(where, r));
    } catch (err) {
      records.push(failedRow(where, (err as Error).message));
    }
  }
  return rowsReport({ file, records });
}
