/**
 * Saved connections: /etc/nvmeof/connections.yaml, written by `connect --persist` and
 * `connect-all --persist` (or imported from nvme-cli), read by `connect --saved` at boot.
 *
 * Each entry is one controller to connect, with the host identity it was made with. An entry
 * whose nqn is the discovery NQN stands for a discovery controller: `--saved` runs connect-all
 * through it, as nvme-cli does with the lines of /etc/nvme/discovery.conf. Keys are the option
 * string's names. Secrets are never stored here, only the path of the file holding them.
 */
import { hostPort } from "../net/address.ts";
import { FailureError, quote, quoteName, redactSecrets, UsageError } from "../errors.ts";
import { syncDir } from "./durable.ts";
import { CONNECT_OPTIONS, type TableField } from "../fabrics/connect_table.ts";
import {
  checkAddress,
  checkNqn,
  checkTrsvcid,
  isUuid,
  tableValue,
} from "../fabrics/option_checks.ts";
import {
  type ConnectOptions,
  isSet,
  isTransport,
  type Transport,
} from "../fabrics/connect_options.ts";
import { loadKeyFile } from "../host/key_file.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { InputError, readInputText } from "../input.ts";

/** One saved connection. Keys after host_traddr are the connect-option table's `saved` keys. */
export interface SavedConnection {
  transport: Transport;
  traddr: string;
  trsvcid: string;
  /** Subsystem NQN, or the discovery NQN for "connect-all through this discovery controller". */
  nqn: string;
  hostnqn: string;
  hostid: string;
  host_traddr?: string;
  host_iface?: string;
  nr_io_queues?: number;
  nr_write_queues?: number;
  nr_poll_queues?: number;
  queue_size?: number;
  keep_alive_tmo?: number;
  reconnect_delay?: number;
  ctrl_loss_tmo?: number;
  fast_io_fail_tmo?: number;
  io_timeout?: number;
  tos?: number;
  duplicate_connect?: boolean;
  disable_sqflow?: boolean;
  hdr_digest?: boolean;
  data_digest?: boolean;
  /** File holding the DH-HMAC-CHAP host secret (never the secret itself). */
  dhchap_secret_file?: string;
  /** File holding the DH-HMAC-CHAP controller secret (never the secret itself). */
  dhchap_ctrl_secret_file?: string;
  tls?: boolean;
  keyring?: string;
  tls_key?: string;
  concat?: boolean;
}

const KEYS = [
  "transport",
  "traddr",
  "trsvcid",
  "nqn",
  "hostnqn",
  "hostid",
  "host_traddr",
  ...CONNECT_OPTIONS.map((r) => r.saved),
];

/** True for an entry that stands for a discovery controller (connect-all through it). */
export function isDiscoveryEntry(c: SavedConnection): boolean {
  return c.nqn === DISCOVERY_NQN;
}

/** The key that makes two entries the same connection (nvme-cli's duplicate rule: libnvme's nvmf_connect_disc_entry matches a live controller on these). */
export function connectionKey(c: SavedConnection): string {
  return [c.hostnqn, c.nqn, c.transport, c.traddr, c.trsvcid, c.host_traddr ?? ""].join("|");
}

/**
 * The saved entry for connect options. Secrets are replaced by the files they came from
 * (`secretFiles`: by table field; a plain string is the host secret's file).
 */
export function savedFromOptions(
  o: ConnectOptions,
  secretFiles: string | Partial<Record<TableField, string>> = {},
): SavedConnection {
  if (!o.hostnqn || !o.hostid) {
    throw new FailureError("Cannot save a connection without its host NQN and host ID.", {
      hint: "Pass -q/--hostnqn and -I/--hostid, or create /etc/nvme/hostnqn and hostid.",
    });
  }
  const files = typeof secretFiles === "string" ? { dhchapSecret: secretFiles } : secretFiles;
  const out = copyAddress(o, "field", "saved");
  for (const r of CONNECT_OPTIONS) {
    if (r.kind.type === "secret-file") {
      if (files[r.field] !== undefined) out[r.saved] = files[r.field];
    } else if (isSet(r, o[r.field])) out[r.saved] = o[r.field];
  }
  return out as unknown as SavedConnection;
}

