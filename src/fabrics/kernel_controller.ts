/**
 * Kernel operations on fabrics controllers: create one by writing an option string to
 * /dev/nvme-fabrics, wait until it is live with its block devices, read the discovery log,
 * and delete it through sysfs.
 */
import { EACCES, EBUSY, ENODEV, ENOENT, ENXIO, EPERM } from "../errno.ts";
import { EnvironmentError, errnoName, FailureError, NativeError } from "../errors.ts";
import { modprobe } from "../host/kernel.ts";
import { cString, errno, libc, O_CLOEXEC, O_RDWR } from "../../ffi/libc.ts";
import { AdminDevice } from "./admin.ts";
import { type ConnectAttempt, ConnectError, connectError } from "./connect_errors.ts";
import {
  decodeHeader,
  decodeLog,
  type DiscoveryLog,
  ENTRY_SIZE,
  HEADER_READ_SIZE,
  HEADER_SIZE,
} from "./discovery_log.ts";
import { exists, KfsError, writeText } from "../host/kfs.ts";
import { KmsgWatch } from "./kmsg.ts";
import { buildOptionString } from "./option_string.ts";
import type { ConnectOptions } from "./connect_options.ts";
import { sleep } from "../timer.ts";
import { DISCOVERY_NQN } from "./nqn.ts";
import { type FabricsPaths, isRealHost } from "./initiator_paths.ts";
import {
  controllerDir,
  type ControllerInfo,
  listControllers,
  matchesConnection,
  type NamespaceInfo,
  readController,
} from "./sysfs.ts";

/** How long to wait for a new controller to be live with its block devices. */
export const READY_TIMEOUT_MS = Number(Deno.env.get("NVMEOF_READY_TIMEOUT_MS") ?? 20_000);

/** The kernel's answer to a successful write: `instance=N,cntlid=M`. */
export interface NewController {
  instance: number;
  cntlid: number;
  name: string;
}

/** Parses `instance=N,cntlid=M` as read back from /dev/nvme-fabrics. */
export function parseInstanceReply(text: string): { instance: number; cntlid: number } {
  const fields = Object.fromEntries(
    text.trim().split(",").map((p) => p.split("=", 2) as [string, string]),
  );
  const instance = Number(fields.instance);
  const cntlid = Number(fields.cntlid);
  if (!Number.isInteger(instance) || instance < 0 || !Number.isInteger(cntlid)) {
    throw new FailureError(
      `The kernel answered the connect with '${text.trim()}', not 'instance=N,cntlid=M'.`,
    );
  }
  return { instance, cntlid };
}

/** modprobe's message when loading `name` fails; undefined when it loads. */
function failedLoad(name: string): string | undefined {
  const m = modprobe(name);
  return m.ok ? undefined : m.stderr;
}

/**
 * Opens /dev/nvme-fabrics read-write through libc (Deno refuses device files without
 * --allow-all), loading the module once when it is missing on the real host.
 */
function openFabricsDevice(paths: FabricsPaths, transport: string): number {
  const path = `${paths.dev}/nvme-fabrics`;
  let loadError: string | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    const fd = libc().open(cString(path), O_RDWR | O_CLOEXEC, 0);
    if (fd >= 0) return fd;
    const e = errno();
    if (e === EACCES || e === EPERM) {
      throw new EnvironmentError(`Cannot open '${path}': permission denied (${errnoName(e)}).`, {
        hint: "Connecting needs root. Run with sudo.",
      });
    }
    if (e !== ENOENT && e !== ENODEV && e !== ENXIO) {
      throw new NativeError("open", e, {
        message: `Cannot open '${path}': ${errnoName(e)} (${e}).`,
      });
    }
    if (attempt === 0 && isRealHost(paths)) {
      loadError = failedLoad("nvme-fabrics") ?? failedLoad(`nvme-${transport}`);
      continue;
    }
    throw new EnvironmentError(
      `The NVMe over Fabrics host is not available: '${path}' does not exist.`,
      {
        hint: loadError
          ? `'modprobe nvme-fabrics' failed: ${loadError}. Install the kernel modules ` +
            "(linux-modules-extra / kernel-modules-extra) for this kernel."
          : `Load the modules: 'modprobe -a nvme-fabrics nvme-${transport}'.`,
      },
    );
  }
  throw new Error("unreachable");
}

