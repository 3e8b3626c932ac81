/**
 * What an errno from the /dev/nvme-fabrics write means, and what to do next (drivers/nvme/host/fabrics.c
 * nvmf_dev_write and nvmf_create_ctrl, and the transports' create_ctrl).
 * The kernel's own log lines, when readable, are appended as the reason.
 */
import { hostPort } from "../net/address.ts";
import {
  EACCES,
  EALREADY,
  ECONNREFUSED,
  ECONNRESET,
  EINTR,
  EINVAL,
  EIO,
  ENODEV,
  ENOMEM,
  EOPNOTSUPP,
  EPERM,
  ETIMEDOUT,
} from "../errno.ts";
import {
  EnvironmentError,
  errnoName,
  FailureError,
  NativeError,
  type NvmeofError,
} from "../errors.ts";

/** What was being connected, for the message. */
export interface ConnectAttempt {
  transport: string;
  traddr: string;
  trsvcid: string;
  nqn: string;
  hostnqn?: string;
  hostTraddr?: string;
  /** True for a discovery controller (discover, connect-all). */
  discovery?: boolean;
}

/** A failed fabrics write, with its errno and the kernel's log lines. */
export class ConnectError extends NativeError {
  readonly kernelLog: string[];
  constructor(errno: number, message: string, hint: string, kernelLog: string[], cause?: unknown) {
    super("write", errno, { message, hint, cause });
    this.kernelLog = kernelLog;
  }
}

/** The bad token the kernel named in its log (`invalid parameter 'x'`, `unknown parameter … 'x'`). */
export function badTokenFromLog(lines: string[]): string | undefined {
  for (const l of lines) {
    const m = l.match(
      /(?:invalid parameter|unknown parameter or missing value|missing parameter) '([^']*)'/,
    );
    if (m) return m[1];
  }
  return undefined;
}

function where(a: ConnectAttempt): string {
  return `${a.transport} ${hostPort(a.traddr, a.trsvcid)}`;
}

/** Maps the errno of the fabrics write to an error that names the cause and the fix. */
export function connectError(
  errno: number,
  a: ConnectAttempt,
  kernelLog: string[] = [],
  cause?: unknown,
): NvmeofError {
  const what = a.discovery
    ? `Cannot connect to the discovery controller at ${where(a)}`
    : `Cannot connect to '${a.nqn}' at ${where(a)}`;
  const code = `${errnoName(errno)}`;
  const reason = kernelLog.length ? `\nKernel log:\n  ${kernelLog.slice(-6).join("\n  ")}` : "";
  const make = (cause_: string, hint: string) =>
    new ConnectError(errno, `${what}: ${cause_} (${code}).`, hint + reason, kernelLog, cause);
  switch (errno) {
    case EALREADY:
      return make(
        `this host is already connected to it`,
        "Nothing to do; 'nvmeof list' shows the controller. Disconnect first to reconnect with other options.",
      );
    case EINVAL: {
      const tok = badTokenFromLog(kernelLog);
      if (kernelLog.some((l) => /no handler found for transport/.test(l))) {
        return new EnvironmentError(
          `${what}: the kernel has no '${a.transport}' fabrics transport.`,
          {
            cause,
            hint:
              `Load it: 'modprobe nvme-${a.transport}' (package linux-modules-extra on some distributions).`,
          },
        );
      }
      const pairing = kernelLog.some((l) => /same host(nqn|id).*but different/.test(l));
      if (pairing) {
        return make(
          "the kernel already pairs this host NQN (or host ID) with a different partner",
          "Pass the same -q/--hostnqn and -I/--hostid pair every time (see 'nvmeof hostnqn'); " +
            "the pairing lasts until the nvme-fabrics module is reloaded.",
        );
      }
      return make(
        tok
          ? `the kernel refused the option '${tok}'`
          : "the kernel refused an option in the option string",
        tok
          ? `Drop or correct '${tok}' (this kernel may not support it with -t ${a.transport}); ` +
            "'nvmeof connect --dry-run' prints the string."
          : "Check the values with 'nvmeof connect --dry-run'; the kernel log (dmesg) names the token.",
      );
    }
    case ECONNRESET:
      return make(
        "the RDMA connection could not be established: nothing listens on that address and port, " +
          "the address is not reachable through an RDMA device, or the target rejected the queue",
        "Run 'nvmeof doctor' to check the RDMA path; on the target, check that the port is enabled " +
          "(a subsystem linked to it) at this address and port" +
          (a.hostTraddr ? "" : "; use -w/--host-traddr to pick the local RDMA address") + ".",
      );
    case EIO:
      return make(
        a.discovery
          ? "the target refused the NVMe connect of the discovery controller"
          : `the target refused the NVMe connect: host '${
            a.hostnqn ?? "(default)"
          }' is not allowed ` +
            "on that subsystem, or the subsystem is not exported on that port",
        "On the target, allow this host NQN (allowed_hosts or allow_any_host) and link the subsystem " +
          `to the port; 'nvmeof discover -a ${a.traddr} -s ${a.trsvcid}' lists what this host may connect to.`,
      );
    case ECONNREFUSED:
      return make(
        "the local RDMA device lacks memory registration extensions",
        "Use an RDMA device that supports fast registration (rxe, siw, mlx5 all do).",
      );
    case EOPNOTSUPP:
      return make(
        "the target requires a feature this host does not support (in-capsule offset, keyed SGLs, or secure concatenation)",
        "Check the target's transport settings.",
      );
    case ENOMEM:
      return make(
        "the option string is too long or the target granted no I/O queues",
        "Shorten the values, or check the target's attr_qid_max.",
      );
    case ETIMEDOUT:
      return make(
        "the target did not answer in time",
        "Check that the target is up and reachable; the kernel gives up after its own timeouts.",
      );
    case EINTR:
      return make("interrupted by a signal", "Run the command again.");
    case EPERM:
    case EACCES:
      return new EnvironmentError(`${what}: permission denied (${code}).`, {
        cause,
        hint: "Connecting needs root (CAP_SYS_ADMIN). Run with sudo.",
      });
    case ENODEV:
      return new EnvironmentError(
        `${what}: the kernel has no '${a.transport}' fabrics transport (${code}).`,
        {
          cause,
          hint: `Load it: 'modprobe nvme-${a.transport}'.` + reason,
        },
      );
    default:
      return new FailureError(`${what}: ${code} (${errno}).`, {
        cause,
        hint: reason.trim() || undefined,
      });
  }
}
