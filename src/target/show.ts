/**
 * The live tree in the spec's shape, so that `target show` output fed to `target up` changes
 * nothing (round trip), and conversions to and from nvmetcli's saved JSON. Secrets never appear.
 */
import type { LiveTree } from "../configfs/nvmet.ts";
import { FailureError } from "../errors.ts";
import { InputError, readInputText } from "../input.ts";
import { parseSpecText } from "./spec.ts";
import { SUBSYSTEM_ATTRS } from "../configfs/nvmet.ts";

const ZERO = /^[0-]*$/;

/** The live tree as a spec document (plain data, ready for YAML or JSON). */
export function treeToSpec(tree: LiveTree): Record<string, unknown> {
  const hosts = tree.hosts.map((h) => ({ nqn: h.nqn }));
  const subsystems = tree.subsystems.map((s) => {
    const out: Record<string, unknown> = {
      nqn: s.nqn,
      allow_any_host: s.attr.allow_any_host === "1",
    };
    if (s.allowed_hosts.length) out.hosts = s.allowed_hosts;
    for (const k of ["serial", "model"] as const) if (s.attr[k]) out[k] = s.attr[k];
    out.namespaces = s.namespaces.map((n) => {
      const ns: Record<string, unknown> = { nsid: n.nsid, device: n.device_path };
      if (n.device_uuid && !ZERO.test(n.device_uuid)) ns.uuid = n.device_uuid;
      if (n.device_nguid && !ZERO.test(n.device_nguid)) ns.nguid = n.device_nguid;
      if (n.buffered_io === "1") ns.buffered_io = true;
      ns.enabled = n.enable;
      return ns;
    });
    return out;
  });
  const ports = tree.ports.map((p) => {
    const a = p.attr;
    const out: Record<string, unknown> = { id: p.id };
    if (a.addr_trtype) out.trtype = a.addr_trtype;
    if (a.addr_adrfam) out.adrfam = a.addr_adrfam;
    if (a.addr_traddr) out.traddr = a.addr_traddr;
    if (a.addr_trsvcid) out.trsvcid = Number(a.addr_trsvcid);
    if (a.addr_treq && a.addr_treq !== "not specified") out.treq = a.addr_treq;
    if (a.addr_tsas && a.addr_trtype === "tcp" && a.addr_tsas !== "none") out.tsas = a.addr_tsas;
    if (a.param_inline_data_size && a.param_inline_data_size !== "-1") {
      out.inline_data_size = Number(a.param_inline_data_size);
    }
    if (a.param_max_queue_size && a.param_max_queue_size !== "-1") {
      out.max_queue_size = Number(a.param_max_queue_size);
    }
    if (a.param_pi_enable === "1") out.pi_enable = true;
    out.subsystems = p.subsystems;
    return out;
  });
  return { hosts, subsystems, ports };
}

