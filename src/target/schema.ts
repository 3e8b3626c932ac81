/**
 * The target spec's shape, written once: the keys of each object, their types, ranges, enums and
 * patterns, with a description each. `nvmeof target schema` prints it as JSON Schema (for YAML
 * language servers: `# yaml-language-server: $schema=…`), and the validator in spec.ts takes its
 * key lists, ranges and enums from the same definitions, so the two cannot drift.
 *
 * The validator checks more than a schema can say (files exist with safe modes, references
 * between subsystems and ports, duplicates); the schema is the part an editor can check as
 * you type. Integers may be written as digit strings, as the validator accepts them.
 */
import type { TextKeys } from "./spec_yaml.ts";
import { ANA_STATES, MAX_ANA_GROUP, PORT_TRTYPES } from "../configfs/nvmet.ts";
import { DISCOVERY_NQN, NQN_MAX_BYTES } from "../fabrics/nqn.ts";

/** A JSON Schema node (draft 2020-12 subset used here). */
export type Schema = {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  anyOf?: Schema[];
  not?: Schema;
  if?: Schema;
  then?: Schema;
  else?: Schema;
  allOf?: Schema[];
  uniqueItems?: boolean;
  minItems?: number;
  maxItems?: number;
  $ref?: string;
  $defs?: Record<string, Schema>;
  $schema?: string;
  $id?: string;
  title?: string;
};

/**
 * What nvmet takes as an NQN: any name without '/' (it names a configfs directory), whitespace
 * or control characters. nvmetcli's examples use `testnqn`; the kernel refuses only the
 * discovery NQN.
 */
export const NQN_PATTERN = "^[^/\\s\\u0000-\\u001f\\u007f]+$";
/** The form the NVMe base specification asks for: nqn.<yyyy-mm>.<reverse-domain>[:<name>]. */
export const NQN_FORM_PATTERN = "^nqn\\.\\d{4}-(0[1-9]|1[0-2])\\.[^:]+(:.+)?$";

const nqn = (description: string): Schema => ({
  type: "string",
  description,
  minLength: 1,
  maxLength: NQN_MAX_BYTES,
  pattern: NQN_PATTERN,
  not: { const: DISCOVERY_NQN },
});

/** An integer field: a number in range, or the same as a digit string (the integer first). */
export function int(min: number, max: number, description: string, dflt?: number): Schema {
  return {
    description,
    ...(dflt !== undefined ? { default: dflt } : {}),
    anyOf: [
      { type: "integer", minimum: min, maximum: max },
      { type: "string", pattern: "^-?\\d+$" },
    ],
  };
}

/** Dotted-quad IPv4, octets 0..255 (leading zeros allowed, as the kernel's in4_pton reads them). */
export const IPV4_PATTERN =
  "^(([01]?\\d?\\d|2[0-4]\\d|25[0-5])\\.){3}([01]?\\d?\\d|2[0-4]\\d|25[0-5])$";
/** The characters of a textual IPv6 address (the validator checks the exact form). */
export const IPV6_PATTERN = "^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*$";

const printable = (max: number, description: string): Schema => ({
  type: "string",
  description,
  pattern: `^[\\x20-\\x7e]{1,${max}}$`,
  maxLength: max,
});

const keyFile = (description: string): Schema => ({ type: "string", minLength: 1, description });

/** The object kinds of a spec. */
export type SpecKind = "host" | "namespace" | "subsystem" | "port" | "ana_group" | "referral";

