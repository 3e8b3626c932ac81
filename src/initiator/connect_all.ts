/**
 * connect-all's walk: discover, then connect every NVM subsystem the log lists, following
 * referrals once; without an address, through every discovery controller of discovery.conf.
 */
import { connectSubsystem } from "../fabrics/connect.ts";
import { discover } from "../fabrics/kernel_controller.ts";
import { type DiscoveryLogEntry, subtypeName, trtypeName } from "../fabrics/discovery_log.ts";
import { checkNqn } from "../fabrics/option_checks.ts";
import type { ConnectOptions, Transport } from "../fabrics/connect_options.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { listControllers } from "../fabrics/sysfs.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import type { SavedConnection } from "../persist/connections.ts";
import { type DiscoveryConfControllers, requireDiscoveryConf } from "../persist/discovery_conf.ts";
import { persistEntries } from "./persist_entries.ts";
import type { ConnectIo, ConnectReport } from "./connect_io.ts";
import {
  type ConnectAllRow,
  connectAllText,
  connectedRow,
  failedRow,
  failureReason,
  type ReferralAddress,
  rowsReport,
} from "./connect_report.ts";

function skip(e: DiscoveryLogEntry, reason: string): ConnectAllRow {
  return {
    subnqn: e.subnqn,
    trtype: trtypeName(e.trtype),
    traddr: e.traddr,
    trsvcid: e.trsvcid,
    status: "skipped",
    reason,
  };
}

/**
 * Why this host cannot reach the address of log entry E with BASE's transport (another transport,
 * an address that is not IP), or undefined when it can.
 */
export function unusableEntry(e: DiscoveryLogEntry, base: ConnectOptions): string | undefined {
  const trtype = trtypeName(e.trtype);
  if (trtype !== base.transport) return `transport ${trtype} differs from -t ${base.transport}`;
  if (
    (e.adrfam !== 1 && e.adrfam !== 2) || !(isIpv4(e.traddr) || isIpv6(e.traddr, { zone: true }))
  ) {
    return `address '${e.traddr}' is not an IP address`;
  }
  return undefined;
}

/**
 * Connects every NVM subsystem of ENTRIES (one discovery log). Referral entries are followed when
 * FOLLOW is true: the referred controller's log is read and its entries connected, each row then
 * carrying `referral`, the discovery controller that listed it; a referral found there is not
 * followed again (no loops between storage servers that refer to each other).
 */
export async function connectEntries(
  paths: FabricsPaths,
  base: ConnectOptions,
  entries: DiscoveryLogEntry[],
  options: { follow: boolean; io: ConnectIo; referral?: ReferralAddress },
): Promise<ConnectAllRow[]> {
  const { follow, io, referral } = options;
  const rows: ConnectAllRow[] = [];
  // The host's controllers, read once for the whole log: each entry is looked for among them
  // (a read per entry made a scan of N entries cost N times every controller's attributes).
  const known = entries.some((e) => e.subtype === 2) ? await listControllers(paths) : [];
  const push = (row: ConnectAllRow) => rows.push(referral ? { ...row, referral } : row);
  for (const e of entries) {
    const trtype = trtypeName(e.trtype);
    if (e.subtype === 3) continue; // the discovery controller we are talking to
    const unusable = unusableEntry(e, base);
    if (unusable) {
      push(skip(e, unusable));
      continue;
    }
    const trsvcid = e.trsvcid || base.trsvcid;
    if (e.subtype === 1) {
      if (!follow) {
        push(skip(e, "referral of a referral (followed once only)"));
        continue;
      }
      try {
        const at = { ...base, traddr: e.traddr, trsvcid };
        const log = await discover(paths, at);
        const via = { trtype, traddr: e.traddr, trsvcid };
        rows.push(
          ...await connectEntries(paths, at, log.entries, { follow: false, io, referral: via }),
        );
      } catch (err) {
        push({ ...skip(e, (err as Error).message), status: "failed" });
      }
      continue;
    }
    if (e.subtype !== 2) {
      push(skip(e, `subtype ${subtypeName(e.subtype)}`));
      continue;
    }
    const where = { subnqn: e.subnqn, trtype, traddr: e.traddr, trsvcid };
    try {
      const opts: ConnectOptions = {
        ...base,
        transport: trtype as Transport,
        traddr: e.traddr,
        trsvcid,
        nqn: checkNqn(e.subnqn, "the discovery log's subnqn"),
      };
      const r = await connectSubsystem(paths, opts, { progress: io.progress, known });
      push(connectedRow(where, r));
    } catch (err) {
      push(failedRow(where, failureReason(err)));
    }
  }
  return rows;
}

/**
 * Reads the discovery log at BASE's address and connects every NVM subsystem it lists; SAVE
 * (--persist) is the discovery controller's entry, saved after.
 */
export async function connectAll(
  paths: FabricsPaths,
  req: { base: ConnectOptions; save?: SavedConnection },
  io: ConnectIo,
): Promise<ConnectReport> {
  const log = await discover(paths, req.base);
  const records = await connectEntries(paths, req.base, log.entries, { follow: true, io });
  const saved = req.save ? await persistEntries([req.save]) : undefined;
  const data = { genctr: log.genctr, records, ...(saved ? { saved: saved.file } : {}) };
  return rowsReport(data, (d) => connectAllText(d) + (saved ? `\n${saved.text}` : ""));
}

/**
 * connect-all without an address: through each discovery controller of discovery.conf, as
 * nvme-cli does; FLAGS (the tuning flags given) apply to every line, a line's own flags win.
 */
export async function connectAllFromConf(
  paths: FabricsPaths,
  flags: ConnectOptions,
  io: ConnectIo,
): Promise<ConnectReport> {
  const conf = await requireDiscoveryConf(paths.etcNvme, {
    hostnqn: flags.hostnqn!,
    hostid: flags.hostid!,
  });
  for (const n of conf.notes) io.note(n);
  const records: ConnectAllRow[] = [];
  for (const base of confBases(flags, conf)) {
    try {
      const log = await discover(paths, base);
      records.push(...await connectEntries(paths, base, log.entries, { follow: true, io }));
    } catch (err) {
      records.push(failedRow({
        subnqn: DISCOVERY_NQN,
        trtype: base.transport,
        traddr: base.traddr,
        trsvcid: base.trsvcid,
      }, (err as Error).message));
    }
  }
  return rowsReport({ file: conf.file, records });
}

/**
 * The discovery controllers of discovery.conf as connect bases: FLAGS (the tuning flags given)
 * under each line's own flags, which win.
 */
export function confBases(flags: ConnectOptions, conf: DiscoveryConfControllers): ConnectOptions[] {
  return conf.controllers.map((c) => ({ ...flags, ...definedOnly(c), nqn: "" }));
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
