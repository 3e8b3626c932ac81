/**
 * `nvmeof connections [list|remove|import]`: the saved connections that `connect --saved`
 * (and nvmeof-autoconnect.service at boot) reconnects.
 */
import { stringFlag } from "../cli/parse.ts";
import type { CommandDetails, CommandResult, RunContext } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import type { describeSaved, SavedConnection } from "../persist/connections.ts";
import type { ImportResult } from "../persist/nvme_cli_import.ts";

function listText(
  d: { file: string; connections: SavedConnection[] },
  describe: typeof describeSaved,
): string {
  if (d.connections.length === 0) return `no saved connections in ${d.file}`;
  return d.connections.map((c, i) => `${i + 1}  ${describe(c)}`).join("\n");
}

async function listRun(_ctx: RunContext): Promise<CommandResult> {
  const { connectionsFile, persistPaths } = await import("../persist/etc_paths.ts");
  const { describeSaved, loadConnections } = await import("../persist/connections.ts");
  const file = connectionsFile(persistPaths());
  const data = { file, connections: await loadConnections(file) };
  return { data, text: () => listText(data, describeSaved) };
}

/** `nvmeof connections list`. */
export const connectionsListCommand: CommandDetails = {
  description: `
Shows /etc/nvmeof/connections.yaml (NVMEOF_ETC overrides the directory): one line per saved
connection, numbered for 'nvmeof connections remove N'. Entries marked "discovery" are discovery
controllers: every subsystem they list for this host is connected.`,
  examples: ["nvmeof connections list", "nvmeof connections list -o json"],
  run: listRun,
};

async function removeRun(ctx: RunContext): Promise<CommandResult> {
  const { connectionsFile, persistPaths } = await import("../persist/etc_paths.ts");
  const { describeSaved, loadConnections, saveConnections } = await import(
    "../persist/connections.ts"
  );
  const file = connectionsFile(persistPaths());
  const list = await loadConnections(file);
  const all = ctx.values.all === true;
  const nqn = stringFlag(ctx.values, "nqn");
  const traddr = stringFlag(ctx.values, "traddr");
  if (!all && nqn === undefined && ctx.positionals.length === 0) {
    throw new UsageError("Say which saved connections to remove.", {
      hint: "Give their numbers from 'nvmeof connections list', or -n NQN [-a ADDR], or --all.",
    });
  }
  if (all && (nqn !== undefined || ctx.positionals.length)) {
    throw new UsageError("--all excludes numbers and -n/-a.", { hint: "Use one way." });
  }
  const drop = new Set<number>();
  for (const p of ctx.positionals) {
    const n = /^\d+$/.test(p) ? Number(p) : NaN;
    if (!(n >= 1 && n <= list.length)) {
      throw new UsageError(
        `'${p}' is not the number of a saved connection (there are ${list.length}).`,
        { hint: "Run 'nvmeof connections list' for the numbers." },
      );
    }
    drop.add(n - 1);
  }
  if (nqn !== undefined) {
    const before = drop.size;
    list.forEach((c, i) => {
      if (c.nqn === nqn && (traddr === undefined || c.traddr === traddr)) drop.add(i);
    });
    if (drop.size === before) {
      throw new UsageError(
        `No saved connection to '${nqn}'${traddr ? ` at ${traddr}` : ""} in ${file}.`,
        { hint: "Run 'nvmeof connections list' to see them." },
      );
    }
  } else if (traddr !== undefined) {
    throw new UsageError("-a/--traddr narrows -n/--nqn; give -n too.", {
      hint: "Or remove by number.",
    });
  }
  if (all) list.forEach((_, i) => drop.add(i));
  const removed = list.filter((_, i) => drop.has(i));
  const kept = list.filter((_, i) => !drop.has(i));
  const dryRun = ctx.values["dry-run"] === true;
  if (!dryRun && removed.length) await saveConnections(file, kept);
  const data = { file, dry_run: dryRun, removed, remaining: kept.length };
  return {
    data,
    text: () =>
      [
        ...removed.map((c) => `${dryRun ? "would remove" : "removed"}: ${describeSaved(c)}`),
        `${kept.length} saved connection(s) remain in ${file}` +
        " (connected controllers stay connected; 'nvmeof disconnect' ends them)",
      ].join("\n"),
  };
}

/** `nvmeof connections remove`. */
export const connectionsRemoveCommand: CommandDetails = {
  args: "[N…]",
  description: `
Removes entries from the saved connections, so they are no longer connected at boot. Live
controllers are not disconnected: use 'nvmeof disconnect' for that.`,
  options: {
    nqn: { type: "string", short: "n", value: "NQN", description: "Remove the entries for NQN" },
    traddr: {
      type: "string",
      short: "a",
      value: "ADDR",
      description: "With -n: only the entry at this address",
    },
    all: { type: "boolean", description: "Remove every saved connection" },
    "dry-run": { type: "boolean", description: "Show what would be removed; change nothing" },
  },
  examples: [
    "nvmeof connections remove 2",
    "nvmeof connections remove -n nqn.2024-01.io.example:disk1 -a 10.0.0.2",
    "nvmeof connections remove --all --dry-run",
  ],
  run: removeRun,
};

