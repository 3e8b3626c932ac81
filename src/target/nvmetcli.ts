/**
 * nvmetcli's saved configuration (`nvmetcli save`, /etc/nvmet/config.json): the live tree written
 * in it (`target show -o nvmetcli`), and a file of it converted into a spec (`target import`).
 * Secrets never appear: inline DH-HMAC-CHAP keys of an imported file move to key files.
 */
import { DEFAULT_ANA_GROUP, type LiveTree, SUBSYSTEM_ATTRS } from "../configfs/nvmet.ts";
import { FailureError } from "../errors.ts";
import { InputError, readInputText } from "../input.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { hexOf, sha256 } from "../sha256.ts";
import { ZERO } from "./show.ts";
import { parseSpecText, validateSpec } from "./spec.ts";

/** An object with its keys in code-point order at every level, as nvmetcli (sort_keys) saves. */
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isObj(v)) return v;
  return Object.fromEntries(
    Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]),
  );
}

/** `<group>_<name>` attributes as nvmetcli's `{"<group>": {"<name>": "…"}}` (values trimmed). */
function group(attr: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [f, v] of Object.entries(attr)) {
    if (f.startsWith(`${prefix}_`)) out[f.slice(prefix.length + 1)] = v.trim();
  }
  return out;
}

/**
 * The live tree as nvmetcli's saved JSON (`nvmetcli save`: nvmetcli's nvmet/nvme.py Root.dump): the same keys, groups
 * and values nvmetcli writes for this tree, keys sorted, lists in id/name order. DH-HMAC-CHAP
 * keys are left out (secrets never appear); everything else nvmetcli saves is here.
 */