/** The definitions of every object of a spec. */
export const SPEC_DEFS: Record<SpecKind, Schema & { properties: Record<string, Schema> }> = {
  host: {
    type: "object",
    description: "A host that may connect, by NQN, with optional DH-HMAC-CHAP settings.",
    additionalProperties: false,
    required: ["nqn"],
    properties: {
      nqn: nqn("The host's NQN (its /etc/nvme/hostnqn)."),
      dhchap_key_file: keyFile(
        "File holding the host's DH-HMAC-CHAP secret (DHHC-1:…), mode 0600 or stricter.",
      ),
      dhchap_ctrl_key_file: keyFile(
        "File holding the controller's secret, for bidirectional authentication (needs dhchap_key_file).",
      ),
      dhchap_hash: {
        type: "string",
        description: "DH-HMAC-CHAP hash.",
        enum: ["hmac(sha256)", "hmac(sha384)", "hmac(sha512)"],
      },
      dhchap_dhgroup: {
        type: "string",
        description: "DH-HMAC-CHAP Diffie-Hellman group.",
        enum: ["null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"],
      },
    },
  },
  namespace: {
    type: "object",
    description: "A namespace of a subsystem: a block device or a regular file.",
    additionalProperties: false,
    required: ["nsid", "device"],
    properties: {
      nsid: int(1, 0xfffffffe, "Namespace ID, unique within the subsystem."),
      device: {
        type: "string",
        description: "Absolute path of a block device or an image file.",
        pattern: "^/",
      },
      uuid: {
        type: "string",
        description: "Namespace UUID (8-4-4-4-12 hex).",
        pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
      },
      nguid: {
        type: "string",
        description: "Namespace NGUID: 32 hex digits, '-' or ':' separators allowed.",
        pattern: "^[-:]*([0-9a-fA-F][-:]*){32}$",
      },
      buffered_io: {
        type: "boolean",
        description:
          "Use the page cache (file-backed namespaces on file systems without O_DIRECT, e.g. tmpfs).",
      },
      ana_grpid: int(
        1,
        MAX_ANA_GROUP,
        "ANA group of the namespace; every port of the subsystem must have it (group 1 always does).",
        1,
      ),
      resv_enable: {
        type: "boolean",
        description: "Enable persistent reservations (needs Linux 6.13 or later).",
      },
      enabled: { type: "boolean", description: "Enable the namespace.", default: true },
    },
  },
  subsystem: {
    type: "object",
    description: "An NVM subsystem: its NQN, who may connect, and its namespaces.",
    additionalProperties: false,
    required: ["nqn"],
    properties: {
      nqn: nqn("The subsystem's NQN, e.g. nqn.2026-10.com.example:storage-1."),
      allow_any_host: {
        type: "boolean",
        description: "Let any host connect (then list no hosts).",
        default: false,
      },
      hosts: {
        type: "array",
        description: "NQNs of the hosts allowed to connect.",
        items: nqn("A host NQN."),
      },
      serial: printable(20, "Serial number, 1 to 20 printable ASCII characters."),
      model: printable(40, "Model number, 1 to 40 printable ASCII characters."),
      version: {
        type: "string",
        description: "NVMe version reported, X.Y or X.Y.Z.",
        pattern: "^\\d+\\.\\d+(\\.\\d+)?$",
      },
      firmware: printable(8, "Firmware revision, 1 to 8 printable ASCII characters."),
      ieee_oui: {
        description: "IEEE OUI, 24-bit hex (0xABCDEF), read as written (text first: a text field).",
        anyOf: [
          { type: "string", pattern: "^(0x)?[0-9a-fA-F]{1,6}$" },
          { type: "integer", minimum: 0, maximum: 0xffffff },
        ],
      },
      cntlid_min: int(1, 0xffef, "Lowest controller ID handed out."),
      cntlid_max: int(1, 0xffef, "Highest controller ID handed out."),
      qid_max: int(
        1,
        128,
        "Most I/O queues a host may create (writing it disconnects the subsystem's hosts).",
        128,
      ),
      pi_enable: {
        type: "boolean",
        description: "Protection information (T10-PI) for the subsystem's namespaces.",
      },
      namespaces: {
        type: "array",
        description: "The subsystem's namespaces.",
        items: { $ref: "#/$defs/namespace" },
      },
    },
    // The kernel refuses allowed hosts while allow_any_host is set (EINVAL).
    if: { properties: { allow_any_host: { const: true } }, required: ["allow_any_host"] },
    then: { properties: { hosts: { maxItems: 0 } } },
  },
  port: {
    type: "object",
    description: "A port: one transport address and the subsystems reachable through it.",
    additionalProperties: false,
    required: ["id"],
    properties: {
      id: int(0, 65535, "Port ID (the configfs ports/<id> directory)."),
      trtype: {
        type: "string",
        description: "Transport.",
        enum: [...PORT_TRTYPES],
        default: "rdma",
      },
      adrfam: {
        type: "string",
        description: "Address family (derived from traddr when omitted).",
        enum: ["ipv4", "ipv6"],
      },
      traddr: {
        type: "string",
        description: "IP address to listen on (an address of the RDMA device for rdma).",
        anyOf: [{ pattern: IPV4_PATTERN }, { pattern: IPV6_PATTERN }],
      },
      trsvcid: int(1, 65535, "Port number.", 4420),
      subsystems: {
        type: "array",
        description: "NQNs of the subsystems exported on this port (defined under subsystems).",
        items: nqn("A subsystem NQN."),
      },
      inline_data_size: int(-1, 1 << 20, "RDMA inline data size in bytes (-1 = default)."),
      max_queue_size: int(-1, 1024, "Largest I/O queue a host may create (-1 = default)."),
      pi_enable: { type: "boolean", description: "Enable protection information." },
      tsas: {
        type: "string",
        description: "TCP security type (tcp ports only).",
        enum: ["none", "tls1.3"],
      },
      treq: {
        type: "string",
        description: "Transport requirements.",
        enum: ["not specified", "required", "not required"],
      },
      ana_groups: {
        type: "array",
        description:
          "ANA groups of this port and their states (group 1 exists on every port; list it to set its state).",
        items: { $ref: "#/$defs/ana_group" },
      },
      referrals: {
        type: "array",
        description: "Other discovery controllers this port's discovery log lists.",
        items: { $ref: "#/$defs/referral" },
      },
    },
    allOf: [
      {
        // A loop port has no address; rdma and tcp need one.
        if: { properties: { trtype: { const: "loop" } }, required: ["trtype"] },
        then: { not: { anyOf: [{ required: ["traddr"] }, { required: ["trsvcid"] }] } },
        else: { required: ["traddr"] },
      },
      {
        if: { properties: { adrfam: { const: "ipv4" } }, required: ["adrfam"] },
        then: { properties: { traddr: { pattern: IPV4_PATTERN } } },
      },
      {
        if: { properties: { adrfam: { const: "ipv6" } }, required: ["adrfam"] },
        then: { properties: { traddr: { pattern: IPV6_PATTERN } } },
      },
      {
        if: {
          properties: { trtype: { const: "tcp" } },
          required: ["trtype"],
        },
        else: { not: { required: ["tsas"] } },
      },
    ],
  },
  ana_group: {
    type: "object",
    description: "An ANA group of a port: the access state hosts see for its namespaces there.",
    additionalProperties: false,
    required: ["id"],
    properties: {
      id: int(1, MAX_ANA_GROUP, "Group id (ana_groups/<id>); namespaces name it in ana_grpid."),
      state: {
        type: "string",
        description: "ANA state on this port.",
        enum: [...ANA_STATES],
        default: "optimized",
      },
    },
  },
  referral: {
    type: "object",
    description: "A discovery controller elsewhere that this port's discovery log refers hosts to.",
    additionalProperties: false,
    required: ["traddr"],
    properties: {
      name: {
        type: "string",
        description: "Name of the referral (default: made from trtype, traddr and trsvcid).",
        minLength: 1,
        pattern: "^[^/]+$",
      },
      trtype: {
        type: "string",
        description: "Transport of the referred discovery controller.",
        enum: ["rdma", "tcp", "fc"],
        default: "rdma",
      },
      adrfam: {
        type: "string",
        description: "Address family (derived from traddr when it is an IP address).",
        enum: ["ipv4", "ipv6", "ib", "fc"],
      },
      traddr: { type: "string", description: "Address of the referred discovery controller." },
      trsvcid: int(1, 65535, "Its service id (port number)."),
      portid: int(0, 65535, "Its port id (addr_portid)."),
      treq: {
        type: "string",
        description: "Transport requirements.",
        enum: ["not specified", "required", "not required"],
      },
      enabled: { type: "boolean", description: "List it in the discovery log.", default: true },
    },
  },
};

