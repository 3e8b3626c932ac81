/**
 * The target spec: what `nvmeof target up` makes configfs look like. Parsed from YAML (or JSON)
 * and validated completely before anything is written; every problem names its spec path
 * (`subsystems[0].namespaces[1].device`) and the fix.
 */
import { fileKind } from "../configfs/native.ts";
import { readKeyFile } from "../fabrics/options.ts";
import { FailureError, quote, quoteName, redactSecrets } from "../errors.ts";
import { InputError, readInputText } from "../input.ts";
import { isIpv4, isIpv6 } from "../net/address.ts";
import { DISCOVERY_NQN, NQN_MAX_BYTES } from "../fabrics/nqn.ts";
import { NQN_PATTERN, SPEC_TOP_KEYS, specEnum, specKeys, specRange } from "./schema.ts";

// The key lists, ranges and allowed values below come from the definitions in schema.ts, which
// `nvmeof target schema` prints: the validator and the schema cannot drift apart.

/** A host NQN and its DH-HMAC-CHAP settings. */
export interface HostSpec {
  nqn: string;
  /** File holding the host's DH-HMAC-CHAP secret (`DHHC-1:…`), mode 0600 or stricter. */
  dhchap_key_file?: string;
  /** File holding the controller's secret, for bidirectional authentication. */
  dhchap_ctrl_key_file?: string;
  dhchap_hash?: string;
  dhchap_dhgroup?: string;
}

/** A namespace of a subsystem. */
export interface NamespaceSpec {
  nsid: number;
  device: string;
  uuid?: string;
  nguid?: string;
  /** Use the page cache for a file-backed namespace (needed on file systems without O_DIRECT, e.g. tmpfs). */
  buffered_io?: boolean;
  enabled: boolean;
}

/** A subsystem. */
export interface SubsystemSpec {
  nqn: string;
  allow_any_host: boolean;
  hosts: string[];
  serial?: string;
  model?: string;
  version?: string;
  firmware?: string;
  ieee_oui?: string;
  cntlid_min?: number;
  cntlid_max?: number;
  namespaces: NamespaceSpec[];
}

/** A port: one transport address and the subsystems reachable through it. */
export interface PortSpec {
  id: number;
  trtype: "rdma" | "tcp" | "loop";
  adrfam?: "ipv4" | "ipv6" | "ib" | "fc";
  traddr?: string;
  trsvcid?: string;
  subsystems: string[];
  inline_data_size?: number;
  max_queue_size?: number;
  pi_enable?: boolean;
  tsas?: string;
  treq?: string;
}

/** A whole, validated spec. */
export interface TargetSpec {
  hosts: HostSpec[];
  subsystems: SubsystemSpec[];
  ports: PortSpec[];
}

/** One thing wrong with a spec. */
export interface SpecProblem {
  /** Where: `subsystems[0].namespaces[1].device`, or `line 3, column 5` for syntax. */
  path: string;
  message: string;
  fix: string;
}

/** How many problems a SpecError's message lists; the rest are counted. */
export const PROBLEMS_SHOWN = 20;

/**
 * The spec is invalid; nothing was written (exit 1). Keeps every problem found; its message lists
 * the first PROBLEMS_SHOWN and counts the rest.
 */
export class SpecError extends FailureError {
  readonly problems: SpecProblem[];

  constructor(source: string, problems: SpecProblem[]) {
    const n = problems.length;
    const shown = problems.slice(0, PROBLEMS_SHOWN);
    const more = n - shown.length;
    super(
      `Invalid target spec ${source}: ${n} problem${n === 1 ? "" : "s"}; nothing was changed.\n` +
        shown.map((p) => `  ${p.path}: ${p.message} Fix: ${p.fix}`).join("\n") +
        (more ? `\n  … and ${more} more problem${more === 1 ? "" : "s"} of the same kinds.` : ""),
    );
    this.problems = problems;
  }
}

