/**
 * What a connect (or a discovery connect) asks of the kernel: the ConnectOptions type, the
 * transports, the defaults, and whether a table option is set. The option string is built in
 * option_string.ts, the values checked in option_checks.ts.
 */
import type { ConnectOptionRow } from "./connect_table.ts";

/** The NVMe/RDMA port (also used for RDMA discovery). */
export const DEFAULT_TRSVCID = "4420";
/** nvme-cli always writes ctrl_loss_tmo; the kernel's default is also 600 s. */
export const DEFAULT_CTRL_LOSS_TMO = 600;

/** Transports this product connects over. */
export const TRANSPORTS = ["rdma", "tcp"] as const;
export type Transport = typeof TRANSPORTS[number];

/** Whether `t` names a transport nvmeof speaks. */
export function isTransport(t: string): t is Transport {
  return (TRANSPORTS as readonly string[]).includes(t);
}

/** What a connect (or a discovery connect) asks of the kernel. */
export interface ConnectOptions {
  transport: Transport;
  traddr: string;
  trsvcid: string;
  nqn: string;
  hostnqn?: string;
  hostid?: string;
  hostTraddr?: string;
  /** The rest are the rows of the connect-option table (connect_table.ts). */
  hostIface?: string;
  nrIoQueues?: number;
  nrWriteQueues?: number;
  nrPollQueues?: number;
  queueSize?: number;
  keepAliveTmo?: number;
  reconnectDelay?: number;
  ctrlLossTmo?: number;
  fastIoFailTmo?: number;
  /** Seconds; set on the namespace queues after the connect (not in the option string). */
  ioTimeout?: number;
  tos?: number;
  duplicateConnect?: boolean;
  disableSqflow?: boolean;
  hdrDigest?: boolean;
  dataDigest?: boolean;
  /** DH-HMAC-CHAP host secret (`DHHC-1:…`); never printed. */
  dhchapSecret?: string;
  /** DH-HMAC-CHAP controller secret, for authentication both ways; never printed. */
  dhchapCtrlSecret?: string;
  tls?: boolean;
  keyring?: string;
  tlsKey?: string;
  concat?: boolean;
}

/** True when a table option's value asks something of the kernel (not absent, off or "unset"). */
export function isSet(r: ConnectOptionRow, v: unknown): boolean {
  if (v === undefined || v === false) return false;
  return !(r.kind.type === "int" && r.kind.unset !== undefined && v === r.kind.unset);
}
