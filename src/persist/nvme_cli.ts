/**
 * Importing nvme-cli's saved fabrics configuration (facts §4.2):
 * - /etc/nvme/discovery.conf: one discovery controller per line, written as nvme-cli flags
 *   (`--transport=rdma --traddr=10.0.0.2 --trsvcid=4420 …`); `#` starts a comment.
 * - /etc/nvme/config.json (libnvme): hosts, each with subsystems, each with ports. libnvme writes
 *   a top-level array of hosts; its schema also describes `{"hosts": [...]}`; both are read.
 * Entries become saved connections; DH-HMAC-CHAP keys, which nvme-cli keeps inline, are moved
 * into key files (mode 0600) that the entries name. What nvmeof cannot carry is reported.
 */
import { quote, UsageError } from "../errors.ts";
import { InputError, readInputText } from "../input.ts";
import { type ConnectOptions, DISCOVERY_NQN, isSet } from "../fabrics/options.ts";
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
const INLINE_SECRET: Partial<Record<TableField, string>> = {
  dhchapSecret: "dhchap_secret",
  dhchapCtrlSecret: "dhchap_ctrl_secret",
};

/** What one nvme-cli flag of discovery.conf becomes: a raw entry key, and whether it takes a value. */
interface FlagTarget {
  key: string;
  value: boolean;
}

/**
 * nvme-cli flag (long name or short letter, fabrics.c NVMF_ARGS) → raw entry key: the address and
 * identity flags, then every row of the connect-option table under nvme-cli's spelling (secrets
 * inline, as nvme-cli keeps them, to be moved into key files).
 */
const FLAGS: Record<string, FlagTarget> = (() => {
  const out: Record<string, FlagTarget> = {};
  const base: Array<[string, string, string]> = [
    ["transport", "t", "transport"],
    ["traddr", "a", "traddr"],
    ["trsvcid", "s", "trsvcid"],
    ["host-traddr", "w", "host_traddr"],
    ["hostnqn", "q", "hostnqn"],
    ["hostid", "I", "hostid"],
    ["nqn", "n", "nqn"],
  ];
  for (const [long, short, key] of base) out[long] = out[short] = { key, value: true };
  for (const r of CONNECT_OPTIONS) {
    const t = { key: INLINE_SECRET[r.field] ?? r.saved, value: r.kind.type !== "flag" };
    for (const n of [r.nvmeCliFlag ?? r.flag, ...(r.aliases ?? [])]) out[n] = t;
    if (r.short) out[r.short] = t;
  }
  return out;
})();
// nvme-cli flags that say nothing about the connection; those taking a value consume it.
const IGNORED_VALUE_FLAGS = new Set([
  "tls-key-identity",
  "tls_key",
  "hostsymname",
  "raw",
  "r",
  "device",
  "d",
  "config",
  "J",
  "output-format",
  "o",
  "context",
  "nbft-path",
]);
const IGNORED_BOOL_FLAGS = new Set([
  "persistent",
  "p",
  "quiet",
  "verbose",
  "v",
  "force",
  "nbft",
  "no-nbft",
  "dump-config",
  "O",
]);

function splitWords(line: string): string[] {
  const words: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) words.push(m[1] ?? m[2] ?? m[3]);
  return words;
}

/**
 * The key file of a connection, named from all of what makes it one connection (connectionKey:
 * host, subsystem, transport, address, service id, host address): an rdma and a tcp entry to one
 * address, which may hold different keys, get different files.
 */
