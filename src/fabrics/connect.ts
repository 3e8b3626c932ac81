/**
 * Connecting an I/O controller end to end: report an identical existing connection instead of
 * duplicating it, write the option string, wait for the block devices, and time both steps.
 */
import { EALREADY, EINVAL } from "../errno.ts";
import { errnoName, FailureError } from "../errors.ts";
import { KfsError, writeText } from "../host/kfs.ts";
import { badTokenFromLog, ConnectError } from "./connect_errors.ts";
import { CONNECT_OPTIONS, flagLabel, rowOfToken } from "./connect_table.ts";
import {
  createController,
  deleteController,
  existingControllers,
  waitReady,
} from "./kernel_controller.ts";
import type { ConnectOptions } from "./connect_options.ts";
import { kernelTooOld } from "./option_checks.ts";
import { namespaceQueuesData, namespaceQueueSettings } from "./option_string.ts";
import { runningKernelRelease } from "../host/kernel.ts";
import type { FabricsPaths } from "./initiator_paths.ts";
import { type ControllerInfo, type NamespaceInfo, queueDir } from "./sysfs.ts";

/** What `nvmeof connect` reports (JSON keys follow sysfs and the option string). */
export interface ConnectResult {
  /** The controller's char device name (`nvme1`), as `nvme connect -o json` says "device". */
  device: string;
  instance: number;
  cntlid: number;
  subsysnqn: string;
  transport: string;
  traddr: string;
  trsvcid: string;
  host_traddr?: string;
  hostnqn: string;
  hostid: string;
  state: string;
  /** True when the connection already existed and nothing was written. */
  existing: boolean;
  namespaces: NamespaceInfo[];
  /** What connect set on each namespace queue (`io_timeout` in ms), when it set something. */
  namespace_queues?: Record<string, number>;
  /** Milliseconds: the kernel write (connect), and from the call until block devices were visible (ready). */
  timing_ms?: { connect: number; ready: number };
}

/**
 * Connects (or finds) the controller `opts` describes and waits until its block devices exist.
 * KNOWN: the host's controllers as the caller read them once for many connects (connect-all's
 * walk), searched instead of reading every controller again; one made since is still found, as
 * the kernel refuses its duplicate (EALREADY) and it is then looked for again.
 */
export async function connectSubsystem(
  paths: FabricsPaths,
  opts: ConnectOptions,
  options: {
    progress?: (line: string) => void;
    readyTimeoutMs?: number;
    known?: readonly ControllerInfo[];
  } = {},
): Promise<ConnectResult> {
  const base = {
    subsysnqn: opts.nqn,
    transport: opts.transport,
    traddr: opts.traddr,
    trsvcid: opts.trsvcid,
    ...(opts.hostTraddr ? { host_traddr: opts.hostTraddr } : {}),
    hostnqn: opts.hostnqn ?? "",
    hostid: opts.hostid ?? "",
  };
  // An identical live connection is reported, not duplicated.
  const existing = async (from?: readonly ControllerInfo[]) => {
    const [c] = await existingControllers(paths, opts, from);
    return c && {
      ...base,
      device: c.name,
      instance: c.instance,
      cntlid: c.cntlid,
      state: c.state,
      existing: true,
      namespaces: c.namespaces,
    };
  };
  const found = await existing(options.known);
  if (found) return found;
  const t0 = performance.now();
  let made;
  try {
    made = await createController(paths, opts, { ...opts, discovery: false });
  } catch (err) {
    // EALREADY: a connection appeared between our check and the write (or sysfs hid it).
    if (err instanceof ConnectError && err.errno === EALREADY) {
      const again = await existing();
      if (again) return again;
    }
    throw unknownTokenError(err) ?? err;
  }
  const t1 = performance.now();
  const ready = await waitReady(paths, made.name, {
    progress: options.progress,
    timeoutMs: options.readyTimeoutMs,
  });
  await setQueueOptions(paths, made.name, ready.namespaces, opts);
  const t2 = performance.now();
  return {
    ...base,
    device: made.name,
    instance: made.instance,
    cntlid: made.cntlid,
    state: ready.controller.state,
    existing: false,
    namespaces: ready.namespaces,
    ...namespaceQueuesData(opts),
    timing_ms: { connect: Math.round(t1 - t0), ready: Math.round(t2 - t0) },
  };
}

/**
 * The options the option string has no token for (`queueAttr` rows: io_timeout), written to each
 * namespace queue of the new controller NAME: the per-path device under native multipath
 * (`nvme1c2n1`), else the namespace's own. A write that fails deletes the controller again, so
 * that no path is left without what was asked of it.
 */
export async function setQueueOptions(
  paths: FabricsPaths,
  name: string,
  namespaces: NamespaceInfo[],
  opts: ConnectOptions,
): Promise<void> {
  for (const [attr, ms] of Object.entries(namespaceQueueSettings(opts))) {
    const r = CONNECT_OPTIONS.find((r) => r.queueAttr === attr)!;
    for (const ns of namespaces) {
      const file = `${queueDir(paths, name, ns)}/${attr}`;
      try {
        writeText(file, String(ms));
      } catch (err) {
        const e = err instanceof KfsError ? errnoName(err.errno) : (err as Error).message;
        let undone = `'${name}' was disconnected again`;
        try {
          await deleteController(paths, name);
        } catch (del) {
          undone = `'${name}' is still connected (deleting it failed: ${(del as Error).message})`;
        }
        throw new FailureError(
          `Cannot set ${
            flagLabel(r)
          } on '${name}': writing ${ms} to ${file} failed (${e}); ${undone}.`,
          {
            cause: err,
            hint: `Connect without ${flagLabel(r)}, or check that the kernel has that attribute.`,
          },
        );
      }
    }
  }
}

/**
 * The kernel's refusal of a token it does not know ("unknown parameter or missing value 'tls'"),
 * said as what it is: an option this kernel lacks, and the Linux release that has it.
 */
export function unknownTokenError(err: unknown, release?: string) {
  if (!(err instanceof ConnectError) || err.errno !== EINVAL) return undefined;
  if (!err.kernelLog.some((l) => /unknown parameter or missing value/.test(l))) return undefined;
  const token = badTokenFromLog(err.kernelLog)?.split("=")[0];
  const row = token === undefined ? undefined : rowOfToken(token);
  if (!row) return undefined;
  return kernelTooOld(row, release ?? runningKernelRelease() ?? "unknown", err);
}