/**
 * Whether a field's schema takes text: a string, or alternatives whose first is a string (an
 * integer field lists the integer first; see int()).
 */
function isTextField(s: Schema): boolean {
  return s.type === "string" || s.anyOf?.[0]?.type === "string";
}

/**
 * Keys whose values are text, whatever YAML would make of them: `version: 1.10`, `serial: 0123`
 * and `ieee_oui: 0xABCDEF` are read as written, not as the numbers 1.1, 123 and 11259375.
 */
export const SPEC_TEXT_KEYS: ReadonlySet<string> = new Set(
  Object.values(SPEC_DEFS).flatMap((d) =>
    Object.entries(d.properties).filter(([, s]) => isTextField(s)).map(([k]) => k)
  ),
);

/** Keys whose values are lists of text (NQNs): `hosts` and a port's `subsystems`. */
export const SPEC_TEXT_LIST_KEYS: ReadonlySet<string> = new Set(
  Object.values(SPEC_DEFS).flatMap((d) =>
    Object.entries(d.properties).filter(([, s]) => s.items && isTextField(s.items)).map(([k]) => k)
  ),
);

/** Both, as the spec's readers take them (spec.ts, spec_yaml.ts). */
export const SPEC_TEXT: TextKeys = { scalar: SPEC_TEXT_KEYS, list: SPEC_TEXT_LIST_KEYS };

