/**
 * `nvmeof connect` and `nvmeof connect-all`: I/O controllers through /dev/nvme-fabrics.
 */
import type { CommandDetails, CommandResult, OptionValues, RunContext } from "../cli/command.ts";
import { EXIT, NvmeofError, UsageError } from "../errors.ts";
import { type ConnectResult, connectSubsystem } from "../fabrics/connect.ts";
import { discover } from "../fabrics/controller.ts";
import { type DiscoveryLogEntry, subtypeName, trtypeName } from "../fabrics/discovery_log.ts";
import {
  ADDRESS_FLAGS,
  CONNECT_FLAGS,
  HOST_FLAGS,
  hostFromFlags,
  resolvedAddressFromFlags,
  secretFilesFromFlags,
  TUNING_FLAGS,
  tuningFromFlags,
} from "../fabrics/flags.ts";
import { resolveHostIdentity } from "../fabrics/host_identity.ts";
import {
  checkInt,
  checkKernelOptions,
  checkNqn,
  checkTransportOptions,
  type ConnectOptions,
  DEFAULT_CTRL_LOSS_TMO,
  redactedOptionString,
  runningKernelRelease,
  type Transport,
} from "../fabrics/options.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { type FabricsPaths, fabricsPaths } from "../fabrics/paths.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import { connectionsFile, persistPaths } from "../persist/paths.ts";
import {
  describeSaved,
  isDiscoveryEntry,
  loadConnections,
  mergeConnections,
  optionsFromSaved,
  saveConnections,
  type SavedConnection,
  savedFromOptions,
} from "../persist/connections.ts";
import { versioned } from "../output/contract.ts";
import { humanSize } from "../output/render.ts";
import { configJsonControllers, configJsonOf, requireDiscoveryConf } from "../persist/nvme_cli.ts";
import { haProfile, rowOf, type TableField } from "../fabrics/connect_table.ts";
import { retrySaved } from "../persist/retry.ts";
import { DEFAULT_RETRY_FOR } from "../persist/systemd.ts";

/** Builds the complete, validated options from the fabrics flags (host identity resolved). */
export async function connectOptionsFromFlags(
  given: OptionValues,
  paths: FabricsPaths,
  nqn: string,
): Promise<ConnectOptions> {
  const values = { ...given };
  if (Array.isArray(values.traddr)) values.traddr = values.traddr[0];
  const address = await resolvedAddressFromFlags(values);
  const host = hostFromFlags(values);
  const tuning = await tuningFromFlags(values);
  const id = await resolveHostIdentity(host, paths);
  const opts: ConnectOptions = {
    ...address,
    nqn,
    ...(host.hostTraddr ? { hostTraddr: host.hostTraddr } : {}),
    hostnqn: id.hostnqn,
    hostid: id.hostid,
    ...tuning,
  };
  checkTransportOptions(opts);
  checkKernelOptions(opts, runningKernelRelease());
  return opts;
}

function progressOf(ctx: RunContext): ((line: string) => void) | undefined {
  return Deno.stderr.isTerminal() || ctx.global.verbose ? ctx.note : undefined;
}

function addr(t: string, a: string, s: string): string {
  return `${t} ${a.includes(":") ? `[${a}]` : a}:${s}`;
}

function connectText(r: ConnectResult): string {
  const head = r.existing
    ? `already connected: ${r.device} to '${r.subsysnqn}' at ${
      addr(r.transport, r.traddr, r.trsvcid)
    } ` +
      `(state ${r.state})`
    : `connected ${r.device} to '${r.subsysnqn}' at ${addr(r.transport, r.traddr, r.trsvcid)} ` +
      `(cntlid ${r.cntlid}, ready in ${r.timing_ms?.ready ?? "?"} ms)`;
  const lines = r.namespaces.map((n) => `${n.device}  nsid ${n.nsid}  ${humanSize(n.size)}`);
  if (r.namespaces.length === 0) lines.push("(the subsystem exports no namespaces)");
  return [head, ...lines].join("\n");
}