/**
 * Writes the option string and reads back the new controller. The write blocks until the
 * kernel has connected the admin and I/O queues or failed; the kernel's own timers bound it
 * (RDMA CM steps 3 s each, the NVMe Connect command the admin timeout). It is a synchronous
 * libc call so that errno is read on this thread right after it. Errors are mapped by errno
 * to their cause (connect_errors.ts), with the kernel log lines when /dev/kmsg is readable.
 */
export async function createController(
  paths: FabricsPaths,
  opts: ConnectOptions,
  attempt: ConnectAttempt,
): Promise<NewController> {
  const fd = openFabricsDevice(paths, opts.transport);
  const c = libc();
  using kmsg = new KmsgWatch(`${paths.dev}/kmsg`);
  try {
    const bytes = new TextEncoder().encode(buildOptionString(opts));
    const written = c.write(fd, bytes, BigInt(bytes.length));
    const e = errno(); // read before anything else can run on this thread
    const n = Number(written);
    if (n < 0) {
      // The kernel logs its reason before failing the write; give the log a moment to settle.
      await sleep(20);
      throw connectError(e, attempt, kmsg.read());
    }
    if (n !== bytes.length) {
      throw new FailureError(`The kernel took ${n} of ${bytes.length} bytes of the option string.`);
    }
    const buf = new Uint8Array(256);
    const read = c.read(fd, buf, BigInt(buf.length));
    const readErrno = errno();
    const got = Number(read);
    if (got < 0) {
      const e = readErrno;
      throw new NativeError("read", e, {
        message: `Cannot read the new controller from '${paths.dev}/nvme-fabrics': ${
          errnoName(e)
        } (${e}).`,
      });
    }
    const { instance, cntlid } = parseInstanceReply(new TextDecoder().decode(buf.subarray(0, got)));
    return { instance, cntlid, name: `nvme${instance}` };
  } finally {
    c.close(fd);
  }
}

/** Deletes a controller (write 1 to delete_controller); synchronous in the kernel. */
export function deleteController(paths: FabricsPaths, name: string): Promise<void> {
  try {
    writeText(`${controllerDir(paths, name)}/delete_controller`, "1");
    return Promise.resolve();
  } catch (err) {
    const e = err instanceof KfsError ? err.errno : undefined;
    if (e === ENOENT) {
      throw new FailureError(`Controller '${name}' does not exist.`, {
        cause: err,
        hint: "'nvmeof list' shows the connected controllers.",
      });
    }
    if (e === EACCES || e === EPERM) {
      throw new EnvironmentError(`Cannot delete controller '${name}': permission denied.`, {
        cause: err,
        hint: "Disconnecting needs root. Run with sudo.",
      });
    }
    throw new NativeError("write", e ?? 0, {
      message: `Cannot delete controller '${name}': ${e ? errnoName(e) : (err as Error).message}.`,
      cause: err,
      hint: e === EBUSY ? "The controller never became live; retry in a moment." : undefined,
    });
  }
}

/**
 * The controllers matching an attempt's connection (what the kernel would call a duplicate),
 * among FROM (a snapshot the caller read once for many attempts) or the host's controllers now.
 */
export async function existingControllers(
  paths: FabricsPaths,
  opts: ConnectOptions,
  from?: readonly ControllerInfo[],
): Promise<ControllerInfo[]> {
  if (!opts.hostnqn) return [];
  return (from ?? await listControllers(paths)).filter((c) =>
    matchesConnection(c, {
      transport: opts.transport,
      traddr: opts.traddr,
      trsvcid: opts.trsvcid,
      subsysnqn: opts.nqn,
      hostnqn: opts.hostnqn!,
      hostTraddr: opts.hostTraddr,
      hostIface: opts.hostIface,
    })
  );
}

/**
 * Waits until the controller is live and the block device of every active namespace exists.
 * The active namespace list comes from the controller itself (Identify CNS 02h); when that
 * cannot be asked, what sysfs shows once live is taken as complete.
 */