async function keyPath(etc: string, c: SavedConnection) {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(connectionKey(c))),
  );
  const hex = [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${etc}/keys/${hex}.key`;
}

/** Parses discovery.conf text: each line a discovery controller. */
export async function importDiscoveryConf(
  text: string,
  source: string,
  host: DefaultHost,
  etc: string,
): Promise<ImportResult> {
  const out: ImportResult = { connections: [], notes: [], keyFiles: [] };
  const lines = text.split("\n");
  for (let ln = 0; ln < lines.length; ln++) {
    const line = lines[ln].replace(/#.*$/, "").trim();
    if (!line) continue;
    const where = `${source} line ${ln + 1}`;
    const words = splitWords(line);
    const raw: Record<string, string | boolean> = {};
    const ignored: string[] = [];
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      const m = /^(--?)([A-Za-z][A-Za-z0-9_-]*)(=(.*))?$/.exec(w);
      // A word may be (part of) a DH-HMAC-CHAP key: messages name a flag by its name only and
      // a stray word by its position, never by its text.
      if (!m) {
        throw new UsageError(`${where}: word ${i + 1} is not a flag (its text is not shown).`, {
          hint: "Each line holds nvme-cli flags such as --transport=rdma --traddr=10.0.0.2; " +
            "a value follows its flag after '=' or a space.",
        });
      }
      const flag = `${m[1]}${m[2]}`;
      const name = m[2];
      const inline = m[4];
      const take = () => inline ?? words[++i];
      const target = Object.hasOwn(FLAGS, name) ? FLAGS[name] : undefined;
      if (target?.value) {
        const v = take();
        if (v === undefined || v === "") {
          throw new UsageError(`${where}: ${flag} has no value.`, {
            hint: `Write ${flag}=VALUE, with no space after '='.`,
          });
        }
        raw[target.key] = v;
      } else if (target) {
        raw[target.key] = true;
      } else if (IGNORED_VALUE_FLAGS.has(name)) {
        take();
        ignored.push(`--${name}`);
      } else if (IGNORED_BOOL_FLAGS.has(name)) {
        ignored.push(`--${name}`);
      } else {
        throw new UsageError(`${where}: unknown nvme-cli flag '${flag}'.`, {
          hint: "Fix or remove the line, then import again.",
        });
      }
    }
    if (ignored.length) {
      out.notes.push(
        `${where}: ${ignored.join(", ")} not carried over (nvmeof has no such option).`,
      );
    }
    if (raw.nqn !== undefined && raw.nqn !== DISCOVERY_NQN) {
      out.notes.push(
        `${where}: discovery NQN ${quote(raw.nqn)} replaced by the well-known ${DISCOVERY_NQN}.`,
      );
    }
    raw.nqn = DISCOVERY_NQN;
    raw.transport ??= "rdma";
    raw.hostnqn ??= host.hostnqn ?? "";
    raw.hostid ??= host.hostid ?? "";
    if (!raw.hostnqn || !raw.hostid) {
      throw new UsageError(`${where}: no host NQN and host ID for this line.`, {
        hint: "Create /etc/nvme/hostnqn and /etc/nvme/hostid ('nvmeof hostnqn --generate'), " +
          "or add --hostnqn= and --hostid= to the line.",
      });
    }
    await addEntry(out, raw, where, etc);
  }
  return out;
}

async function addEntry(
  out: ImportResult,
  raw: Record<string, unknown>,
  where: string,
  etc: string,
): Promise<void> {
  const secrets: Array<[ConnectOptionRow, unknown]> = [];
  for (const r of CONNECT_OPTIONS) {
    const key = INLINE_SECRET[r.field];
    if (key === undefined) continue;
    secrets.push([r, raw[key]]);
    delete raw[key];
  }
  if (typeof raw.transport !== "string" || !["rdma", "tcp"].includes(raw.transport)) {
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
  for (const [r, secret] of secrets) {
    if (typeof secret !== "string" || secret === "") continue;
    const base = await keyPath(etc, c);
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

/** config.json port key → raw entry key: the address keys and every table row's nvme-cli key. */
const PORT_KEYS: Record<string, string> = {
  transport: "transport",
  traddr: "traddr",
  trsvcid: "trsvcid",
  host_traddr: "host_traddr",
  ...Object.fromEntries(CONNECT_OPTIONS.map((r) => [r.nvmeCli, INLINE_SECRET[r.field] ?? r.saved])),
};

/** Parses libnvme's config.json text. */
export async function importConfigJson(
  text: string,
  source: string,
  etc: string,
): Promise<ImportResult> {
  const out: ImportResult = { connections: [], notes: [], keyFiles: [] };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    // JSON.parse quotes the text around the error, which may be a key: say only where it is.
    throw new UsageError(`Cannot parse ${source}: not valid JSON${jsonErrorPlace(text, err)}.`, {
      cause: new Error("JSON.parse failed (its message quotes the file; not kept)"),
      hint: "It must be libnvme's JSON (nvme connect-all --dump-config writes it).",
    });
  }
  const hosts = Array.isArray(doc) ? doc : (doc as { hosts?: unknown })?.hosts;
  if (!Array.isArray(hosts)) {
    throw new UsageError(`${source} holds no list of hosts.`, {
      hint: "libnvme's config.json is [ {hostnqn, hostid, subsystems: [...]}, … ].",
    });
  }
  for (const [hi, h] of hosts.entries()) {
    const host = h as Record<string, unknown>;
    const hw = `${source} hosts[${hi}]`;
    if (typeof host?.hostnqn !== "string") {
      throw new UsageError(`${hw} has no hostnqn.`, { hint: "libnvme requires hostnqn." });
    }
    const subs = Array.isArray(host.subsystems) ? host.subsystems : [];
    for (const [si, s] of subs.entries()) {
      const sub = s as Record<string, unknown>;
      const ports = Array.isArray(sub?.ports) ? sub.ports : [];
      for (const [pi, p] of ports.entries()) {
        const where = `${hw}.subsystems[${si}].ports[${pi}]`;
        if (typeof p !== "object" || p === null || Array.isArray(p)) {
          throw new UsageError(`${where} is not a mapping.`, {
            hint: "Each port is {transport, traddr, trsvcid, …}; fix or remove it.",
          });
        }
        const port = p as Record<string, unknown>;
        const raw: Record<string, unknown> = {
          nqn: port.discovery === true ? DISCOVERY_NQN : sub.nqn,
          hostnqn: host.hostnqn,
          hostid: host.hostid,
        };
        const ignored: string[] = [];
        for (const [k, v] of Object.entries(port)) {
          if (PORT_KEYS[k]) raw[PORT_KEYS[k]] = v;
          else if (!["discovery", "persistent"].includes(k)) ignored.push(k);
        }
        // A per-port key wins; else the host's key applies (libnvme does the same).
        if (raw.dhchap_secret === undefined && typeof host.dhchap_key === "string") {
          raw.dhchap_secret = host.dhchap_key;
        }
        if (ignored.length) {
          out.notes.push(
            `${where}: ${ignored.join(", ")} not carried over (nvmeof has no such option).`,
          );
        }
        if (raw.hostid === undefined) {
          const m = /:uuid:([0-9a-fA-F-]{36})$/.exec(String(host.hostnqn));
          if (m) raw.hostid = m[1];
          else {
            throw new UsageError(`${hw} has no hostid, and its hostnqn holds no UUID.`, {
              hint: 'Add "hostid" to the host in config.json, then import again.',
            });
          }
        }
        await addEntry(out, raw, where, etc);
      }
    }
  }
  return out;
}

/** " at line L, column C" for a JSON.parse error, from the offset it reports ("" when none). */
function jsonErrorPlace(text: string, err: unknown): string {
  const m = /position (\d+)/.exec((err as Error)?.message ?? "");
  if (!m) return "";
  const before = text.slice(0, Number(m[1])).split("\n");
  return ` at line ${before.length}, column ${before[before.length - 1].length + 1}`;
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

/** The discovery controllers of nvme-cli's discovery.conf, ready to connect. */
export interface DiscoveryConfControllers {
  file: string;
  controllers: ConnectOptions[];
  notes: string[];
}

/**
 * What `nvme discover` and `nvme connect-all` without -a read: every line of `<etcNvme>/
 * discovery.conf`, each a set of nvme-cli flags; the host identity fills in what a line lacks,
 * and inline keys stay in memory. Undefined when the file does not exist.
 */
export async function discoveryConfControllers(
  etcNvme: string,
  host: { hostnqn: string; hostid: string },
): Promise<DiscoveryConfControllers | undefined> {
  const file = `${etcNvme}/discovery.conf`;
  const text = readNvmeCliFile(file);
  if (text === undefined) return undefined;
  const r = await importDiscoveryConf(text, `'${file}'`, host, "/nonexistent");
  return { file, ...await inMemory(r) };
}

/**
 * The connect options of an import, its inline keys kept in memory instead of key files (for
 * connecting from nvme-cli's files as they are, without saving anything).
 */
async function inMemory(
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

/**
 * What `nvme connect -J FILE` connects: every I/O controller of a libnvme config.json (its
 * discovery controllers are left to connect-all, and reported), inline keys kept in memory.
 */
export async function configJsonControllers(
  file: string,
): Promise<{ controllers: ConnectOptions[]; notes: string[] }> {
  const text = readNvmeCliFile(file);
  if (text === undefined) {
    throw new UsageError(`-J/--config '${file}' does not exist.`, {
      hint: "Give libnvme's JSON configuration (nvme config --dump, or nvmeof connect -O).",
    });
  }
  const r = await inMemory(await importConfigJson(text, `'${file}'`, "/nonexistent"));
  const io = r.controllers.filter((c) => c.nqn !== DISCOVERY_NQN);
  const skipped = r.controllers.length - io.length;
  return {
    controllers: io,
    notes: skipped
      ? [...r.notes, `${skipped} discovery controller(s) left to 'nvmeof connect-all'.`]
      : r.notes,
  };
}

/**
 * libnvme's config.json for connections (what `nvme connect -O` prints): hosts, their
 * subsystems, their ports with the table's config.json keys. Secrets are never written (libnvme
 * writes dhchap_key inline; nvmeof's output is for anyone to read).
 */
export function configJsonOf(list: ConnectOptions[]): unknown[] {
  const hosts: Array<
    { hostnqn: string; hostid: string; subsystems: Array<{ nqn: string; ports: unknown[] }> }
  > = [];
  for (const o of list) {
    let h = hosts.find((h) => h.hostnqn === o.hostnqn && h.hostid === o.hostid);
    if (!h) hosts.push(h = { hostnqn: o.hostnqn ?? "", hostid: o.hostid ?? "", subsystems: [] });
    let s = h.subsystems.find((s) => s.nqn === o.nqn);
    if (!s) h.subsystems.push(s = { nqn: o.nqn, ports: [] });
    const port: Record<string, unknown> = {
      transport: o.transport,
      traddr: o.traddr,
      trsvcid: o.trsvcid,
      ...(o.hostTraddr !== undefined ? { host_traddr: o.hostTraddr } : {}),
    };
    for (const r of CONNECT_OPTIONS) {
      if (r.kind.type === "secret-file" || !isSet(r, o[r.field])) continue;
      port[r.nvmeCli] = o[r.field];
    }
    s.ports.push(port);
  }
  return hosts;
}

/** discoveryConfControllers for a command given no -a: a missing or empty file is a usage error. */
export async function requireDiscoveryConf(
  etcNvme: string,
  host: { hostnqn: string; hostid: string },
): Promise<DiscoveryConfControllers> {
  const conf = await discoveryConfControllers(etcNvme, host);
  const example = "--transport=rdma --traddr=10.0.0.2 --trsvcid=4420";
  if (conf === undefined) {
    throw new UsageError(
      `The target address is missing, and there is no '${etcNvme}/discovery.conf' to read.`,
      {
        hint: `Give it with -a/--traddr (e.g. -a 10.0.0.2), or list discovery controllers in ` +
          `${etcNvme}/discovery.conf, one line of nvme-cli flags each: ${example}`,
      },
    );
  }
  if (conf.controllers.length === 0) {
    throw new UsageError(`'${conf.file}' lists no discovery controller.`, {
      hint: `Add a line of nvme-cli flags, e.g. ${example}, or give -a/--traddr.`,
    });
  }
  return conf;
}