/** `nvmeof connect`. */
export const connectCommand: CommandDetails = {
  description: `
Writes the connect options to /dev/nvme-fabrics (as nvme-cli does, without needing it), reads
back the new controller, and waits until it is live and the block device of every active
namespace exists. An identical existing connection (same host, subsystem, address, port) is
reported, not duplicated, and is not an error.

The host NQN and host ID come from -q/-I, else from /etc/nvme/hostnqn and /etc/nvme/hostid
('nvmeof hostnqn --generate' creates them). They are always sent together: the kernel pairs
each host NQN with one host ID.

The flags are nvme-cli's (-i -W -P -Q -k -c -l -F -T -D --disable-sqflow -g -G -f …), with their
kernel ranges; negative values where the kernel takes them (-l -1, -l=-1: never give up).
-a also takes a host name, resolved as nvme-cli resolves it. DH-HMAC-CHAP secrets come from
files, never from argv, which every user can read: --dhchap-secret-file FILE for the host's,
-C/--dhchap-ctrl-secret-file FILE for the controller's (nvme-cli's -C takes the key itself; here
it takes the file). A key given inline (-S, --dhchap-ctrl-secret, -C DHHC-1:…) is refused.

Values are checked before anything is written: NQNs under 223 bytes, addresses, queue size
16..1024, tcp-only options (-g -G -f, TLS) not on rdma, and options the running kernel lacks
(--tls needs Linux 6.7: exit 3, naming the release). --persist saves every option given
(ctrl-loss-tmo, reconnect-delay, fast_io_fail_tmo, keep-alive-tmo …) and --saved gives them
back. -v prints the option string written (secrets hidden). Root is needed (except --dry-run).`,
  options: {
    ...CONNECT_FLAGS,
    config: {
      type: "string",
      short: "J",
      value: "FILE",
      description:
        "Connect every I/O controller of this libnvme config.json instead of -a/-n (nvme-cli's -J; 'none': ignore)",
    },
    "dump-config": {
      type: "boolean",
      short: "O",
      description:
        "Print the connection as libnvme's config.json (nvme-cli's -O), without secrets; -J takes it back",
    },
    traddr: {
      ...CONNECT_FLAGS.traddr,
      multiple: true,
      description:
        "Target address (IP, or a host name); repeat it for every path of the subsystem (HA profile)",
    },
    "ctrl-loss-tmo": {
      ...Object.fromEntries(
        Object.entries(CONNECT_FLAGS["ctrl-loss-tmo"]).filter(([k]) => k !== "default"),
      ) as typeof CONNECT_FLAGS["ctrl-loss-tmo"],
      description:
        `Give up reconnecting after this long; -1 = never (default ${DEFAULT_CTRL_LOSS_TMO} as nvme-cli, -1 with the HA profile)`,
    },
    ha: {
      type: "boolean",
      description: `The HA profile even for one path (the default with several -a): ${haText()}`,
    },
    "no-ha": {
      type: "boolean",
      description: "The kernel's and nvme-cli's timeouts even with several -a",
    },
    persist: {
      type: "boolean",
      description: "Also save the connection in /etc/nvmeof/connections.yaml (reconnected at boot)",
    },
    saved: {
      type: "boolean",
      description: "Connect every saved connection instead (what nvmeof-autoconnect.service runs)",
    },
    "retry-for": {
      type: "string",
      value: "SECONDS",
      description:
        `With --saved: keep retrying unreachable targets with backoff (1 s doubling to 15 s) for this long (default ${DEFAULT_RETRY_FOR}; 0 = try once)`,
    },
  },
  examples: [
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1   # rdma, port 4420",
    "nvmeof connect -a 10.0.0.2 -a 10.0.1.2 -n nqn.2024-01.io.example:disk1   # two paths, HA profile",
    "nvmeof connect -a 10.0.0.2 -a 10.0.1.2 -n nqn.2024-01.io.example:disk1 --dry-run -o json",
    "nvmeof connect -t rdma -a 10.0.0.2 -s 4420 -n nqn.2024-01.io.example:disk1 -i 4 -Q 128",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --dry-run   # print the option string",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -o json",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --dhchap-secret-file /etc/nvme/disk1.key",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --persist   # and at every boot",
    "nvmeof connect -a storage1 -n nqn.2024-01.io.example:disk1 -l -1 -c 2 --fast_io_fail_tmo 5 --persist   # HA timeouts, saved",
    "nvmeof connect -t tcp -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -g -G -f eth1   # digests, from eth1",
    "nvmeof connect --saved   # (re)connect all saved connections",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -l -1 -F 5 -c 2 -O > disk1.json",
    "nvmeof connect -J disk1.json   # every I/O controller the file lists, as 'nvme connect -J'",
    "nvmeof connect --saved --retry-for 300 -o json   # wait up to 5 min for late targets",
  ],
  async run(ctx) {
    if (ctx.values.saved === true) return await connectSavedRun(ctx);
    const config = ctx.values.config;
    if (typeof config === "string" && config !== "none") return await connectConfigRun(ctx, config);
    if (ctx.values["retry-for"] !== undefined) {
      throw new UsageError("--retry-for only applies to --saved.", {
        hint: "Add --saved, or drop --retry-for.",
      });
    }
    const nqnValue = ctx.values.nqn;
    if (typeof nqnValue !== "string") {
      throw new UsageError("The subsystem NQN is missing.", {
        hint: "Give it with -n/--nqn (nvmeof discover -a ADDR lists them).",
      });
    }
    const paths = fabricsPaths();
    const nqn = checkNqn(nqnValue, "-n/--nqn");
    const addrs = traddrsOf(ctx.values);
    if (addrs.length > 1 || ctx.values.ha === true) {
      return await connectPathsRun(ctx, paths, nqn, addrs);
    }
    const opts = await connectOptionsFromFlags(
      withProfile(ctx.values, false),
      paths,
      nqn,
    );
    const persist = ctx.values.persist === true
      ? savedFromOptions(opts, secretFilesFromFlags(ctx.values))
      : undefined;
    if (ctx.values["dump-config"] === true && ctx.values["dry-run"] === true) {
      return dumpConfig([opts]);
    }
    if (ctx.values["dry-run"] === true) {
      const data = versioned({
        dry_run: true,
        device: `${paths.dev}/nvme-fabrics`,
        option_string: redactedOptionString(opts),
        ...(persist ? { would_save: persist } : {}),
      });
      return {
        data,
        text: () =>
          data.option_string +
          (persist ? `\nwould save: ${describeSaved(persist)} in ${savedFile()}` : ""),
      };
    }
    if (ctx.global.verbose) {
      ctx.note(`writing to ${paths.dev}/nvme-fabrics: ${redactedOptionString(opts)}`);
    }
    const r = await connectSubsystem(paths, opts, { progress: progressOf(ctx) });
    if (ctx.values["dump-config"] === true) ctx.note(connectText(r));
    if (ctx.values["dump-config"] === true && !persist) return dumpConfig([opts]);
    if (!persist) return { data: versioned(r), text: () => connectText(r) };
    const saved = await persistEntries([persist]);
    return {
      data: versioned({ ...r, saved: saved.file, saved_change: saved.change }),
      text: () => `${connectText(r)}\n${saved.text}`,
    };
  },
};