export function treeToNvmetcli(tree: LiveTree): Record<string, unknown> {
  return sortKeys({
    discovery: tree.discovery_nqn !== undefined ? { nqn: tree.discovery_nqn } : {},
    hosts: tree.hosts.map((h) => {
      const dhchap: Record<string, string> = {};
      if (h.dhchap_hash !== undefined) dhchap.hash = h.dhchap_hash;
      if (h.dhchap_dhgroup !== undefined) dhchap.dhgroup = h.dhchap_dhgroup;
      return { nqn: h.nqn, dhchap };
    }),
    ports: tree.ports.map((p) => ({
      portid: p.id,
      addr: group(p.attr, "addr"),
      param: group(p.attr, "param"),
      subsystems: p.subsystems,
      ana_groups: (p.ana_groups ?? []).map((g) => ({ grpid: g.id, ana: { state: g.state } })),
      referrals: (p.referrals ?? []).map((r) => ({
        name: r.name,
        addr: group(r.attr, "addr"),
        enable: r.enable ? 1 : 0,
      })),
    })),
    subsystems: tree.subsystems.map((s) => ({
      nqn: s.nqn,
      attr: Object.fromEntries(Object.entries(s.attr).map(([k, v]) => [k, v.trim()])),
      allowed_hosts: s.allowed_hosts,
      namespaces: s.namespaces.map((n) => {
        const device: Record<string, string> = { path: n.device_path };
        if (n.device_uuid) device.uuid = n.device_uuid;
        if (n.device_nguid) device.nguid = n.device_nguid;
        const out: Record<string, unknown> = {
          nsid: n.nsid,
          enable: n.enable ? 1 : 0,
          device,
          ana: n.ana_grpid !== undefined ? { grpid: n.ana_grpid } : {},
          resv: n.resv_enable !== undefined ? { enable: n.resv_enable } : {},
        };
        // nvmetcli writes ana_grpid always: 0 when the kernel has no ANA.
        out.ana_grpid = n.ana_grpid !== undefined ? Number(n.ana_grpid) : 0;
        return out;
      }),
    })),
  }) as Record<string, unknown>;
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

/** A DH-HMAC-CHAP secret found inline in nvmetcli's file, to be written to a key file. */
export interface ImportedKeyFile {
  path: string;
  secret: string;
}

/** What converting nvmetcli's file gave. */
export interface NvmetcliImport {
  /** The spec document, for validateSpec to judge. */
  spec: Record<string, unknown>;
  /** What was changed on the way (keys moved to files), one sentence each. */
  notes: string[];
  /** Fields of the file the spec cannot carry, each named: the import is not faithful. */
  warnings: string[];
  /** Inline keys to write, mode 0600, before the spec is used. */
  keyFiles: ImportedKeyFile[];
}

/** Options of nvmetcliToSpec. */
export interface NvmetcliImportOptions {
  /** Where inline DH-HMAC-CHAP keys go: `<keyDir>/target-host-<hash>[-ctrl].key`. */
  keyDir: string;
}

// nvmetcli's keys that the conversion reads, per object; anything else is named in a warning.
const KNOWN = {
  top: ["hosts", "ports", "subsystems", "discovery"],
  host: ["nqn", "dhchap"],
  dhchap: ["key", "ctrl_key", "hash", "dhgroup"],
  subsystem: ["nqn", "attr", "allowed_hosts", "namespaces", "passthru"],
  attr: ["allow_any_host", ...SUBSYSTEM_ATTRS],
  namespace: ["nsid", "enable", "device", "ana", "ana_grpid", "resv"],
  device: ["path", "uuid", "nguid"],
  port: ["portid", "addr", "param", "subsystems", "ana_groups", "referrals"],
  addr: ["trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas"],
  param: ["inline_data_size", "max_queue_size", "pi_enable"],
  anaGroup: ["grpid", "ana"],
  referral: ["name", "addr", "enable"],
  referralAddr: ["trtype", "adrfam", "traddr", "trsvcid", "treq", "portid"],
};

/** The hex name part of a host's key files: the same host always gets the same file. */
function keyFileStem(nqn: string): string {
  return hexOf(sha256(nqn).subarray(0, 6));
}

/**
 * Converts nvmetcli's saved JSON into a spec document, for validateSpec to judge: what is not a
 * mapping where nvmetcli writes one is passed on as it is, so that the spec's own checks name it.
 * Every field is carried, or named in a warning: passthru subsystems, a discovery NQN of its own
 * and keys nvmetcli does not write. Inline DH-HMAC-CHAP keys become key files (keyFiles).
 * Normalisation: values nvmetcli writes as text become numbers or booleans; empty values (a loop
 * port's address), an all-zero NGUID and the default state of ANA group 1 are left out.
 */
export function nvmetcliToSpec(
  data: unknown,
  options: NvmetcliImportOptions,
): NvmetcliImport {
  const notes: string[] = [];
  const warnings: string[] = [];
  const keyFiles: ImportedKeyFile[] = [];
  const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const unknownKeys = (o: unknown, known: string[], where: string) => {
    if (!isObj(o)) return;
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) {
        warnings.push(`${where}.${k} is not carried: nvmeof's spec has no such setting.`);
      }
    }
  };
  unknownKeys(data, KNOWN.top, "(top level)");
  const discovery = field(field(data, "discovery"), "nqn");
  unknownKeys(field(data, "discovery"), ["nqn"], "discovery");
  if (typeof discovery === "string" && discovery !== "" && discovery !== DISCOVERY_NQN) {
    warnings.push(
      `discovery.nqn '${discovery}' is not carried: nvmeof does not set the discovery NQN ` +
        "(write it to /sys/kernel/config/nvmet/discovery_nqn yourself).",
    );
  }

  const hosts: unknown[] = [];
  for (const [i, h] of arr(field(data, "hosts")).entries()) {
    if (!isObj(h)) {
      hosts.push(h);
      continue;
    }
    unknownKeys(h, KNOWN.host, `hosts[${i}]`);
    unknownKeys(h.dhchap, KNOWN.dhchap, `hosts[${i}].dhchap`);
    const out: Obj = { nqn: h.nqn };
    const key = text(h.dhchap, "key");
    const ctrl = text(h.dhchap, "ctrl_key");
    const stem = typeof h.nqn === "string" ? keyFileStem(h.nqn) : String(i);
    for (
      const [secret, suffix, specKey] of [[key, "", "dhchap_key_file"], [
        ctrl,
        "-ctrl",
        "dhchap_ctrl_key_file",
      ]]
    ) {
      if (!secret) continue;
      const path = `${options.keyDir}/target-host-${stem}${suffix}.key`;
      keyFiles.push({ path, secret: secret.trim() });
      out[specKey as string] = path;
      notes.push(`hosts[${i}].dhchap.${suffix ? "ctrl_key" : "key"} moved to ${path} (mode 0600).`);
    }
    // The hash and group matter only with a key; without one they are the kernel's defaults.
    const hash = text(h.dhchap, "hash");
    const dhgroup = text(h.dhchap, "dhgroup");
    if (key || (hash && hash !== "hmac(sha256)")) {
      if (hash) out.dhchap_hash = hash;
    }
    if (key || (dhgroup && dhgroup !== "null")) {
      if (dhgroup) out.dhchap_dhgroup = dhgroup;
    }
    hosts.push(out);
  }

  const subsystems = arr(field(data, "subsystems")).map((s, i) => {
    if (!isObj(s)) return s;
    const where = `subsystems[${i}]`;
    unknownKeys(s, KNOWN.subsystem, where);
    unknownKeys(s.attr, KNOWN.attr, `${where}.attr`);
    if (arr(s.passthru).length || (s.passthru && !Array.isArray(s.passthru))) {
      warnings.push(
        `${where}.passthru is not carried: nvmeof does not manage passthru subsystems.`,
      );
    }
    const out: Obj = { nqn: s.nqn, allow_any_host: field(s.attr, "allow_any_host") === "1" };
    if (arr(s.allowed_hosts).length) out.hosts = s.allowed_hosts;
    for (const k of ["serial", "model", "version", "firmware", "ieee_oui"]) {
      const v = text(s.attr, k);
      if (v) out[k] = v;
    }
    for (const k of ["cntlid_min", "cntlid_max", "qid_max"]) {
      const v = field(s.attr, k);
      if (v !== undefined && v !== "") out[k] = numberish(v);
    }
    const pi = field(s.attr, "pi_enable");
    if (pi !== undefined && pi !== "") out.pi_enable = pi === "1" || pi === 1 || pi === true;
    out.namespaces = arr(s.namespaces).map((n, j) => {
      if (!isObj(n)) return n;
      const nwhere = `${where}.namespaces[${j}]`;
      unknownKeys(n, KNOWN.namespace, nwhere);
      unknownKeys(n.device, KNOWN.device, `${nwhere}.device`);
      unknownKeys(n.ana, ["grpid"], `${nwhere}.ana`);
      unknownKeys(n.resv, ["enable"], `${nwhere}.resv`);
      const ns: Obj = { nsid: numberish(n.nsid), device: field(n.device, "path") };
      const uuid = text(n.device, "uuid");
      if (uuid && !ZERO.test(uuid)) ns.uuid = uuid;
      const nguid = text(n.device, "nguid");
      if (nguid && !ZERO.test(nguid)) ns.nguid = nguid;
      // nvmetcli writes the group twice: ana.grpid (text) and ana_grpid (a number, 0 without ANA).
      const g1 = numberish(field(n.ana, "grpid"));
      const g2 = numberish(n.ana_grpid);
      if (g1 !== undefined && g2 !== undefined && g2 !== 0 && g1 !== g2) {
        warnings.push(
          `${nwhere}: ana.grpid ${JSON.stringify(field(n.ana, "grpid"))} and ana_grpid ` +
            `${JSON.stringify(n.ana_grpid)} disagree; ana_grpid ${JSON.stringify(n.ana_grpid)} ` +
            "was used (nvmetcli restore writes it last).",
        );
      }
      const grp = g2 !== undefined && g2 !== 0 ? g2 : g1;
      if (grp !== undefined && grp !== 0 && grp !== DEFAULT_ANA_GROUP) ns.ana_grpid = grp;
      const resv = field(n.resv, "enable");
      if (resv === "1" || resv === 1) ns.resv_enable = true;
      ns.enabled = n.enable === 1 || n.enable === "1" || n.enable === true;
      return ns;
    });
    return out;
  });

  const ports = arr(field(data, "ports")).map((p, i) => {
    if (!isObj(p)) return p;
    const where = `ports[${i}]`;
    unknownKeys(p, KNOWN.port, where);
    unknownKeys(p.addr, KNOWN.addr, `${where}.addr`);
    unknownKeys(p.param, KNOWN.param, `${where}.param`);
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
    const groups: Obj[] = [];
    for (const [j, g] of arr(p.ana_groups).entries()) {
      if (!isObj(g)) {
        groups.push(g as Obj);
        continue;
      }
      unknownKeys(g, KNOWN.anaGroup, `${where}.ana_groups[${j}]`);
      unknownKeys(g.ana, ["state"], `${where}.ana_groups[${j}].ana`);
      const id = numberish(g.grpid);
      const state = field(g.ana, "state");
      if (id === DEFAULT_ANA_GROUP && (state === undefined || state === "optimized")) continue;
      groups.push(state === undefined ? { id } : { id, state });
    }
    if (groups.length) out.ana_groups = groups;
    const referrals = arr(p.referrals).map((r, j) => {
      if (!isObj(r)) return r;
      unknownKeys(r, KNOWN.referral, `${where}.referrals[${j}]`);
      unknownKeys(r.addr, KNOWN.referralAddr, `${where}.referrals[${j}].addr`);
      const ra = (k: string) => field(r.addr, k);
      const ref: Obj = { name: r.name };
      for (const k of ["trtype", "adrfam", "traddr"]) if (ra(k)) ref[k] = ra(k);
      if (ra("trsvcid")) ref.trsvcid = numberish(ra("trsvcid"));
      if (ra("portid") && ra("portid") !== "0") ref.portid = numberish(ra("portid"));
      if (ra("treq") && ra("treq") !== "not specified") ref.treq = ra("treq");
      if (!(r.enable === 1 || r.enable === "1" || r.enable === true)) ref.enabled = false;
      return ref;
    });
    if (referrals.length) out.referrals = referrals;
    return out;
  });
  return { spec: { hosts, subsystems, ports }, notes, warnings, keyFiles };
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

/**
 * `target import`: reads nvmetcli's file and returns the spec document it converts into, after
 * checking it as a spec (without looking at devices or key files). What is left out is noted.
 */
export async function importNvmetcliFile(
  file: string,
  options: { note: (line: string) => void; keyDir: string; dryRun?: boolean },
): Promise<{ spec: Record<string, unknown>; keyFiles: string[] }> {
  const raw = await loadNvmetcliFile(file);
  const { spec, notes, warnings, keyFiles } = nvmetcliToSpec(raw, options);
  for (const w of warnings) options.note(`warning: ${w}`);
  validateSpec(spec, { checkFiles: false, source: `converted from '${file}'` });
  // Key files only once the spec is good: a refused import leaves nothing behind.
  for (const n of notes) options.note(`note: ${options.dryRun ? `(dry run) ${n}` : n}`);
  if (!options.dryRun) {
    for (const k of keyFiles) {
      await Deno.mkdir(k.path.slice(0, k.path.lastIndexOf("/")), { recursive: true, mode: 0o700 });
      await Deno.writeTextFile(k.path, k.secret + "\n", { mode: 0o600 });
      await Deno.chmod(k.path, 0o600);
    }
  }
  return { spec, keyFiles: keyFiles.map((k) => k.path) };
}