/** The connect options of a saved entry; reads the secret files when there are some. */
export function optionsFromSaved(c: SavedConnection): Promise<ConnectOptions> {
  // A promise that rejects on a bad value, as callers await it.
  return new Promise((resolve) => resolve(optionsFromSavedNow(c)));
}

function optionsFromSavedNow(c: SavedConnection): ConnectOptions {
  const saved = c as unknown as Record<string, unknown>;
  const out = copyAddress(c, "saved", "field");
  for (const r of CONNECT_OPTIONS) {
    const v = saved[r.saved];
    if (v === undefined) continue;
    out[r.field] = r.kind.type === "secret-file"
      ? loadKeyFile(String(v), `The saved connection to ${quote(c.nqn)}`)
      : v;
  }
  return out as unknown as ConnectOptions;
}

/**
 * What names the connection, before the connect-option table's rows: each field as connect
 * options (`field`) and a saved entry (`saved`) call it.
 */
const ADDRESS_FIELDS = [
  { field: "transport", saved: "transport" },
  { field: "traddr", saved: "traddr" },
  { field: "trsvcid", saved: "trsvcid" },
  { field: "nqn", saved: "nqn" },
  { field: "hostnqn", saved: "hostnqn" },
  { field: "hostid", saved: "hostid" },
  { field: "hostTraddr", saved: "host_traddr" },
] as const;

/** A new record with the address fields of `from` (named as `src`) under the names of `dst`. */
function copyAddress(
  from: ConnectOptions | SavedConnection,
  src: "field" | "saved",
  dst: "field" | "saved",
): Record<string, unknown> {
  const values = from as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const f of ADDRESS_FIELDS) if (values[f[src]] !== undefined) out[f[dst]] = values[f[src]];
  return out;
}

/**
 * Checks one raw entry (from YAML) and returns it typed; `where` names it in errors
 * (`'/etc/nvmeof/connections.yaml' connections[2]`).
 */
export function validateSaved(raw: unknown, where: string): SavedConnection {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new UsageError(`${where} is not a mapping.`, {
      hint: "Each entry has transport, traddr, trsvcid, nqn, hostnqn and hostid keys.",
    });
  }
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r)) {
    if (!KEYS.includes(k)) {
      throw new UsageError(`${where}.${quoteName(k)} is not a known key.`, {
        hint: `Remove it; known keys: ${KEYS.join(", ")}.`,
      });
    }
  }
  const s = (k: string): string | undefined => {
    const v = r[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v === "string" || typeof v === "number") return String(v);
    throw new UsageError(`${where}.${k} must be a string, not ${quote(v)}.`, {
      hint: "Write it as a plain value, as 'nvmeof connect --persist' saves it.",
    });
  };
  const need = (k: string): string => {
    const v = s(k);
    if (v === undefined || v === "") {
      throw new UsageError(`${where}.${k} is missing.`, {
        hint: "Save the connection again with 'nvmeof connect --persist …'.",
      });
    }
    return v;
  };
  const transport = need("transport");
  if (!isTransport(transport)) {
    throw new UsageError(`${where}.transport ${quote(transport)} is not supported.`, {
      hint: "Use rdma or tcp.",
    });
  }
  const hostid = need("hostid").toLowerCase();
  if (!isUuid(hostid)) {
    throw new UsageError(`${where}.hostid ${quote(hostid)} is not a UUID.`, {
      hint: "Write the host's 8-4-4-4-12 hex UUID (see /etc/nvme/hostid).",
    });
  }
  const c: SavedConnection = {
    transport: transport as Transport,
    traddr: checkAddress(need("traddr"), `${where}.traddr`),
    trsvcid: checkTrsvcid(s("trsvcid") ?? "4420", `${where}.trsvcid`),
    nqn: checkNqn(need("nqn"), `${where}.nqn`),
    hostnqn: checkNqn(need("hostnqn"), `${where}.hostnqn`),
    hostid,
  };
  const ht = s("host_traddr");
  if (ht !== undefined) c.host_traddr = checkAddress(ht, `${where}.host_traddr`);
  const out = c as unknown as Record<string, unknown>;
  for (const row of CONNECT_OPTIONS) {
    const v = r[row.saved];
    if (v === undefined || v === null) continue;
    const label = `${where}.${row.saved}`;
    if (row.kind.type === "secret-file") {
      const f = s(row.saved)!;
      if (!f.startsWith("/")) {
        throw new UsageError(`${label} ${quote(f)} is not an absolute path.`, {
          hint: "Write the full path of the key file.",
        });
      }
      out[row.saved] = f;
    } else {
      out[row.saved] = tableValue(row, v, label);
    }
  }
  return c;
}

