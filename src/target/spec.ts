/**
 * The target spec: what `nvmeof target up` makes configfs look like. Parsed from YAML (or JSON)
 * and validated completely before anything is written; every problem names its spec path
 * (`subsystems[0].namespaces[1].device`) and the fix.
 */
import { FailureError, quote, redactSecrets } from "../errors.ts";
import { InputError, readInputText } from "../input.ts";
import { defaultSpecFile } from "./spec_file.ts";
import { OUTSIDE, readPlainYaml } from "./spec_yaml.ts";
import { DISCOVERY_NQN, NQN_MAX_BYTES } from "../fabrics/nqn.ts";
import type { AnaState } from "../configfs/nvmet.ts";
import { SPEC_TEXT, SPEC_TEXT_KEYS, SPEC_TEXT_LIST_KEYS, SPEC_TOP_KEYS } from "./schema.ts";
import { isObj, SpecContext } from "./validate/context.ts";
import { validateAnaReferences } from "./validate/ana.ts";
import { validateHosts } from "./validate/hosts.ts";
import { validatePorts } from "./validate/ports.ts";
import { validateSubsystems } from "./validate/subsystems.ts";

// The key lists, ranges and allowed values the validators use come from the definitions in
// schema.ts, which `nvmeof target schema` prints: the validator and the schema cannot drift apart.
export { DISCOVERY_NQN, NQN_MAX_BYTES };
export { isIpv4, isIpv6, normalizeNguid, nqnProblem } from "./values.ts";

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
  /** The namespace's ANA group (1..128); absent: 1 for a new namespace, unchanged otherwise. */
  ana_grpid?: number;
  /** Persistent reservations (resv_enable, Linux ≥ 6.13). */
  resv_enable?: boolean;
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
  /** Most I/O queues a host may create (attr_qid_max, 1..128; writing it drops connected hosts). */
  qid_max?: number;
  /** Protection information on the subsystem's namespaces (attr_pi_enable). */
  pi_enable?: boolean;
  namespaces: NamespaceSpec[];
}

/** An ANA group of a port (group 1 exists on every port; listing it sets its state). */
export interface AnaGroupSpec {
  id: number;
  state: AnaState;
}

/** A referral: another discovery controller a port's discovery log lists. */
export interface ReferralSpec {
  /** The configfs directory's name (made from the address when the spec gives none). */
  name: string;
  trtype: string;
  adrfam?: string;
  traddr: string;
  trsvcid?: string;
  /** The referred discovery controller's port id (addr_portid). */
  portid?: number;
  treq?: string;
  enabled: boolean;
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
  /** ANA groups and their states on this port (absent: group 1 only, as the kernel makes it). */
  ana_groups?: AnaGroupSpec[];
  referrals?: ReferralSpec[];
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

/**
 * Parses YAML or JSON text; syntax errors carry line and column. A spec written in the plain
 * subset of YAML (spec_yaml.ts) is read without the YAML library; anything else, and every error,
 * by the library, loaded here on first use, not at start-up: it is most of the program's start
 * time otherwise.
 */
export async function parseSpecText(text: string, source: string): Promise<unknown> {
  const plain = readPlainYaml(text, SPEC_TEXT);
  if (plain !== OUTSIDE) return plain;
  const { isScalar, isSeq, parseDocument, visit } = await import("yaml");
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
  // Text fields keep the text written in the file: YAML would read `version: 1.10` as 1.1,
  // `serial: 0123` as 123 and `ieee_oui: 0xABCDEF` as 11259375.
  const asText = (node: unknown) => {
    if (!isScalar(node) || typeof node.source !== "string") return;
    const v = node.value;
    if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") {
      node.value = node.source;
    }
  };
  visit(doc, {
    Pair(_, pair) {
      const key = isScalar(pair.key) ? pair.key.value : undefined;
      if (typeof key !== "string") return;
      if (SPEC_TEXT_KEYS.has(key)) asText(pair.value);
      else if (SPEC_TEXT_LIST_KEYS.has(key) && isSeq(pair.value)) pair.value.items.forEach(asText);
    },
  });
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

/** Options for validation. */
export interface ValidateOptions {
  /** Check that devices and key files exist with the right kinds and modes (default true). */
  checkFiles?: boolean;
  /** Where the spec came from, for messages. */
  source?: string;
}

/**
 * Validates raw parsed data into a TargetSpec, or throws SpecError listing every problem. Each
 * section has its validator (src/target/validate/); they report to one SpecContext.
 */
export function validateSpec(raw: unknown, options: ValidateOptions = {}): TargetSpec {
  if (!isObj(raw)) {
    throw new SpecError(options.source ?? "", [{
      path: "document",
      message: "must be a mapping with hosts, subsystems and ports.",
      fix: "Start from the example in 'nvmeof target up --help'.",
    }]);
  }
  const cx = new SpecContext({ checkFiles: options.checkFiles ?? true });
  cx.keys(raw, "", [...SPEC_TOP_KEYS]);
  const hosts = validateHosts(cx, raw);
  const subsystems = validateSubsystems(cx, raw, hosts);
  const ports = validatePorts(cx, raw, new Set(subsystems.map((s) => s.nqn)));
  validateAnaReferences(cx, subsystems, ports);
  if (cx.problems.length) throw new SpecError(options.source ?? "", cx.problems);
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
      fix: path === defaultSpecFile()
        ? "Write a spec there, or pass -f FILE, or use the one-line form (--nqn --device --traddr)."
        : "Check the path given with -f.",
    }]);
  }
  const source = `'${path}'`;
  return validateSpec(await parseSpecText(text, source), { ...options, source });
}
