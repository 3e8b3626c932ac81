/**
 * `nvmeof connect-all`: discover, then connect every NVM subsystem the log lists.
 */
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { EXIT, NvmeofError, UsageError } from "../errors.ts";
import { connectSubsystem } from "../fabrics/connect.ts";
import { discover } from "../fabrics/controller.ts";
import { type DiscoveryLogEntry, subtypeName, trtypeName } from "../fabrics/discovery_log.ts";
import { ADDRESS_FLAGS, HOST_FLAGS, secretFilesFromFlags, TUNING_FLAGS } from "../fabrics/flags.ts";
import { checkNqn, type ConnectOptions, type Transport } from "../fabrics/options.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { type FabricsPaths, fabricsPaths } from "../fabrics/initiator_paths.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import { savedFromOptions } from "../persist/connections.ts";
import { requireDiscoveryConf } from "../persist/discovery_conf.ts";
import {
  type ConnectAllRow,
  connectAllText,
  connectOptionsFromFlags,
  persistEntries,
  progressOf,
  type ReferralAddress,
} from "./connect_shared.ts";

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
 * Connects every NVM subsystem of ENTRIES (one discovery log). Referral entries are followed when
 * FOLLOW is true: the referred controller's log is read and its entries connected, each row then
 * carrying `referral`, the discovery controller that listed it; a referral found there is not
 * followed again (no loops between storage servers that refer to each other).
 */
export async function connectEntries(
  paths: FabricsPaths,
  base: ConnectOptions,
  entries: DiscoveryLogEntry[],
  follow: boolean,
  ctx: RunContext,
  referral?: ReferralAddress,
): Promise<ConnectAllRow[]> {
  const rows: ConnectAllRow[] = [];
  const push = (row: ConnectAllRow) => rows.push(referral ? { ...row, referral } : row);
  for (const e of entries) {
    const trtype = trtypeName(e.trtype);
    if (e.subtype === 3) continue; // the discovery controller we are talking to
    if (trtype !== base.transport) {
      push(skip(e, `transport ${trtype} differs from -t ${base.transport}`));
      continue;
    }
    if (
      (e.adrfam !== 1 && e.adrfam !== 2) || !(isIpv4(e.traddr) || isIpv6(e.traddr, { zone: true }))
    ) {
      push(skip(e, `address '${e.traddr}' is not an IP address`));
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
        rows.push(...await connectEntries(paths, at, log.entries, false, ctx, via));
      } catch (err) {
        push({ ...skip(e, (err as Error).message), status: "failed" });
      }
      continue;
    }
    if (e.subtype !== 2) {
      push(skip(e, `subtype ${subtypeName(e.subtype)}`));
      continue;
    }
    const row: ConnectAllRow = {
      subnqn: e.subnqn,
      trtype,
      traddr: e.traddr,
      trsvcid,
      status: "failed",
    };
    try {
      const opts: ConnectOptions = {
        ...base,
        transport: trtype as Transport,
        traddr: e.traddr,
        trsvcid,
        nqn: checkNqn(e.subnqn, "the discovery log's subnqn"),
      };
      const r = await connectSubsystem(paths, opts, { progress: progressOf(ctx) });
      row.status = r.existing ? "already connected" : "connected";
      row.device = r.device;
      row.namespaces = r.namespaces.map((n) => n.device);
    } catch (err) {
      row.reason = err instanceof NvmeofError
        ? err.message + (err.hint ? " " + err.hint.split("\n")[0] : "")
        : (err as Error).message;
    }
    push(row);
  }
  return rows;
}

/** `nvmeof connect-all`. */
export const connectAllCommand: CommandDetails = {
  description: `
Reads the discovery log at ADDR (like 'nvmeof discover'), then connects each NVM subsystem
entry of the same transport, skipping those already connected and the discovery entries.
Referrals to other discovery controllers are followed once; a row that came through one names it
('referral': the discovery controller that listed the entry). Exit 1 if any connect failed.
Without -a, as nvme-cli, it goes through every discovery controller listed in
/etc/nvme/discovery.conf (one line of nvme-cli flags each); the tuning flags given apply to
each line, and a line's own flags win.`,
  options: {
    ...ADDRESS_FLAGS,
    ...HOST_FLAGS,
    ...TUNING_FLAGS,
    persist: {
      type: "boolean",
      description:
        "Also save this discovery controller in /etc/nvmeof/connections.yaml: at boot every subsystem it lists is connected",
    },
  },
  examples: [
    "nvmeof connect-all -a 10.0.0.2",
    "nvmeof connect-all -t rdma -a 10.0.0.2 -s 4420 -i 4 -o json",
    "nvmeof connect-all -a 10.0.0.2 --persist   # and again at every boot",
    "nvmeof connect-all   # through every controller of /etc/nvme/discovery.conf",
  ],
  async run(ctx) {
    const paths = fabricsPaths();
    if (ctx.values.traddr === undefined) return await connectAllConfRun(ctx);
    const base = await connectOptionsFromFlags(ctx.values, paths, "");
    const log = await discover(paths, base);
    const records = await connectEntries(paths, base, log.entries, true, ctx);
    const saved = ctx.values.persist === true
      ? await persistEntries([
        savedFromOptions({ ...base, nqn: DISCOVERY_NQN }, secretFilesFromFlags(ctx.values)),
      ])
      : undefined;
    const data = { genctr: log.genctr, records, ...(saved ? { saved: saved.file } : {}) };
    return {
      data,
      text: () => connectAllText(data) + (saved ? `\n${saved.text}` : ""),
      exitCode: records.some((r) => r.status === "failed") ? EXIT.failure : EXIT.ok,
    };
  },
};

/**
 * connect-all without -a: through each discovery controller of discovery.conf, as nvme-cli does;
 * the tuning flags given apply to every line, a line's own flags win.
 */
async function connectAllConfRun(ctx: RunContext): Promise<CommandResult> {
  if (ctx.values.persist === true) {
    throw new UsageError("--persist needs -a: discovery.conf already lists what it would save.", {
      hint: "'nvmeof connections import --from-nvme-cli' saves discovery.conf's controllers.",
    });
  }
  const paths = fabricsPaths();
  const flags = await connectOptionsFromFlags({ ...ctx.values, traddr: "0.0.0.0" }, paths, "");
  const conf = await requireDiscoveryConf(paths.etcNvme, {
    hostnqn: flags.hostnqn!,
    hostid: flags.hostid!,
  });
  for (const n of conf.notes) ctx.note(n);
  const records: ConnectAllRow[] = [];
  for (const c of conf.controllers) {
    const base: ConnectOptions = { ...flags, ...definedOnly(c), nqn: "" };
    try {
      const log = await discover(paths, base);
      records.push(...await connectEntries(paths, base, log.entries, true, ctx));
    } catch (err) {
      records.push({
        subnqn: DISCOVERY_NQN,
        trtype: base.transport,
        traddr: base.traddr,
        trsvcid: base.trsvcid,
        status: "failed",
        reason: (err as Error).message,
      });
    }
  }
  const data = { file: conf.file, records };
  return {
    data,
    text: () => connectAllText(data),
    exitCode: records.some((r) => r.status === "failed") ? EXIT.failure : EXIT.ok,
  };
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