/** The -a values given, in order (none: an empty list; the address check names the flag). */
function traddrsOf(values: OptionValues): string[] {
  const v = values.traddr;
  return Array.isArray(v) ? v.map(String) : typeof v === "string" ? [v] : [];
}

/** "keep_alive_tmo=1 reconnect_delay=1 …": the HA profile as option-string tokens. */
function haText(): string {
  return Object.entries(haProfile()).map(([f, v]) => `${rowOf(f as TableField).token}=${v}`)
    .join(" ");
}

/**
 * VALUES with the profile's settings for the options not given: the HA profile's (HA), else
 * nvme-cli's ctrl_loss_tmo of 600 s. A flag given on the command line always wins.
 */
function withProfile(values: OptionValues, ha: boolean): OptionValues {
  const out: OptionValues = { ...values };
  const given = (f: TableField) => {
    const r = rowOf(f);
    return [r.flag, ...(r.aliases ?? [])].some((n) => out[n] !== undefined);
  };
  if (ha) {
    for (const [f, v] of Object.entries(haProfile())) {
      if (!given(f as TableField)) out[rowOf(f as TableField).flag] = String(v);
    }
  }
  if (!given("ctrlLossTmo")) out["ctrl-loss-tmo"] = String(DEFAULT_CTRL_LOSS_TMO);
  return out;
}

