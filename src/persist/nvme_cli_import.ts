/**
 * Importing nvme-cli's saved fabrics configuration (libnvme's src/nvme/fabrics.c and json.c):
 * what reading /etc/nvme/discovery.conf (discovery_conf.ts) and libnvme's config.json
 * (config_json.ts) share. Entries become saved connections; DH-HMAC-CHAP keys, which nvme-cli
 * keeps inline, are moved into key files (mode 0600) that the entries name, or kept in memory
 * when connecting from the files as they are. What nvmeof cannot carry is reported.
 */
import { quote, UsageError } from "../errors.ts";
import { InputError, readInputText } from "../input.ts";
import { hexOf, sha256 } from "../sha256.ts";
import { type ConnectOptions, isTransport } from "../fabrics/connect_options.ts";
import {
  connectionKey,
  optionsFromSaved,
  type SavedConnection,
  validateSaved,
} from "./connections.ts";
import {
  CONNECT_OPTIONS,
  type ConnectOptionRow,
  type TableField,
} from "../fabrics/connect_table.ts";

/** A secret to be written to a key file (never printed). */
export interface KeyFile {
  path: string;
  secret: string;
}

/** What an import found. */
export interface ImportResult {
  connections: SavedConnection[];
  /** Things skipped or changed, one sentence each. */
  notes: string[];
  keyFiles: KeyFile[];
}

/** The host identity used for discovery.conf lines that carry none. */
export interface DefaultHost {
  hostnqn?: string;
  hostid?: string;
}

/** The raw key under which an inline secret waits to be moved into a key file, by table field. */
export const INLINE_SECRET: Partial<Record<TableField, string>> = {
  dhchapSecret: "dhchap_secret",
  dhchapCtrlSecret: "dhchap_ctrl_secret",
};

/**
 * The key file of a connection, named from all of what makes it one connection (connectionKey:
 * host, subsystem, transport, address, service id, host address): an rdma and a tcp entry to one
 * address, which may hold different keys, get different files.
 */
function keyPath(etc: string, c: SavedConnection): string {
  return `${etc}/keys/${hexOf(sha256(connectionKey(c)).subarray(0, 6))}.key`;
}

export function addEntry(
  out: ImportResult,
  raw: Record<string, unknown>,
  where: string,
  etc: string,
): void {
  const secrets: Array<[ConnectOptionRow, unknown]> = [];
  for (const r of CONNECT_OPTIONS) {
    const key = INLINE_SECRET[r.field];
    if (key === undefined) continue;
    secrets.push([r, raw[key]]);
    delete raw[key];
  }
  if (
    typeof raw.transport !== "string" || !isTransport(raw.transport)
  ) {
    out.notes.push(
      `${where}: transport ${quote(raw.transport)} skipped (nvmeof connects rdma and tcp).`,
    );
    return;
  }
  // nvme-cli's --tls-key may be the key itself (interchange format): never echo it, never keep it.
  if (raw.tls_key !== undefined && !/^\d+$/.test(String(raw.tls_key))) {
    delete raw.tls_key;
    out.notes.push(`${where}: a TLS key given inline is not carried over (give its key serial).`);
  }
  const c = validateSaved(raw, where);
  let base: string | undefined; // one digest per connection, for its host and controller keys
  for (const [r, secret] of secrets) {
    if (typeof secret !== "string" || secret === "") continue;
    base ??= keyPath(etc, c);
    const path = r.field === "dhchapSecret" ? base : base.replace(/\.key$/, ".ctrl.key");
    (c as unknown as Record<string, unknown>)[r.saved] = path;
    out.keyFiles.push({ path, secret: secret.trim() });
    out.notes.push(
      `${where}: DH-HMAC-CHAP ${
        r.field === "dhchapSecret" ? "" : "controller "
      }key moved to ${path} (mode 0600).`,
    );
  }
  out.connections.push(c);
}

/**
 * Reads one of nvme-cli's files (bounded, UTF-8); undefined when it does not exist. Throws
 * UsageError when it cannot be read, InputError when it is too large or not text.
 */
export function readNvmeCliFile(path: string): string | undefined {
  try {
    return readInputText(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    if (err instanceof InputError) throw err;
    throw new UsageError(`Cannot read '${path}': ${(err as Error).message}`, {
      cause: err,
      hint: "Run as root.",
    });
  }
}

/**
 * The connect options of an import, its inline keys kept in memory instead of key files (for
 * connecting from nvme-cli's files as they are, without saving anything).
 */
export async function inMemory(
  r: ImportResult,
): Promise<{ controllers: ConnectOptions[]; notes: string[] }> {
  const secretOf = new Map(r.keyFiles.map((k) => [k.path, k.secret]));
  const controllers: ConnectOptions[] = [];
  for (const c of r.connections) {
    const plain = { ...c } as Record<string, unknown>;
    const secrets: Record<string, unknown> = {};
    for (const row of CONNECT_OPTIONS) {
      if (row.kind.type !== "secret-file" || plain[row.saved] === undefined) continue;
      secrets[row.field] = secretOf.get(String(plain[row.saved]));
      delete plain[row.saved];
    }
    controllers.push({
      ...await optionsFromSaved(plain as unknown as SavedConnection),
      ...secrets as Partial<ConnectOptions>,
    });
  }
  return { controllers, notes: r.notes.filter((n) => !/key moved to/.test(n)) };
}
