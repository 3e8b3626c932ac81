/**
 * The exclusion list (`/etc/nvme/exclusions.conf`): what the agent never connects or follows. One
 * exclusion per line, written as nvme-cli flags as discovery.conf is (`--nqn=NQN`,
 * `--traddr=ADDR`, `--trsvcid=PORT`, `--transport=rdma|tcp`, or their short letters); a line
 * excludes every discovery log entry that matches all the fields it gives. `#` starts a comment.
 */
import { quote, UsageError } from "../errors.ts";
import { FLAG_WORD, flagLines } from "./discovery_conf.ts";
import { readNvmeCliFile } from "./nvme_cli_import.ts";

/** The file's name under nvme-cli's directory. */
export const EXCLUSIONS_FILE = "exclusions.conf";

/** One line of the list: an entry matches when it has every field given. */
export interface Exclusion {
  /** `'/etc/nvme/exclusions.conf' line 3`, for the decisions that name it. */
  where: string;
  subnqn?: string;
  traddr?: string;
  trsvcid?: string;
  trtype?: string;
}

/** The exclusion list read, and from where. */
export interface Exclusions {
  file: string;
  list: Exclusion[];
}

const FIELDS: Record<string, keyof Omit<Exclusion, "where">> = {
  nqn: "subnqn",
  n: "subnqn",
  traddr: "traddr",
  a: "traddr",
  trsvcid: "trsvcid",
  s: "trsvcid",
  transport: "trtype",
  t: "trtype",
};

/** Parses the text of an exclusion list; SOURCE names it in errors. */
export function parseExclusions(text: string, source: string): Exclusion[] {
  const out: Exclusion[] = [];
  for (const { where, words } of flagLines(text, source)) {
    const e: Exclusion = { where };
    for (let i = 0; i < words.length; i++) {
      const m = FLAG_WORD.exec(words[i]);
      const field = m && Object.hasOwn(FIELDS, m[2]) ? FIELDS[m[2]] : undefined;
      if (!m || !field) {
        throw new UsageError(`${where}: ${quote(words[i])} is not an exclusion flag.`, {
          hint: "Each line holds one or more of --nqn=NQN --traddr=ADDR --trsvcid=PORT " +
            "--transport=rdma|tcp; an entry is excluded when it matches all of them.",
        });
      }
      const v = m[4] ?? words[++i];
      if (v === undefined || v === "") {
        throw new UsageError(`${where}: ${m[1]}${m[2]} has no value.`, {
          hint: `Write ${m[1]}${m[2]}=VALUE.`,
        });
      }
      if (e[field] !== undefined) {
        throw new UsageError(`${where}: ${m[1]}${m[2]} is given twice.`, {
          hint: "One line per exclusion: write the other value on a line of its own.",
        });
      }
      e[field] = v;
    }
    out.push(e);
  }
  return out;
}

/** The exclusion list of `<etcNvme>/exclusions.conf`: empty when the file does not exist. */
export function readExclusions(etcNvme: string): Exclusions {
  const file = `${etcNvme}/${EXCLUSIONS_FILE}`;
  const text = readNvmeCliFile(file);
  return { file, list: text === undefined ? [] : parseExclusions(text, `'${file}'`) };
}

/** The exclusion that keeps ENTRY out (its fields as the discovery log gives them), if any. */
export function excludedBy(
  list: readonly Exclusion[],
  entry: { subnqn: string; traddr: string; trsvcid: string; trtype: string },
): Exclusion | undefined {
  return list.find((x) =>
    (x.subnqn === undefined || x.subnqn === entry.subnqn) &&
    (x.traddr === undefined || x.traddr === entry.traddr) &&
    (x.trsvcid === undefined || x.trsvcid === entry.trsvcid) &&
    (x.trtype === undefined || x.trtype === entry.trtype)
  );
}
