/**
 * libnvme's /etc/nvme/config.json: hosts, each with subsystems, each with ports. libnvme writes
 * a top-level array of hosts; its schema also describes `{"hosts": [...]}`; both are read.
 * Imported as saved connections, connected as it is (`connect -J`), and written (`connect -O`).
 */
import { UsageError } from "../errors.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { type ConnectOptions, isSet } from "../fabrics/connect_options.ts";
import { CONNECT_OPTIONS } from "../fabrics/connect_table.ts";
import {
  addEntry,
  type ImportResult,
  INLINE_SECRET,
  inMemory,
  readNvmeCliFile,
} from "./nvme_cli_import.ts";

/** config.json port key → raw entry key: the address keys and every table row's nvme-cli key. */
const PORT_KEYS: Record<string, string> = {
  transport: "transport",
  traddr: "traddr",
  trsvcid: "trsvcid",
  host_traddr: "host_traddr",
  ...Object.fromEntries(
    CONNECT_OPTIONS.flatMap((r) =>
      r.nvmeCli ? [[r.nvmeCli, INLINE_SECRET[r.field] ?? r.saved]] : []
    ),
  ),
};

/** Parses libnvme's config.json text. */
export function importConfigJson(
  text: string,
  source: string,
  etc: string,
): ImportResult {
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
        addEntry(out, raw, where, etc);
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
  const r = await inMemory(importConfigJson(text, `'${file}'`, "/nonexistent"));
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
      if (r.kind.type === "secret-file" || !r.nvmeCli || !isSet(r, o[r.field])) continue;
      port[r.nvmeCli] = o[r.field];
    }
    s.ports.push(port);
  }
  return hosts;
}
