/**
 * A seeded fuzz run over everything that reads outside input: target specs (YAML text and data),
 * nvmetcli JSON, nvme-cli's discovery.conf and config.json, saved connections, and the discovery
 * log and RDMA-CM private data codecs. Whatever goes in, what comes out is a result or one of the
 * project's own typed errors (never a TypeError or "this is a bug"), no message holds any part
 * of the planted DH-HMAC-CHAP key, and each round is bounded in time.
 *
 * Deterministic: FUZZ_SEED and FUZZ_ROUNDS (environment) vary it; the defaults run in seconds.
 */
import assert from "node:assert/strict";
import { NvmeofError } from "../../src/errors.ts";
import { decodeLog, encodeLog } from "../../src/fabrics/discovery_log.ts";
import { decodeRdmaCmAccept, decodeRdmaCmReject } from "../../src/nvme/capsule.ts";
import { validateSaved } from "../../src/persist/connections.ts";
import { importConfigJson } from "../../src/persist/config_json.ts";
import { importDiscoveryConf } from "../../src/persist/discovery_conf.ts";
import { nvmetcliToSpec } from "../../src/target/nvmetcli.ts";
import { parseSpecText, validateSpec } from "../../src/target/spec.ts";
import { HOST1, SUB1, SUB2 } from "./target_fixtures.ts";
import { type Rng, rng } from "../helpers.ts";

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? 20261018);
const ROUNDS = Number(Deno.env.get("FUZZ_ROUNDS") ?? 400);
/** No single input may take longer than this. */
const ROUND_BUDGET_MS = 3000;

const KEY = "DHHC-1:01:a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5:";
const KEY_PARTS = ["DHHC-1:01:a2V5", "a2V5a2V5a2V5", "V5a2V5:"];
const HQ = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";
const HI = "00000000-0000-0000-0000-000000000001";

const STRINGS = [
  "",
  " ",
  "\0",
  "a\0b",
  "\n",
  "\u2028",
  "\ud800",
  "é",
  "rdma",
  "tcp",
  "loop",
  "ipv4",
  "ipv6",
  "garbage",
  "10.0.0.1",
  "fd00::1",
  "4420",
  "-1",
  "0x10",
  "010",
  "1e3",
  "NaN",
  "true",
  "null",
  "~",
  "*a",
  "&a",
  "!!binary",
  "{",
  "[",
  "'",
  '"',
  "#",
  "---",
  "...",
  "%YAML 1.2",
  "/dev/null",
  "/dev/zero",
  "../../etc",
  HOST1,
  SUB1,
  SUB2,
  KEY,
  `--dhchap-secret=${KEY}`,
  "nqn.2026-10.a:" + "x".repeat(300),
  "__proto__",
  "constructor",
  "toString",
];

/** o[k] = v as JSON.parse and YAML make it: an own property, even for "__proto__". */
function set(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** A random value of any JSON-ish shape, including the ones that broke conversions. */
function value(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 6 : 10)) {
    case 0:
      return r.pick(STRINGS);
    case 1:
      return r.pick([0, 1, -1, 1.5, 65535, 65536, 2 ** 53, NaN, Infinity]);
    case 2:
      return r.pick([true, false, null, undefined]);
    case 3:
      return r.pick(STRINGS) + r.pick(STRINGS);
    case 4:
      return { toString: r.pick([1, "x", null]) };
    case 5:
      return "x".repeat(r.int(5000));
    case 6:
    case 7:
      return Array.from({ length: r.int(4) }, () => value(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(4); i > 0; i--) set(o, r.pick(KEYS), value(r, depth + 1));
      return o;
    }
  }
}

const KEYS = [
  "hosts",
  "subsystems",
  "ports",
  "nqn",
  "namespaces",
  "nsid",
  "device",
  "id",
  "trtype",
  "adrfam",
  "traddr",
  "trsvcid",
  "dhchap_key_file",
  "dhchap_hash",
  "allow_any_host",
  "buffered_io",
  "uuid",
  "nguid",
  "serial",
  "ieee_oui",
  "cntlid_min",
  "tsas",
  "treq",
  "portid",
  "addr",
  "param",
  "attr",
  "allowed_hosts",
  "enable",
  "transport",
  "hostnqn",
  "hostid",
  "dhchap_key",
  "discovery",
  "toString",
  "__proto__",
];