/** One path of `connect -a A -a B`: connected (or found), or why not. */
type PathRow = ConnectResult | {
  traddr: string;
  trsvcid: string;
  status: "failed";
  reason: string;
};

/**
 * `connect -a A -a B …` (or `--ha`): every path of one subsystem, with the HA profile unless
 * --no-ha. Each path is connected even when another fails; exit 1 when any failed.
 */
async function connectPathsRun(
  ctx: RunContext,
  paths: FabricsPaths,
  nqn: string,
  addrs: string[],
): Promise<CommandResult> {
  const ha = ctx.values["no-ha"] !== true;
  if (ctx.values.ha === true && ctx.values["no-ha"] === true) {
    throw new UsageError("--ha and --no-ha exclude each other.", { hint: "Use one." });
  }
  const dup = addrs.find((a, i) => addrs.indexOf(a) !== i);
  if (dup !== undefined) {
    throw new UsageError(`-a/--traddr '${dup}' is given twice.`, {
      hint: "Give each path of the subsystem once.",
    });
  }
  const values = withProfile(ctx.values, ha);
  // Every address is checked before anything is written.
  const all = await Promise.all(
    addrs.map((a) => connectOptionsFromFlags({ ...values, traddr: a }, paths, nqn)),
  );
  const profile = ha ? haProfile() : undefined;
  const haData = profile
    ? Object.fromEntries(
      Object.keys(profile).map((f) => [rowOf(f as TableField).token, all[0][f as TableField]]),
    )
    : undefined;
  const files = secretFilesFromFlags(ctx.values);
  const persist = ctx.values.persist === true
    ? all.map((o) => savedFromOptions(o, files))
    : undefined;
  if (ctx.values["dry-run"] === true) {
    const data = {
      dry_run: true,
      device: `${paths.dev}/nvme-fabrics`,
      ...(haData ? { ha: haData } : {}),
      option_strings: all.map(redactedOptionString),
      ...(persist ? { would_save: persist } : {}),
    };
    return {
      data,
      text: () =>
        data.option_strings.join("\n") +
        (persist ? `\nwould save ${persist.length} paths in ${savedFile()}` : ""),
    };
  }
  const rows: PathRow[] = [];
  for (const opts of all) {
    if (ctx.global.verbose) {
      ctx.note(`writing to ${paths.dev}/nvme-fabrics: ${redactedOptionString(opts)}`);
    }
    try {
      rows.push(await connectSubsystem(paths, opts, { progress: progressOf(ctx) }));
    } catch (err) {
      rows.push({
        traddr: opts.traddr,
        trsvcid: opts.trsvcid,
        status: "failed",
        reason: err instanceof NvmeofError
          ? err.message + (err.hint ? " " + err.hint.split("\n")[0] : "")
          : (err as Error).message,
      });
    }
  }
  const saved = persist ? await persistEntries(persist) : undefined;
  const data = {
    subsysnqn: nqn,
    ...(haData ? { ha: haData } : {}),
    paths: rows,
    ...(saved ? { saved: saved.file } : {}),
  };
  return {
    data,
    text: () =>
      [
        ...(haData
          ? [`HA profile: ${Object.entries(haData).map(([k, v]) => `${k}=${v}`).join(" ")}`]
          : []),
        ...rows.map((r) =>
          "status" in r
            ? `failed: '${nqn}' at ${
              addr(ctx.values.transport as string, r.traddr, r.trsvcid)
            }: ${r.reason}`
            : connectText(r)
        ),
        ...(saved ? [saved.text] : []),
      ].join("\n"),
    exitCode: rows.some((r) => "status" in r) ? EXIT.failure : EXIT.ok,
  };
}

function savedFile(): string {
  return connectionsFile(persistPaths());
}

/** -O/--dump-config: libnvme's config.json of the connections, as text and as JSON alike. */
function dumpConfig(list: ConnectOptions[]): CommandResult {
  const data = configJsonOf(list);
  return { data, text: () => JSON.stringify(data, null, 2) };
}

