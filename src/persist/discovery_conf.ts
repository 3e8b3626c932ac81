/**
 * nvme-cli's /etc/nvme/discovery.conf: one discovery controller per line, written as nvme-cli
 * flags (`--transport=rdma --traddr=10.0.0.2 --trsvcid=4420 …`); `#` starts a comment. Imported
 * as saved connections, or read as it is by `discover` and `connect-all` without -a.
 */
import { quote, UsageError } from "../errors.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import { CONNECT_OPTIONS } from "../fabrics/connect_table.ts";
import {
  addEntry,
  type DefaultHost,
  type ImportResult,
  INLINE_SECRET,
  inMemory,
  readNvmeCliFile,
} from "./nvme_cli_import.ts";

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
    if (!r.nvmeCli) continue; // nvmeof's own option: not in nvme-cli's files
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

/** The words of one line of nvme-cli's files: quoted words kept whole. */
function splitWords(line: string): string[] {
  const words: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) words.push(m[1] ?? m[2] ?? m[3]);
  return words;
}

/** One flag word of nvme-cli's files: `--name`, `-n`, `--name=value`. */
export const FLAG_WORD = /^(--?)([A-Za-z][A-Za-z0-9_-]*)(=(.*))?$/;

/**
 * The lines of one of nvme-cli's flag files (discovery.conf, exclusions.conf) that say something:
 * comments (`#` on) and blank lines left out, each with its words and where it is
 * (`SOURCE line N`, for messages).
 */
export function flagLines(text: string, source: string): Array<{ where: string; words: string[] }> {
  const out: Array<{ where: string; words: string[] }> = [];
  const lines = text.split("\n");
  for (let ln = 0; ln < lines.length; ln++) {
    const line = lines[ln].replace(/#.*$/, "").trim();
    if (line) out.push({ where: `${source} line ${ln + 1}`, words: splitWords(line) });
  }
  return out;
}

/** Parses discovery.conf text: each line a discovery controller. */
export function importDiscoveryConf(
  text: string,
  source: string,
  host: DefaultHost,
  etc: string,
): ImportResult {
  const out: ImportResult = { connections: [], notes: [], keyFiles: [] };
  for (const { where, words } of flagLines(text, source)) {
    const raw: Record<string, string | boolean> = {};
    const ignored: string[] = [];
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      const m = FLAG_WORD.exec(w);
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
    addEntry(out, raw, where, etc);
  }
  return out;
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
  const r = importDiscoveryConf(text, `'${file}'`, host, "/nonexistent");
  return { file, ...await inMemory(r) };
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