export async function waitReady(
  paths: FabricsPaths,
  name: string,
  options: { timeoutMs?: number; progress?: (line: string) => void } = {},
): Promise<{ controller: ControllerInfo; namespaces: NamespaceInfo[] }> {
  const timeoutMs = options.timeoutMs ?? READY_TIMEOUT_MS;
  const deadline = performance.now() + timeoutMs;
  let expected: number[] | undefined;
  let identifyTried = false;
  let lastProgress = 0;
  let c: ControllerInfo | undefined;
  let visible: NamespaceInfo[] = [];
  while (true) {
    c = await readController(paths, name);
    if (c && c.state === "live") {
      if (!identifyTried) {
        identifyTried = true;
        try {
          using dev = AdminDevice.open(`${paths.dev}/${name}`);
          expected = dev.activeNamespaceIds();
        } catch {
          expected = undefined;
        }
      }
      visible = [];
      for (const ns of c.namespaces) if (exists(ns.device)) visible.push(ns);
      const want = expected ?? c.namespaces.map((n) => n.nsid);
      if (want.every((id) => visible.some((n) => n.nsid === id))) {
        return { controller: c, namespaces: visible.filter((n) => want.includes(n.nsid)) };
      }
    }
    const now = performance.now();
    if (now >= deadline) break;
    if (options.progress && now - lastProgress > 1000) {
      lastProgress = now;
      options.progress(
        `waiting for ${name}: state ${c?.state ?? "absent"}, ` +
          `${visible.length}${expected ? ` of ${expected.length}` : ""} block devices`,
      );
    }
    await sleep(10);
  }
  throw new FailureError(
    `Controller '${name}' did not become ready within ${timeoutMs / 1000} s: ` +
      `state '${c?.state ?? "absent"}', ${visible.length}` +
      `${expected ? ` of ${expected.length}` : ""} namespace block devices visible.`,
    {
      hint:
        `It stays connected; 'nvmeof list' shows it and 'nvmeof disconnect -d ${name}' removes it. ` +
        "Check the kernel log (dmesg) for namespace scan errors.",
    },
  );
}

/** Options for reading the discovery log. */
export interface DiscoverOptions {
  maxRetries?: number;
}

/**
 * Reads the whole discovery log from a discovery controller's char device: header, then all
 * entries, then the header again; repeats while the generation counter changes (libnvme's loop).
 */
export async function readDiscoveryLog(
  paths: FabricsPaths,
  name: string,
  options: DiscoverOptions = {},
): Promise<DiscoveryLog> {
  const path = `${paths.dev}/${name}`;
  let dev: AdminDevice | undefined;
  for (let i = 0; !dev; i++) {
    try {
      dev = AdminDevice.open(path);
    } catch (err) {
      if (i >= 100 || !(err instanceof NativeError) || err.errno !== ENOENT) throw err;
      await sleep(20); // the char device may lag the write's return by a moment
    }
  }
  using _dev = dev;
  const retries = options.maxRetries ?? 10;
  for (let i = 0; i < retries; i++) {
    const h1 = decodeHeader(dev.discoveryLog(0, HEADER_READ_SIZE));
    const n = Number(h1.numrec);
    const entries = n > 0 ? dev.discoveryLog(HEADER_SIZE, n * ENTRY_SIZE) : new Uint8Array(0);
    const h2 = decodeHeader(dev.discoveryLog(0, HEADER_READ_SIZE));
    if (h2.genctr !== h1.genctr || h2.numrec !== h1.numrec) continue;
    const buf = new Uint8Array(HEADER_SIZE + entries.length);
    const v = new DataView(buf.buffer);
    v.setBigUint64(0, h1.genctr, true);
    v.setBigUint64(8, h1.numrec, true);
    buf.set(entries, HEADER_SIZE);
    return decodeLog(buf);
  }
  throw new NativeError("ioctl", 11, {
    message:
      `The discovery log kept changing: the generation counter moved on ${retries} reads (EAGAIN).`,
    hint: "The target's configuration is changing right now; run the discovery again.",
  });
}

/**
 * Connects a discovery controller, reads its log, and removes the controller again. Returns the
 * log and the raw bytes (for fixtures).
 */
export async function discover(
  paths: FabricsPaths,
  opts: Omit<ConnectOptions, "nqn"> & { nqn?: string },
): Promise<DiscoveryLog> {
  const dopts: ConnectOptions = {
    transport: opts.transport,
    traddr: opts.traddr,
    trsvcid: opts.trsvcid,
    nqn: opts.nqn || DISCOVERY_NQN,
    ...(opts.hostTraddr ? { hostTraddr: opts.hostTraddr } : {}),
    ...(opts.hostnqn ? { hostnqn: opts.hostnqn } : {}),
    ...(opts.hostid ? { hostid: opts.hostid } : {}),
  };
  const ctrl = await createController(paths, dopts, { ...dopts, discovery: true });
  try {
    return await readDiscoveryLog(paths, ctrl.name);
  } finally {
    await deleteController(paths, ctrl.name).catch(() => {});
  }
}

export { ConnectError };