/** `connect -J FILE`: every I/O controller of a libnvme config.json, as `nvme connect -J`. */
async function connectConfigRun(ctx: RunContext, file: string): Promise<CommandResult> {
  for (const f of ["traddr", "nqn", "persist"]) {
    if (ctx.values[f] !== undefined) {
      throw new UsageError(`-J/--config connects what the file lists; --${f} does not apply.`, {
        hint: "Drop it, or connect one subsystem without -J.",
      });
    }
  }
  const { controllers, notes } = await configJsonControllers(file);
  for (const n of notes) ctx.note(n);
  for (const o of controllers) {
    checkTransportOptions(o);
    checkKernelOptions(o, runningKernelRelease());
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

/** Adds entries to the connections file; returns its path and a line saying what changed. */
async function persistEntries(
  add: SavedConnection[],
): Promise<{ file: string; text: string; change: "saved" | "updated" | "unchanged" }> {
  const file = savedFile();
  const merged = mergeConnections(await loadConnections(file), add);
  if (merged.added.length || merged.replaced.length) await saveConnections(file, merged.list);
  const what = merged.added.length
    ? "saved"
    : merged.replaced.length
    ? "updated the saved entry"
    : "already saved";
  const change = merged.added.length ? "saved" : merged.replaced.length ? "updated" : "unchanged";
  return {
    file,
    text: `${what} in ${file} (reconnected at boot by nvmeof-autoconnect.service)`,
    change,
  };
}

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

async function connectSavedRun(ctx: RunContext): Promise<CommandResult> {
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

/** One row of connect-all's report. */
interface ConnectAllRow {
  subnqn: string;
  trtype: string;
  traddr: string;
  trsvcid: string;
  status: "connected" | "already connected" | "skipped" | "failed";
  device?: string;
  namespaces?: string[];
  reason?: string;
}

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

async function connectEntries(
  paths: FabricsPaths,
  base: ConnectOptions,
  entries: DiscoveryLogEntry[],
  followReferrals: boolean,
  ctx: RunContext,
): Promise<ConnectAllRow[]> {
  const rows: ConnectAllRow[] = [];
  for (const e of entries) {
    const trtype = trtypeName(e.trtype);
    if (e.subtype === 3) continue; // the discovery controller we are talking to
    if (trtype !== base.transport) {
      rows.push(skip(e, `transport ${trtype} differs from -t ${base.transport}`));
      continue;
    }
    if (
      (e.adrfam !== 1 && e.adrfam !== 2) || !(isIpv4(e.traddr) || isIpv6(e.traddr, { zone: true }))
    ) {
      rows.push(skip(e, `address '${e.traddr}' is not an IP address`));
      continue;
    }
    const trsvcid = e.trsvcid || base.trsvcid;
    if (e.subtype === 1) {
      if (!followReferrals) {
        rows.push(skip(e, "referral of a referral (followed once only)"));
        continue;
      }
      try {
        const log = await discover(paths, { ...base, traddr: e.traddr, trsvcid });
        rows.push(
          ...await connectEntries(
            paths,
            { ...base, traddr: e.traddr, trsvcid },
            log.entries,
            false,
            ctx,
          ),
        );
      } catch (err) {
        rows.push({ ...skip(e, (err as Error).message), status: "failed" });
      }
      continue;
    }
    if (e.subtype !== 2) {
      rows.push(skip(e, `subtype ${subtypeName(e.subtype)}`));
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
    rows.push(row);
  }
  return rows;
}

function connectAllText(d: { records: ConnectAllRow[] }): string {
  if (d.records.length === 0) return "the discovery log lists no NVM subsystems for this host";
  return d.records.map((r) => {
    const where = `'${r.subnqn}' at ${addr(r.trtype, r.traddr, r.trsvcid)}`;
    if (r.status === "connected" || r.status === "already connected") {
      return `${r.status}: ${r.device} to ${where}` +
        (r.namespaces?.length ? `\n  ${r.namespaces.join(" ")}` : "");
    }
    return `${r.status}: ${where}: ${r.reason}`;
  }).join("\n");
}

/** `nvmeof connect-all`. */
export const connectAllCommand: CommandDetails = {
  description: `
Reads the discovery log at ADDR (like 'nvmeof discover'), then connects each NVM subsystem
entry of the same transport, skipping those already connected and the discovery entries.
Referrals to other discovery controllers are followed once. Exit 1 if any connect failed.
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
