/**
 * The kernel initiator's own answer: with -n NQN, connect through /dev/nvme-fabrics (one I/O
 * queue, no reconnects), translate the errno and the kernel log into the doctor's words, and
 * delete the controller it made.
 */
import { hostPort } from "../net/address.ts";
import { ECONNRESET, EINVAL, EIO, ETIMEDOUT } from "../errno.ts";
import { ConnectError } from "../fabrics/connect_errors.ts";
import {
  createController,
  deleteController,
  existingControllers,
} from "../fabrics/kernel_controller.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import { errnoName, EXIT, NvmeofError, ownError } from "../errors.ts";
import { type Check, check } from "./check.ts";
import type { DoctorPaths } from "./kernel_paths.ts";

const N = "/sys/kernel/config/nvmet";

/** What the kernel said, as a check. Pure: the table the unit tests drive. */
export function classifyKernelConnect(
  errno: number,
  log: string[],
  o: { nqn: string; hostnqn: string; traddr: string; trsvcid: string },
): Check {
  const id = "reach.kernel_connect";
  const code = `${errnoName(errno)} (${errno})`;
  const logText = log.length
    ? `; kernel log: ${log.slice(-3).join(" | ")}`
    : "; the kernel log was not readable";
  const where = hostPort(o.traddr, o.trsvcid);
  const allowFix =
    `on the target: mkdir -p ${N}/hosts/${o.hostnqn}; ln -s ${N}/hosts/${o.hostnqn} ` +
    `${N}/subsystems/${o.nqn}/allowed_hosts/${o.hostnqn}`;
  const linkFix =
    `on the target: ln -s ${N}/subsystems/${o.nqn} ${N}/ports/PORTID/subsystems/${o.nqn} ` +
    `(PORTID: the port for ${where})`;
  const notAllowed = log.find((l) => /not allowed/.test(l));
  if (notAllowed) {
    const m = notAllowed.match(/hostnqn:?\s*(\S+)/) ?? notAllowed.match(/connect by host (\S+)/);
    const host = m ? m[1] : o.hostnqn;
    return check(
      id,
      "fail",
      `the target refused host '${host}' for '${o.nqn}' (${code}): it is not in allowed_hosts${logText}`,
      allowFix.replaceAll(o.hostnqn, host),
    );
  }
  if (log.some((l) => /Invalid Data Parameter|invalid subsystem|subsystem .* not found/i.test(l))) {
    return check(
      id,
      "fail",
      `the target does not export '${o.nqn}' on ${where} (${code}): unknown subsystem on that port${logText}`,
      linkFix,
    );
  }
  switch (errno) {
    case EIO:
      return check(
        id,
        "fail",
        `the target refused the NVMe connect to '${o.nqn}' (${code}): host '${o.hostnqn}' not allowed or the ` +
          `subsystem not on that port${logText}`,
        `${allowFix}; or ${linkFix}`,
      );
    case ECONNRESET:
      return check(
        id,
        "fail",
        `the kernel could not establish the RDMA connection to ${where} (${code})${logText}`,
        "see reach.listener above for the RDMA-level cause",
      );
    case ETIMEDOUT:
      return check(
        id,
        "fail",
        `the kernel's connect to ${where} timed out (${code}): packets are dropped or the target is stuck${logText}`,
        "check UDP 4791 firewalls, the MTU end to end and PFC/ECN; on the target, its kernel log",
      );
    case EINVAL:
      return check(
        id,
        "fail",
        `the kernel refused the connect options (${code})${logText}`,
        log.some((l) => /same host(nqn|id).*but different/.test(l))
          ? "use the host NQN with the host ID the kernel already pairs it with (or reload nvme-fabrics)"
          : "check the host NQN and host ID (nvmeof hostnqn) and the NQN length",
      );
    default:
      return check(
        id,
        "fail",
        `the kernel's connect to '${o.nqn}' at ${where} failed: ${code}${logText}`,
      );
  }
}

/** Connects for real and disconnects again; translates a failure. */
export async function kernelConnectCheck(paths: DoctorPaths, opts: ConnectOptions): Promise<Check> {
  const id = "reach.kernel_connect";
  const o = {
    nqn: opts.nqn,
    hostnqn: opts.hostnqn ?? "",
    traddr: opts.traddr,
    trsvcid: opts.trsvcid,
  };
  const found = await existingControllers(paths, opts).catch(() => []);
  if (found.length) {
    return check(
      id,
      "ok",
      `already connected: ${found[0].name} to '${opts.nqn}' (state ${found[0].state})`,
    );
  }
  try {
    const made = await createController(paths, opts, { ...opts, discovery: false });
    let note = "disconnected again";
    try {
      await deleteController(paths, made.name);
    } catch (err) {
      note = `could not disconnect it: ${(err as Error).message}`;
    }
    return check(
      id,
      "ok",
      `the kernel connected ${made.name} to '${opts.nqn}' at ${
        hostPort(opts.traddr, opts.trsvcid)
      } as host ` +
        `'${o.hostnqn}' (cntlid ${made.cntlid}); ${note}`,
    );
  } catch (err) {
    if (err instanceof ConnectError) return classifyKernelConnect(err.errno, err.kernelLog, o);
    const e = ownError(err);
    return check(
      id,
      e instanceof NvmeofError && e.exitCode === EXIT.environment ? "skip" : "fail",
      `could not try the kernel connect: ${e instanceof Error ? e.message : String(e)}`,
      e instanceof NvmeofError ? e.hint : undefined,
    );
  }
}