/** "a, b or c" for messages. */
function orList(values: string[], quote = false): string {
  const v = values.map((x) => (quote ? `'${x}'` : x));
  return v.length < 2 ? v.join("") : `${v.slice(0, -1).join(", ")} or ${v[v.length - 1]}`;
}

/** Returns why `nqn` is not a usable NQN, or undefined when it is. */
export function nqnProblem(nqn: string): string | undefined {
  const bytes = new TextEncoder().encode(nqn).length;
  if (bytes === 0) return "is empty.";
  if (bytes > NQN_MAX_BYTES) {
    return `is ${bytes} bytes long; Linux hosts accept at most ${NQN_MAX_BYTES}.`;
  }
  if (nqn === DISCOVERY_NQN) return "is the discovery NQN, which no subsystem or host may use.";
  if (nqn.includes("/")) return "contains '/', which cannot be a configfs directory name.";
  // deno-lint-ignore no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(nqn)) return "contains whitespace or control characters.";
  if (!new RegExp(NQN_PATTERN, "u").test(nqn)) {
    return "is not of the form nqn.<yyyy-mm>.<reverse-domain>[:<name>].";
  }
  return undefined;
}

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** NGUID text to 32 lowercase hex digits, or undefined if malformed. */
export function normalizeNguid(s: string): string | undefined {
  const hex = s.replace(/[-:]/g, "").toLowerCase();
  return /^[0-9a-f]{32}$/.test(hex) ? hex : undefined;
}

/**
 * Parses YAML or JSON text; syntax errors carry line and column. The YAML library is loaded here,
 * on first use, not at start-up: it is most of the program's start time otherwise.
 */
export async function parseSpecText(text: string, source: string): Promise<unknown> {
  const { parseDocument } = await import("yaml");
  // logLevel "error": a warning (a mapping used as a key) must not reach stderr; the key then
  // fails validation as unknown.
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, logLevel: "error" });
  if (doc.errors.length) {
    throw new SpecError(
      source,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        return {
          path: pos ? `line ${pos.line}, column ${pos.col}` : "document",
          message: redactSecrets(
            e.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, ""),
          ) + ".",
          fix: "Correct the YAML (or JSON) syntax there.",
        };
      }),
    );
  }
  const rest = text.slice(doc.range[2]);
  if (rest.split("\n").some((l) => !/^\s*(#.*)?$/.test(l))) {
    const line = text.slice(0, doc.range[2]).split("\n").length;
    throw new SpecError(source, [{
      path: `line ${line}`,
      message: "follows the end of the document ('...'); a spec is one document.",
      fix: "Remove what follows the end marker, or the marker itself: a spec is one document.",
    }]);
  }
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  } catch (err) {
    // toJS throws on what the parse lets through: an alias to no anchor, an alias bomb, a
    // mapping key it cannot turn into a string.
    throw new SpecError(source, [{
      path: "document",
      message: `cannot be read: ${quote((err as Error).message, 120)}.`,
      fix: err instanceof ReferenceError
        ? "Define each anchor (&name) before its aliases (*name), and use few aliases."
        : "Write keys as plain strings.",
    }]);
  }
}

/** Aliases a spec may use; more are refused (yaml's guard against alias bombs). */
const MAX_ALIAS_COUNT = 100;

type Obj = Record<string, unknown>;

/** Options for validation. */
export interface ValidateOptions {
  /** Check that devices and key files exist with the right kinds and modes (default true). */
  checkFiles?: boolean;
  /** Where the spec came from, for messages. */
  source?: string;
}