/** The live tree as nvmetcli's saved JSON (`nvmetcli save`: nvmetcli's nvmet/nvme.py Root.dump), without secrets. */
export function treeToNvmetcli(tree: LiveTree): Record<string, unknown> {
  return {
    hosts: tree.hosts.map((h) => ({ nqn: h.nqn })),
    ports: tree.ports.map((p) => {
      const addr: Record<string, string> = {};
      const param: Record<string, string> = {};
      for (const [f, v] of Object.entries(p.attr)) {
        if (f.startsWith("addr_")) addr[f.slice(5)] = v;
        else if (f.startsWith("param_")) param[f.slice(6)] = v;
      }
      return { portid: p.id, addr, param, referrals: [], subsystems: p.subsystems };
    }),
    subsystems: tree.subsystems.map((s) => ({
      nqn: s.nqn,
      attr: Object.fromEntries(
        ["allow_any_host", ...SUBSYSTEM_ATTRS].filter((k) => s.attr[k] !== undefined).map((
          k,
        ) => [k, s.attr[k]]),
      ),
      allowed_hosts: s.allowed_hosts,
      namespaces: s.namespaces.map((n) => ({
        nsid: n.nsid,
        enable: n.enable ? 1 : 0,
        device: { path: n.device_path, uuid: n.device_uuid, nguid: n.device_nguid },
      })),
    })),
  };
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A mapping's field when the mapping is one, else undefined. */
function field(o: unknown, key: string): unknown {
  return isObj(o) ? o[key] : undefined;
}

/** A non-empty string field, else undefined (values of other types are not ours to convert). */
function text(o: unknown, key: string): string | undefined {
  const v = field(o, key);
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** nvmetcli's numbers are strings ("4420"); numbers pass too. */
function numberish(v: unknown): unknown {
  return typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
}

/**
 * Converts nvmetcli's saved JSON into a spec document, for validateSpec to judge: what is not a
 * mapping where nvmetcli writes one is passed on as it is, so that the spec's own checks name it.
 * Passthru subsystems and referrals are left out with a note.
 */
export function nvmetcliToSpec(data: unknown): { spec: Record<string, unknown>; notes: string[] } {
  const notes: string[] = [];
  const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const hosts = arr(field(data, "hosts")).map((h, i) => {
    if (!isObj(h)) return h;
    if (field(h.dhchap, "key")) {
      notes.push(
        `hosts[${i}] has a DH-HMAC-CHAP key; put it in a 0600 file and set dhchap_key_file.`,
      );
    }
    return { nqn: h.nqn };
  });
  const subsystems = arr(field(data, "subsystems")).map((s, i) => {
    if (!isObj(s)) return s;
    if (arr(s.passthru).length || (s.passthru && !Array.isArray(s.passthru))) {
      notes.push(
        `subsystems[${i}] has passthru settings, which nvmeof does not manage; they were left out.`,
      );
    }
    const out: Obj = { nqn: s.nqn, allow_any_host: field(s.attr, "allow_any_host") === "1" };
    if (arr(s.allowed_hosts).length) out.hosts = s.allowed_hosts;
    for (const k of ["serial", "model", "version", "firmware"]) {
      const v = text(s.attr, k);
      if (v) out[k] = v;
    }
    out.namespaces = arr(s.namespaces).map((n) => {
      if (!isObj(n)) return n;
      const ns: Obj = { nsid: numberish(n.nsid), device: field(n.device, "path") };
      const uuid = text(n.device, "uuid");
      if (uuid && !ZERO.test(uuid)) ns.uuid = uuid;
      const nguid = text(n.device, "nguid");
      if (nguid && !ZERO.test(nguid)) ns.nguid = nguid;
      ns.enabled = n.enable === 1 || n.enable === "1" || n.enable === true;
      return ns;
    });
    return out;
  });
  const ports = arr(field(data, "ports")).map((p, i) => {
    if (!isObj(p)) return p;
    if (arr(p.referrals).length) {
      notes.push(`ports[${i}] has referrals, which nvmeof does not manage; they were left out.`);
    }
    const out: Obj = { id: numberish(p.portid) };
    const addr = (k: string) => field(p.addr, k);
    const param = (k: string) => field(p.param, k);
    for (const k of ["trtype", "adrfam", "traddr"]) if (addr(k)) out[k] = addr(k);
    if (addr("trsvcid")) out.trsvcid = numberish(addr("trsvcid"));
    if (addr("treq") && addr("treq") !== "not specified") out.treq = addr("treq");
    if (addr("tsas") && addr("trtype") === "tcp" && addr("tsas") !== "none") {
      out.tsas = addr("tsas");
    }
    for (const k of ["inline_data_size", "max_queue_size"]) {
      if (param(k) && param(k) !== "-1") out[k] = numberish(param(k));
    }
    if (param("pi_enable") === "1") out.pi_enable = true;
    out.subsystems = p.subsystems ?? [];
    return out;
  });
  return { spec: { hosts, subsystems, ports }, notes };
}

/**
 * Reads and parses nvmetcli's saved JSON (YAML's parser reads it, with the spec's guards). Throws
 * FailureError when the file cannot be read, SpecError when it cannot be parsed.
 */
export async function loadNvmetcliFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = readInputText(file);
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new FailureError(
      `Cannot read '${file}': ${
        err instanceof Deno.errors.NotFound ? "it does not exist" : (err as Error).message
      }.`,
      { cause: err, hint: "Check the path (nvmetcli keeps it in /etc/nvmet/config.json)." },
    );
  }
  return await parseSpecText(text, `'${file}'`);
}