async function importRun(ctx: RunContext): Promise<CommandResult> {
  const { connectionsFile, persistPaths } = await import("../persist/etc_paths.ts");
  const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
  const { readHostFiles } = await import("../fabrics/host_identity.ts");
  const { importConfigJson } = await import("../persist/config_json.ts");
  const { importDiscoveryConf } = await import("../persist/discovery_conf.ts");
  const { readNvmeCliFile } = await import("../persist/nvme_cli_import.ts");
  const { connectionKey, describeSaved, loadConnections, mergeConnections, saveConnections } =
    await import("../persist/connections.ts");
  if (ctx.values["from-nvme-cli"] !== true) {
    throw new UsageError("Say where to import from: --from-nvme-cli.", {
      hint: "It reads /etc/nvme/discovery.conf and /etc/nvme/config.json.",
    });
  }
  const paths = persistPaths();
  const fabrics = fabricsPaths();
  const dryRun = ctx.values["dry-run"] === true;
  const found: ImportResult = { connections: [], notes: [], keyFiles: [] };
  const sources: string[] = [];
  const read = (path: string) => Promise.resolve(readNvmeCliFile(path));
  const conf = `${paths.etcNvme}/discovery.conf`;
  const confText = await read(conf);
  if (confText !== undefined) {
    const host = await readHostFiles(fabrics);
    const r = importDiscoveryConf(confText, `'${conf}'`, host, paths.etc);
    sources.push(conf);
    found.connections.push(...r.connections);
    found.notes.push(...r.notes);
    found.keyFiles.push(...r.keyFiles);
  }
  const json = `${paths.etcNvme}/config.json`;
  const jsonText = await read(json);
  if (jsonText !== undefined) {
    const r = importConfigJson(jsonText, `'${json}'`, paths.etc);
    sources.push(json);
    found.connections.push(...r.connections);
    found.notes.push(...r.notes);
    found.keyFiles.push(...r.keyFiles);
  }
  if (sources.length === 0) {
    throw new UsageError(`Neither '${conf}' nor '${json}' exists: nothing to import.`, {
      hint: "NVMEOF_ETC_NVME points at another nvme-cli directory.",
    });
  }
  for (const n of found.notes) ctx.note(`note: ${n}`);
  const file = connectionsFile(paths);
  const existing = await loadConnections(file);
  // Two sources may describe one connection: keep the first.
  const unique = found.connections.filter((c, i, a) =>
    a.findIndex((o) => connectionKey(o) === connectionKey(c)) === i
  );
  const merged = mergeConnections(existing, unique);
  if (!dryRun) {
    for (const k of found.keyFiles) {
      await Deno.mkdir(k.path.slice(0, k.path.lastIndexOf("/")), { recursive: true, mode: 0o700 });
      await Deno.writeTextFile(k.path, k.secret + "\n", { mode: 0o600 });
      await Deno.chmod(k.path, 0o600);
    }
    if (merged.added.length || merged.replaced.length) await saveConnections(file, merged.list);
  }
  const data = {
    file,
    dry_run: dryRun,
    sources,
    imported: merged.added,
    updated: merged.replaced,
    unchanged: unique.length - merged.added.length - merged.replaced.length,
    key_files: found.keyFiles.map((k) => k.path),
    notes: found.notes,
  };
  return {
    data,
    text: () =>
      [
        ...merged.added.map((c) => `${dryRun ? "would import" : "imported"}: ${describeSaved(c)}`),
        ...merged.replaced.map((c) =>
          `${dryRun ? "would update" : "updated"}: ${describeSaved(c)}`
        ),
        `${merged.added.length} new, ${merged.replaced.length} updated, ${data.unchanged} already ` +
        `saved, from ${sources.join(" and ")} into ${file}`,
      ].join("\n"),
  };
}

/** `nvmeof connections import`. */
export const connectionsImportCommand: CommandDetails = {
  description: `
Reads nvme-cli's boot-time configuration, /etc/nvme/discovery.conf (one discovery controller per
line, as nvme-cli flags) and /etc/nvme/config.json (libnvme's hosts → subsystems → ports), and
adds each connection to the saved connections. discovery.conf lines become discovery entries
(connect-all at boot) with the host identity of /etc/nvme/hostnqn and hostid. DH-HMAC-CHAP keys,
which nvme-cli keeps inline, are moved to key files under /etc/nvmeof/keys (mode 0600); options
nvmeof has no equivalent for are named in a note.`,
  options: {
    "from-nvme-cli": {
      type: "boolean",
      description: "Import /etc/nvme/discovery.conf and /etc/nvme/config.json",
    },
    "dry-run": { type: "boolean", description: "Show what would be imported; write nothing" },
  },
  examples: [
    "nvmeof connections import --from-nvme-cli --dry-run",
    "nvmeof connections import --from-nvme-cli && nvmeof enable-autoconnect",
  ],
  run: importRun,
};

/** `nvmeof connections`. */
export const connectionsCommand: CommandDetails = {
  description: "Without a subcommand, lists them ('nvmeof connections list').",
  run: listRun,
  examples: [
    "nvmeof connections list",
    "nvmeof connections remove 1",
    "nvmeof connections import --from-nvme-cli",
  ],
};