/** A valid spec document, then mutated: a field replaced, removed, or the shape broken. */
function mutatedSpec(r: Rng): unknown {
  const doc: Record<string, unknown> = {
    hosts: [{ nqn: HOST1, dhchap_hash: "hmac(sha256)" }],
    subsystems: [{
      nqn: SUB1,
      hosts: [HOST1],
      namespaces: [{ nsid: 1, device: "/dev/null", uuid: crypto.randomUUID() }],
    }, { nqn: SUB2, allow_any_host: true, namespaces: [] }],
    ports: [
      { id: 1, trtype: "rdma", traddr: "10.0.0.1", trsvcid: 4420, subsystems: [SUB1, SUB2] },
      { id: 2, trtype: "loop", subsystems: [SUB1] },
    ],
  };
  for (let n = 1 + r.int(4); n > 0; n--) {
    // walk to a random container and change one of its entries
    let at: Record<string, unknown> | unknown[] = doc;
    for (let d = r.int(4); d > 0; d--) {
      const keys = Object.keys(at);
      if (!keys.length) break;
      const next = (at as Record<string, unknown>)[r.pick(keys)];
      if (typeof next !== "object" || next === null) break;
      at = next as Record<string, unknown>;
    }
    const keys = Object.keys(at);
    const k = keys.length && r.int(3) ? r.pick(keys) : r.pick(KEYS);
    if (r.int(5) === 0) delete (at as Record<string, unknown>)[k];
    else set(at as Record<string, unknown>, k, value(r));
  }
  return doc;
}

/**
 * `at`, moved past any copy of KEY it falls inside: the fuzz plants whole keys where a careless
 * user might put them, and checks that no part shows; a fragment cut from a key is no longer
 * recognisable as one.
 */
function outsideKey(text: string, at: number): number {
  for (let i = text.indexOf(KEY); i >= 0; i = text.indexOf(KEY, i + 1)) {
    if (at > i && at < i + KEY.length) return i + KEY.length;
  }
  return at;
}

/** YAML text: a mutated spec dumped, then cut, spliced or seasoned with YAML's own syntax. */
function yamlText(r: Rng): string {
  let text = JSON.stringify(mutatedSpec(r), null, r.int(3)) ?? "null";
  for (let n = r.int(4); n > 0; n--) {
    const at = outsideKey(text, r.int(text.length + 1));
    switch (r.int(4)) {
      case 0:
        text = text.slice(0, at); // truncated
        break;
      case 1:
        text = text.slice(0, at) + r.pick(STRINGS) + text.slice(at);
        break;
      case 2:
        text = text.slice(0, at) + "\n" + r.pick(["- ", "  ", "? ", ": ", "&a ", "*a ", "!!str "]) +
          text.slice(at);
        break;
      default:
        text = r.pick([
          "hosts: *nope\n",
          "a: &a [x, x]\nb: [*a, *a, *a]\nhosts: *b\n",
          "hosts: []\n...\n%YAML 1.2\n",
          "? {toString: x}\n: 1\n",
          "hosts: [!!binary aGVsbG8=]\n",
          `hosts:\n  - nqn: ${KEY}\n`,
        ]);
    }
  }
  return text;
}

/** A discovery.conf line: nvme-cli flags in every spelling, some broken. */
function confLine(r: Rng): string {
  const flags = [
    "--transport=rdma",
    "-t tcp",
    "--traddr=10.0.0.1",
    "-a",
    "--trsvcid=4420",
    "--hostnqn=" + HQ,
    "--hostid=" + HI,
    `--dhchap-secret=${KEY}`,
    `--dhchap_secret=${KEY}`,
    `--dhchap-secret= ${KEY}`,
    `-S ${KEY}`,
    KEY,
    "--nr-io-queues=0",
    "--queue-size=abc",
    "--bogus",
    "-",
    "--",
    "'quoted value'",
    '"unterminated',
    "--keep-alive-tmo=",
    "# comment",
  ];
  return Array.from({ length: 1 + r.int(6) }, () => r.pick(flags)).join(" ");
}