/** Validates raw parsed data into a TargetSpec, or throws SpecError listing every problem. */
export function validateSpec(raw: unknown, options: ValidateOptions = {}): TargetSpec {
  const checkFiles = options.checkFiles ?? true;
  const problems: SpecProblem[] = [];
  const bad = (path: string, message: string, fix: string) => problems.push({ path, message, fix });

  const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
  const keys = (o: Obj, path: string, known: string[]) => {
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) {
        bad(
          path ? `${path}.${quoteName(k)}` : quoteName(k),
          `is not a known key.`,
          `Remove it; known keys: ${known.join(", ")}.`,
        );
      }
    }
  };
  const list = (o: Obj, key: string, path: string): unknown[] => {
    const v = o[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      bad(path, `must be a list, not ${typeof v}.`, `Write it as a YAML list ('- …' items).`);
      return [];
    }
    return v;
  };
  const str = (v: unknown, path: string, what: string): string | undefined => {
    if (typeof v === "string" && v !== "") return v;
    if (typeof v === "number") return String(v);
    bad(
      path,
      v === undefined ? "is missing." : `must be a non-empty string, not ${quote(v)}.`,
      `Give ${what}.`,
    );
    return undefined;
  };
  const optStr = (o: Obj, key: string, path: string, what: string) =>
    o[key] === undefined ? undefined : str(o[key], `${path}.${key}`, what);
  const bool = (o: Obj, key: string, path: string, dflt: boolean): boolean => {
    const v = o[key];
    if (v === undefined) return dflt;
    if (typeof v === "boolean") return v;
    bad(`${path}.${key}`, `must be true or false, not ${quote(v)}.`, `Write true or false.`);
    return dflt;
  };
  const int = (
    v: unknown,
    path: string,
    min: number,
    max: number,
  ): number | undefined => {
    const n = typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v;
    if (typeof n === "number" && Number.isInteger(n) && n >= min && n <= max) return n;
    bad(
      path,
      v === undefined
        ? "is missing."
        : `must be an integer from ${min} to ${max}, not ${quote(v)}.`,
      `Give an integer from ${min} to ${max}.`,
    );
    return undefined;
  };
  const nqn = (v: unknown, path: string): string | undefined => {
    const s = str(v, path, "an NQN such as nqn.2026-10.com.example:storage-1");
    if (s === undefined) return undefined;
    const why = nqnProblem(s);
    if (why) {
      bad(
        path,
        `NQN ${quote(s)} ${why}`,
        `Use an NQN like nqn.2026-10.com.example:storage-1 (at most ${NQN_MAX_BYTES} bytes).`,
      );
      return undefined;
    }
    return s;
  };
  const printable = (o: Obj, key: string, path: string, max: number) => {
    const s = optStr(o, key, path, `1 to ${max} printable ASCII characters`);
    if (s !== undefined && !new RegExp(`^[\\x20-\\x7e]{1,${max}}$`).test(s)) {
      bad(
        `${path}.${key}`,
        `${quote(s)} must be 1 to ${max} printable ASCII characters (the kernel's limit).`,
        `Shorten it or remove other characters.`,
      );
      return undefined;
    }
    return s;
  };
  const dupes = (
    items: Array<[string, string | number | undefined]>,
    what: string,
    fix: string,
  ) => {
    const seen = new Map<string | number, string>();
    for (const [path, v] of items) {
      if (v === undefined) continue;
      const first = seen.get(v);
      if (first !== undefined) {
        bad(path, `duplicates ${what} ${quote(String(v))} of ${first}.`, fix);
      } else seen.set(v, path);
    }
  };
  /** A file path: refuses control characters (a NUL would cut the path the kernel sees). */
  const pathStr = (o: Obj, key: string, path: string, what: string): string | undefined => {
    const f = optStr(o, key, path, what);
    // deno-lint-ignore no-control-regex
    if (f !== undefined && /[\x00-\x1f\x7f]/.test(f)) {
      bad(
        `${path}.${key}`,
        `${quote(f)} contains a control character.`,
        "Write the path without NUL, newline or other control characters.",
      );
      return undefined;
    }
    return f;
  };
  const keyFile = (o: Obj, key: string, path: string): string | undefined => {
    const f = pathStr(o, key, path, "the path of a key file");
    if (f === undefined || !checkFiles) return f;
    const r = readKeyFile(f);
    if ("problem" in r) bad(`${path}.${key}`, r.problem.message, r.problem.fix);
    return f;
  };

  if (!isObj(raw)) {
    throw new SpecError(options.source ?? "", [{
      path: "document",
      message: "must be a mapping with hosts, subsystems and ports.",
      fix: "Start from the example in 'nvmeof target up --help'.",
    }]);
  }
  keys(raw, "", [...SPEC_TOP_KEYS]);

  // hosts
  const hosts: HostSpec[] = [];
  list(raw, "hosts", "hosts").forEach((h, i) => {
    const path = `hosts[${i}]`;
    if (typeof h === "string") {
      const n = nqn(h, path);
      if (n) hosts.push({ nqn: n });
      return;
    }
    if (!isObj(h)) return void bad(path, "must be a mapping with nqn.", "Write '- nqn: …'.");
    keys(h, path, specKeys("host"));
    const host: HostSpec = { nqn: nqn(h.nqn, `${path}.nqn`) ?? "" };
    const kf = keyFile(h, "dhchap_key_file", path);
    if (kf) host.dhchap_key_file = kf;
    const ckf = keyFile(h, "dhchap_ctrl_key_file", path);
    if (ckf) host.dhchap_ctrl_key_file = ckf;
    if (ckf && !kf) {
      bad(
        `${path}.dhchap_ctrl_key_file`,
        "is set without dhchap_key_file.",
        "Add the host key file too: bidirectional authentication needs both.",
      );
    }
    const hashes = specEnum("host", "dhchap_hash");
    const hash = optStr(h, "dhchap_hash", path, orList(hashes));
    if (hash && !hashes.includes(hash)) {
      bad(
        `${path}.dhchap_hash`,
        `${quote(hash)} is not a DH-HMAC-CHAP hash.`,
        `Use ${orList(hashes)}.`,
      );
    } else if (hash) host.dhchap_hash = hash;
    const groups = specEnum("host", "dhchap_dhgroup");
    const group = optStr(h, "dhchap_dhgroup", path, orList(groups));
    if (group && !groups.includes(group)) {
      bad(`${path}.dhchap_dhgroup`, `${quote(group)} is not a DH group.`, `Use ${orList(groups)}.`);
    } else if (group) host.dhchap_dhgroup = group;
    hosts.push(host);
  });
  dupes(
    hosts.map((h, i) => [`hosts[${i}].nqn`, h.nqn || undefined]),
    "host NQN",
    "List each host once.",
  );

  // subsystems
  const subsystems: SubsystemSpec[] = [];
  list(raw, "subsystems", "subsystems").forEach((s, i) => {
    const path = `subsystems[${i}]`;
    if (!isObj(s)) {
      return void bad(path, "must be a mapping with nqn and namespaces.", "Write '- nqn: …'.");
    }
    keys(s, path, specKeys("subsystem"));
    const sub: SubsystemSpec = {
      nqn: nqn(s.nqn, `${path}.nqn`) ?? "",
      allow_any_host: bool(s, "allow_any_host", path, false),
      hosts: [],
      namespaces: [],
    };
    list(s, "hosts", `${path}.hosts`).forEach((h, j) => {
      const n = nqn(h, `${path}.hosts[${j}]`);
      if (n) sub.hosts.push(n);
    });
    dupes(sub.hosts.map((h, j) => [`${path}.hosts[${j}]`, h]), "host", "List each host once.");
    if (sub.allow_any_host && sub.hosts.length) {
      bad(
        `${path}.allow_any_host`,
        "is true while hosts are listed; the kernel refuses both at once (EINVAL).",
        "Either remove the hosts list or set allow_any_host: false.",
      );
    }
    const serial = printable(s, "serial", path, 20);
    if (serial) sub.serial = serial;
    const model = printable(s, "model", path, 40);
    if (model) sub.model = model;
    const fw = printable(s, "firmware", path, 8);
    if (fw) sub.firmware = fw;
    const version = optStr(s, "version", path, "an NVMe version such as 1.3");
    if (version !== undefined) {
      if (/^\d+\.\d+(\.\d+)?$/.test(version)) sub.version = version;
      else {bad(
          `${path}.version`,
          `${quote(version)} is not an NVMe version.`,
          "Write X.Y or X.Y.Z, e.g. 1.3 or 2.0.",
        );}
    }
    if (s.ieee_oui !== undefined) {
      const raw = s.ieee_oui;
      const v = typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw : "";
      const n = /^(0x)?[0-9a-fA-F]{1,6}$/.test(v) ? parseInt(v.replace(/^0x/, ""), 16) : NaN;
      if (Number.isNaN(n)) {
        bad(`${path}.ieee_oui`, `${quote(raw)} is not a 24-bit hex OUI.`, "Write it as 0xABCDEF.");
      } else sub.ieee_oui = `0x${n.toString(16).padStart(6, "0")}`;
    }
    if (s.cntlid_min !== undefined) {
      sub.cntlid_min = int(
        s.cntlid_min,
        `${path}.cntlid_min`,
        ...specRange("subsystem", "cntlid_min"),
      );
    }
    if (s.cntlid_max !== undefined) {
      sub.cntlid_max = int(
        s.cntlid_max,
        `${path}.cntlid_max`,
        ...specRange("subsystem", "cntlid_max"),
      );
    }
    if (
      sub.cntlid_min !== undefined && sub.cntlid_max !== undefined &&
      sub.cntlid_min > sub.cntlid_max
    ) {
      bad(
        `${path}.cntlid_min`,
        `${sub.cntlid_min} is above cntlid_max ${sub.cntlid_max}.`,
        "Make cntlid_min ≤ cntlid_max.",
      );
    }
    list(s, "namespaces", `${path}.namespaces`).forEach((n, j) => {
      const npath = `${path}.namespaces[${j}]`;
      if (!isObj(n)) {
        return void bad(
          npath,
          "must be a mapping with nsid and device.",
          "Write '- nsid: 1' and 'device: /dev/…'.",
        );
      }
      keys(n, npath, specKeys("namespace"));
      const nsid = int(n.nsid, `${npath}.nsid`, ...specRange("namespace", "nsid")) ?? 0;
      const device = n.device === undefined
        ? str(n.device, `${npath}.device`, "the path of a block device or regular file") ?? ""
        : pathStr(n, "device", npath, "the path of a block device or regular file") ?? "";
      if (device && checkFiles) {
        const kind = fileKind(device, { follow: true });
        if (kind === undefined) {
          bad(
            `${npath}.device`,
            `device ${quote(device)} does not exist.`,
            "Create it, or fix the path (see lsblk).",
          );
        } else if (kind !== "file" && kind !== "block") {
          bad(
            `${npath}.device`,
            `${quote(device)} is neither a block device nor a regular file.`,
            "Point it at a block device (/dev/…) or an image file.",
          );
        }
      }
      if (device && !device.startsWith("/")) {
        bad(
          `${npath}.device`,
          `${quote(device)} is not an absolute path.`,
          "Write the full path, e.g. /dev/nvme0n1.",
        );
      }
      const ns: NamespaceSpec = { nsid, device, enabled: bool(n, "enabled", npath, true) };
      if (n.buffered_io !== undefined) ns.buffered_io = bool(n, "buffered_io", npath, false);
      const uuid = optStr(n, "uuid", npath, "a UUID");
      if (uuid !== undefined) {
        if (UUID_RE.test(uuid)) ns.uuid = uuid.toLowerCase();
        else {bad(
            `${npath}.uuid`,
            `${quote(uuid)} is not a UUID.`,
            "Write 8-4-4-4-12 hex digits (uuidgen makes one).",
          );}
      }
      const nguid = optStr(n, "nguid", npath, "an NGUID");
      if (nguid !== undefined) {
        const v = normalizeNguid(nguid);
        if (v) ns.nguid = nguid;
        else {bad(
            `${npath}.nguid`,
            `${quote(nguid)} is not an NGUID.`,
            "Write 32 hex digits ('-' or ':' separators allowed).",
          );}
      }
      sub.namespaces.push(ns);
    });
    dupes(
      sub.namespaces.map((n, j) => [`${path}.namespaces[${j}].nsid`, n.nsid || undefined]),
      "nsid",
      "Give each namespace of a subsystem its own nsid.",
    );
    subsystems.push(sub);
  });
  dupes(
    subsystems.map((s, i) => [`subsystems[${i}].nqn`, s.nqn || undefined]),
    "subsystem NQN",
    "Give each subsystem its own NQN.",
  );
  const hostNqns = new Set(hosts.map((h) => h.nqn));
  subsystems.forEach((s, i) => {
    if (hostNqns.has(s.nqn)) {
      bad(
        `subsystems[${i}].nqn`,
        `${quote(s.nqn)} is also a host NQN.`,
        "Use different NQNs for hosts and subsystems.",
      );
    }
  });

  // ports
  const ports: PortSpec[] = [];
  const subNqns = new Set(subsystems.map((s) => s.nqn));
  list(raw, "ports", "ports").forEach((p, i) => {
    const path = `ports[${i}]`;
    if (!isObj(p)) {
      return void bad(path, "must be a mapping with id, trtype and traddr.", "Write '- id: 1'.");
    }
    keys(p, path, specKeys("port"));
    const id = int(p.id, `${path}.id`, ...specRange("port", "id"));
    const trtype = p.trtype === undefined ? "rdma" : p.trtype;
    const trtypes = specEnum("port", "trtype");
    if (!trtypes.includes(trtype as string)) {
      bad(
        `${path}.trtype`,
        `${quote(trtype)} is not a transport nvmeof configures (${orList(trtypes)}).`,
        `Use ${orList(trtypes)}.`,
      );
    }
    // Only a string goes into the result: an invalid value is reported above, never converted.
    const port: PortSpec = {
      id: id ?? -1,
      trtype: (typeof trtype === "string" ? trtype : "") as PortSpec["trtype"],
      subsystems: [],
    };
    if (trtype !== "loop") {
      const traddr = str(
        p.traddr,
        `${path}.traddr`,
        "the address to listen on, e.g. 192.168.100.10",
      );
      let adrfam = p.adrfam as string | undefined;
      if (adrfam === undefined && traddr) {
        adrfam = isIpv4(traddr) ? "ipv4" : isIpv6(traddr) ? "ipv6" : undefined;
      }
      if (adrfam !== undefined && !["ipv4", "ipv6", "ib", "fc"].includes(adrfam)) {
        bad(
          `${path}.adrfam`,
          `${quote(adrfam)} is not an address family.`,
          "Use ipv4, ipv6, ib or fc.",
        );
      } else if (
        trtype !== "loop" && adrfam !== undefined && !specEnum("port", "adrfam").includes(adrfam)
      ) {
        bad(
          `${path}.adrfam`,
          `${trtype} ports take ipv4 or ipv6 addresses, not ${quote(adrfam)}.`,
          "Use ipv4 or ipv6.",
        );
      }
      if (traddr) {
        if (adrfam === "ipv4" && !isIpv4(traddr)) {
          bad(
            `${path}.traddr`,
            `${quote(traddr)} is not an IPv4 address.`,
            "Write a dotted quad such as 192.168.100.10.",
          );
        } else if (adrfam === "ipv6" && !isIpv6(traddr)) {
          bad(
            `${path}.traddr`,
            `${quote(traddr)} is not an IPv6 address.`,
            "Write an address such as fd00::10.",
          );
        } else if (adrfam === undefined) {
          bad(
            `${path}.traddr`,
            `${quote(traddr)} is neither an IPv4 nor an IPv6 address.`,
            "Write an IP address, e.g. 192.168.100.10.",
          );
        }
      }
      port.traddr = traddr;
      port.adrfam = adrfam as PortSpec["adrfam"];
      const svc = int(p.trsvcid ?? 4420, `${path}.trsvcid`, ...specRange("port", "trsvcid"));
      if (svc !== undefined) port.trsvcid = String(svc);
    } else {
      for (const k of ["traddr", "trsvcid", "adrfam"]) {
        if (p[k] === undefined) continue;
        bad(
          `${path}.${k}`,
          "is set on a loop port, which has no address.",
          "Remove adrfam, traddr and trsvcid from the loop port.",
        );
      }
    }
    list(p, "subsystems", `${path}.subsystems`).forEach((s, j) => {
      const n = nqn(s, `${path}.subsystems[${j}]`);
      if (!n) return;
      if (!subNqns.has(n)) {
        bad(
          `${path}.subsystems[${j}]`,
          `names subsystem ${quote(n)}, which the spec does not define.`,
          "Add it under subsystems, or remove it here.",
        );
      }
      port.subsystems.push(n);
    });
    dupes(
      port.subsystems.map((s, j) => [`${path}.subsystems[${j}]`, s]),
      "subsystem",
      "List each subsystem once.",
    );
    if (p.inline_data_size !== undefined) {
      port.inline_data_size = int(
        p.inline_data_size,
        `${path}.inline_data_size`,
        ...specRange("port", "inline_data_size"),
      );
    }
    if (p.max_queue_size !== undefined) {
      port.max_queue_size = int(
        p.max_queue_size,
        `${path}.max_queue_size`,
        ...specRange("port", "max_queue_size"),
      );
    }
    if (p.pi_enable !== undefined) port.pi_enable = bool(p, "pi_enable", path, false);
    const tsasValues = specEnum("port", "tsas");
    const tsas = optStr(p, "tsas", path, orList(tsasValues));
    if (tsas !== undefined) {
      if (trtype !== "tcp") {
        bad(
          `${path}.tsas`,
          `is only for tcp ports (the kernel refuses it for ${quote(trtype)}).`,
          "Remove it.",
        );
      } else if (!tsasValues.includes(tsas)) {
        bad(
          `${path}.tsas`,
          `${quote(tsas)} is not a TCP security type.`,
          `Use ${orList(tsasValues)}.`,
        );
      } else port.tsas = tsas;
    }
    const treq = optStr(p, "treq", path, "a treq value");
    if (treq !== undefined) {
      const treqs = specEnum("port", "treq");
      if (treqs.includes(treq)) port.treq = treq;
      else {bad(
          `${path}.treq`,
          `${quote(treq)} is not a treq value.`,
          `Use ${orList(treqs, true)}.`,
        );}
    }
    ports.push(port);
  });
  dupes(
    ports.map((p, i) => [`ports[${i}].id`, p.id >= 0 ? p.id : undefined]),
    "port id",
    "Give each port its own id.",
  );
  dupes(
    ports.map((
      p,
      i,
    ) => [`ports[${i}].traddr`, p.traddr ? `${p.trtype} ${p.traddr}:${p.trsvcid}` : undefined]),
    "address (the kernel refuses two listeners on one address: EADDRINUSE)",
    "Use one port for that address and list all its subsystems there.",
  );
  if (problems.length) throw new SpecError(options.source ?? "", problems);
  return { hosts, subsystems, ports };
}

/** Reads, parses and validates a spec file. */
export async function loadSpecFile(
  path: string,
  options: { checkFiles?: boolean } = {},
): Promise<TargetSpec> {
  let text: string;
  try {
    text = readInputText(path);
  } catch (err) {
    throw new SpecError(`'${path}'`, [{
      path: "file",
      message: err instanceof InputError
        ? err.reason
        : `cannot be read: ${(err as Error).message}.`,
      fix: path === DEFAULT_SPEC_FILE
        ? "Write a spec there, or pass -f FILE, or use the one-line form (--nqn --device --traddr)."
        : "Check the path given with -f.",
    }]);
  }
  const source = `'${path}'`;
  return validateSpec(await parseSpecText(text, source), { ...options, source });
}

/** Where `target up/down/check` look without -f. */
export const DEFAULT_SPEC_FILE = "/etc/nvmeof/target.yaml";