const HEADER = "# Saved NVMe-oF connections of this host, reconnected at boot by\n" +
  "# 'nvmeof connect --saved' (nvmeof-autoconnect.service). Manage them with\n" +
  "# 'nvmeof connect --persist', 'nvmeof connections list|remove|import'.\n" +
  "# An entry with nqn " + DISCOVERY_NQN + " is a discovery controller:\n" +
  "# every subsystem it lists for this host is connected.\n";

/** Reads the connections file; a missing file is an empty list. */
export async function loadConnections(file: string): Promise<SavedConnection[]> {
  let text: string;
  try {
    text = readInputText(file);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    if (err instanceof InputError) throw err;
    throw new FailureError(`Cannot read '${file}': ${(err as Error).message}`, {
      cause: err,
      hint: "Run as root, or point NVMEOF_ETC at the directory holding connections.yaml.",
    });
  }
  const { parse } = await import("yaml");
  let raw: unknown;
  try {
    raw = parse(text) ?? {};
  } catch (err) {
    const why = redactSecrets((err as Error).message.split("\n")[0]);
    throw new UsageError(`Cannot parse '${file}': ${why}`, {
      cause: err,
      hint: "Fix the YAML, or move the file away and save the connections again.",
    });
  }
  const list = (raw as { connections?: unknown }).connections ?? [];
  if (typeof raw !== "object" || raw === null || !Array.isArray(list)) {
    throw new UsageError(`'${file}' has no 'connections:' list.`, {
      hint: "The file holds 'connections:' followed by '- transport: …' entries.",
    });
  }
  return list.map((e, i) => validateSaved(e, `'${file}' connections[${i}]`));
}

/** The file's text for `list` (exported for the round-trip test). */
export async function connectionsText(list: SavedConnection[]): Promise<string> {
  const { stringify } = await import("yaml");
  return HEADER + stringify({ connections: list }, { lineWidth: 0 });
}

/** Writes the list: a temporary file in the same directory, fsynced, then renamed over. */
export async function saveConnections(file: string, list: SavedConnection[]): Promise<void> {
  const text = await connectionsText(list);
  const dir = file.slice(0, file.lastIndexOf("/")) || "/";
  const tmp = `${file}.tmp-${Deno.pid}`;
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
    using f = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o644 });
    await f.write(new TextEncoder().encode(text));
    await f.sync();
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new FailureError(`Cannot write '${file}': ${(err as Error).message}`, {
      cause: err,
      hint: err instanceof Deno.errors.PermissionDenied
        ? "Run as root (the file lives in /etc/nvmeof)."
        : "Check the directory (NVMEOF_ETC overrides /etc/nvmeof).",
    });
  }
  await Deno.rename(tmp, file);
  syncDir(dir);
}

/** Adds entries not already saved; returns the new list and which of `add` were new. */
export function mergeConnections(
  list: SavedConnection[],
  add: SavedConnection[],
): { list: SavedConnection[]; added: SavedConnection[]; replaced: SavedConnection[] } {
  const out = [...list];
  const added: SavedConnection[] = [];
  const replaced: SavedConnection[] = [];
  for (const c of add) {
    const i = out.findIndex((o) => connectionKey(o) === connectionKey(c));
    if (i < 0) {
      out.push(c);
      added.push(c);
    } else if (JSON.stringify(out[i]) !== JSON.stringify(c)) {
      out[i] = c; // same connection, new tuning: the latest --persist wins
      replaced.push(c);
    }
  }
  return { list: out, added, replaced };
}

/** One line of `connections list`. */
export function describeSaved(c: SavedConnection): string {
  const what = isDiscoveryEntry(c) ? "discovery (connect-all)" : `'${c.nqn}'`;
  const extra = [
    c.host_traddr ? `from ${c.host_traddr}` : "",
    c.nr_io_queues !== undefined ? `${c.nr_io_queues} io queues` : "",
    c.dhchap_secret_file ? "dhchap" : "",
  ].filter(Boolean).join(", ");
  return `${what} at ${c.transport} ${hostPort(c.traddr, c.trsvcid)}${extra ? ` (${extra})` : ""}`;
}