/** The top-level keys of a spec. */
export const SPEC_TOP_KEYS = ["hosts", "subsystems", "ports"] as const;

/**
 * Answers of specKeys and specRange, by kind and key: validation asks them of every namespace
 * and subsystem, and the definitions do not change.
 */
const keysOf = new Map<SpecKind, readonly string[]>();
const rangeOf = new Map<string, readonly [number, number]>();

/** The keys an object of `kind` may have, in the order of the definition. */
export function specKeys(kind: SpecKind): readonly string[] {
  let keys = keysOf.get(kind);
  if (keys === undefined) keysOf.set(kind, keys = Object.keys(SPEC_DEFS[kind].properties));
  return keys;
}

/** The [minimum, maximum] of integer field `key` of `kind`. */
export function specRange(kind: SpecKind, key: string): readonly [number, number] {
  const name = `${kind}.${key}`;
  const known = rangeOf.get(name);
  if (known !== undefined) return known;
  const f = SPEC_DEFS[kind].properties[key];
  const n = f?.anyOf?.find((s) => s.type === "integer");
  if (n?.minimum === undefined || n.maximum === undefined) {
    throw new Error(`${name} is not an integer field of the spec definitions`);
  }
  const range = [n.minimum, n.maximum] as const;
  rangeOf.set(name, range);
  return range;
}

/** The allowed values of enum field `key` of `kind`. */
export function specEnum(kind: SpecKind, key: string): string[] {
  const f = SPEC_DEFS[kind].properties[key];
  if (!f?.enum) throw new Error(`${kind}.${key} is not an enum field of the spec definitions`);
  return f.enum as string[];
}

/** The JSON Schema of a target spec file. */
export function targetSpecSchema(): Schema {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "urn:nvmeof:target-spec",
    title: "nvmeof target spec",
    description:
      "What 'nvmeof target up' makes nvmet configfs look like (/etc/nvmeof/target.yaml).",
    type: "object",
    additionalProperties: false,
    properties: {
      hosts: {
        type: "array",
        description: "Hosts that may connect: an NQN, or a mapping with nqn and DH-HMAC-CHAP keys.",
        items: { anyOf: [nqn("A host NQN."), { $ref: "#/$defs/host" }] },
      },
      subsystems: {
        type: "array",
        description: "The subsystems to export.",
        items: { $ref: "#/$defs/subsystem" },
      },
      ports: {
        type: "array",
        description: "The ports to listen on.",
        items: { $ref: "#/$defs/port" },
      },
    },
    $defs: SPEC_DEFS,
  };
}