/** Runs `fn`; a throw must be the project's typed error and hold no part of the key. */
async function expectTyped(what: string, input: unknown, fn: () => unknown): Promise<void> {
  const t0 = performance.now();
  try {
    await fn();
  } catch (err) {
    if (!(err instanceof NvmeofError)) {
      const shown = typeof input === "string" ? input.slice(0, 400) : JSON.stringify(input);
      assert.fail(`${what}: ${(err as Error)?.stack ?? err}\n  input: ${shown}`);
    }
    const text = `${err.message}\n${err.hint ?? ""}`;
    for (const part of KEY_PARTS) {
      assert.ok(!text.includes(part), `${what}: message holds part of the key:\n${text}`);
    }
  }
  const ms = performance.now() - t0;
  assert.ok(ms < ROUND_BUDGET_MS, `${what} took ${ms.toFixed(0)} ms`);
}

Deno.test(`fuzz: specs, importers and codecs raise only typed errors (seed ${SEED}, ${ROUNDS} rounds)`, async () => {
  const r = rng(SEED);
  await parseSpecText("{}", "warm-up"); // loads the YAML parser outside the timed rounds
  for (let i = 0; i < ROUNDS; i++) {
    const text = yamlText(r);
    await expectTyped("spec text", text, async () => {
      validateSpec(await parseSpecText(text, "'fuzz.yaml'"), { checkFiles: false });
    });
    const doc = mutatedSpec(r);
    await expectTyped("spec data", doc, () => validateSpec(doc, { checkFiles: r.int(4) === 0 }));
    const cli = r.int(2) ? doc : value(r);
    await expectTyped("nvmetcli", cli, () => {
      validateSpec(nvmetcliToSpec(cli, { keyDir: "/k" }).spec, { checkFiles: false });
    });
    const conf = Array.from({ length: 1 + r.int(3) }, () => confLine(r)).join("\n");
    await expectTyped(
      "discovery.conf",
      conf,
      () => importDiscoveryConf(conf, "d.conf", r.int(2) ? { hostnqn: HQ, hostid: HI } : {}, "/e"),
    );
    const json = r.int(3)
      ? JSON.stringify([{ hostnqn: HQ, hostid: HI, subsystems: [value(r), value(r)] }])
      : yamlText(r);
    await expectTyped("config.json", json, () => importConfigJson(json, "c.json", "/e"));
    const saved = r.int(2) ? value(r) : {
      transport: "rdma",
      traddr: "10.0.0.1",
      nqn: SUB1,
      hostnqn: HQ,
      hostid: HI,
    };
    if (r.int(2) && typeof saved === "object" && saved !== null) {
      set(saved as Record<string, unknown>, r.pick(KEYS), value(r));
    }
    await expectTyped("saved connection", saved, () => validateSaved(saved, "c[0]"));
    const bytes = crypto.getRandomValues(new Uint8Array(r.int(3000)));
    if (bytes.length >= 20 && r.int(2)) bytes.fill(0, 8, 18); // plausible header: few records
    await expectTyped("discovery log", bytes, () => decodeLog(bytes));
    await expectTyped("cm private data", bytes, () => {
      decodeRdmaCmAccept(bytes.subarray(0, r.int(40)));
      decodeRdmaCmReject(bytes.subarray(0, r.int(40)));
    });
  }
});

Deno.test("fuzz: a discovery log survives an encode/decode round trip with any text fields", () => {
  const r = rng(SEED + 1);
  for (let i = 0; i < 50; i++) {
    const entry = {
      trtype: r.int(256),
      adrfam: r.int(256),
      subtype: r.int(256),
      treq: r.int(256),
      portid: r.int(65536),
      cntlid: r.int(65536),
      asqsz: r.int(65536),
      eflags: r.int(65536),
      trsvcid: String(r.int(65536)),
      subnqn: SUB1,
      traddr: r.pick(["10.0.0.1", "fd00::1", "x".repeat(255)]),
    };
    const log = decodeLog(encodeLog({ genctr: BigInt(i), entries: [entry] }));
    assert.equal(log.entries[0].subnqn, SUB1);
    assert.equal(log.entries[0].portid, entry.portid);
  }
});
