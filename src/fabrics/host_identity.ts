/**
 * The host's NVMe identity: host NQN and host ID, read from nvme-cli's files
 * (`/etc/nvme/hostnqn`, `/etc/nvme/hostid`; env LIBNVME_HOSTNQN/LIBNVME_HOSTID override) and
 * generated like libnvme does. The kernel pairs each host NQN with one host ID for the life of
 * the module (nvmf_host_add in drivers/nvme/host/fabrics.c), so the two always travel together.
 */
import { EACCES, ENOENT, EROFS } from "../errno.ts";
import { EnvironmentError, errnoOf, FailureError, UsageError } from "../errors.ts";
import { checkNqn, isUuid } from "./option_checks.ts";
import { readText } from "../host/kfs.ts";
import type { FabricsPaths } from "./initiator_paths.ts";

/** The prefix of UUID-based host NQNs. */
export const UUID_NQN_PREFIX = "nqn.2014-08.org.nvmexpress:uuid:";

/** A resolved host identity and where each half came from. */
export interface HostIdentity {
  hostnqn: string;
  hostid: string;
  /** "flag", "env", a file path, or "derived from hostnqn". */
  hostnqnSource: string;
  hostidSource: string;
}

/** The UUID inside `nqn.2014-08.org.nvmexpress:uuid:<uuid>`, if it has that form. */
export function uuidOfNqn(nqn: string): string | undefined {
  if (!nqn.startsWith(UUID_NQN_PREFIX)) return undefined;
  const u = nqn.slice(UUID_NQN_PREFIX.length);
  return isUuid(u) ? u.toLowerCase() : undefined;
}

async function firstLine(path: string): Promise<string | undefined> {
  try {
    const line = (await Deno.readTextFile(path)).split("\n")[0].trim();
    return line === "" ? undefined : line;
  } catch (err) {
    if (errnoOf(err) === ENOENT) return undefined;
    throw new EnvironmentError(`Cannot read '${path}': ${(err as Error).message}`, {
      cause: err,
      hint: "Run as root, or pass -q/--hostnqn and -I/--hostid.",
    });
  }
}

/** What the host files (and their env overrides) say, each half possibly absent. */
export async function readHostFiles(
  paths: FabricsPaths,
  env: (name: string) => string | undefined = Deno.env.get,
): Promise<{ hostnqn?: string; hostid?: string; hostnqnSource: string; hostidSource: string }> {
  const envNqn = env("LIBNVME_HOSTNQN");
  const envId = env("LIBNVME_HOSTID");
  const nqnPath = `${paths.etcNvme}/hostnqn`;
  const idPath = `${paths.etcNvme}/hostid`;
  const hostnqn = envNqn !== undefined ? (envNqn || undefined) : await firstLine(nqnPath);
  const hostid = envId !== undefined ? (envId || undefined) : await firstLine(idPath);
  return {
    hostnqn,
    hostid: hostid?.toLowerCase(),
    hostnqnSource: envNqn !== undefined ? "env LIBNVME_HOSTNQN" : nqnPath,
    hostidSource: envId !== undefined ? "env LIBNVME_HOSTID" : idPath,
  };
}

/**
 * The identity to connect with: the flags when given, else the host files. Refuses a pairing the
 * kernel would refuse later (a host NQN with no way to know its host ID).
 */
export async function resolveHostIdentity(
  given: { hostnqn?: string; hostid?: string },
  paths: FabricsPaths,
  env: (name: string) => string | undefined = Deno.env.get,
): Promise<HostIdentity> {
  const files = await readHostFiles(paths, env);
  if (given.hostnqn !== undefined && given.hostid !== undefined) {
    return {
      hostnqn: given.hostnqn,
      hostid: given.hostid,
      hostnqnSource: "flag",
      hostidSource: "flag",
    };
  }
  if (given.hostnqn !== undefined) {
    const fromNqn = uuidOfNqn(given.hostnqn);
    if (fromNqn) {
      return {
        hostnqn: given.hostnqn,
        hostid: fromNqn,
        hostnqnSource: "flag",
        hostidSource: "derived from hostnqn",
      };
    }
    if (files.hostid && files.hostnqn === given.hostnqn) {
      return {
        hostnqn: given.hostnqn,
        hostid: files.hostid,
        hostnqnSource: "flag",
        hostidSource: files.hostidSource,
      };
    }
    throw new UsageError(`-q/--hostnqn '${given.hostnqn}' needs its host ID.`, {
      hint: "Pass -I/--hostid UUID too: the kernel pairs each host NQN with one host ID and " +
        "refuses a host NQN sent with another host's ID.",
    });
  }
  if (given.hostid !== undefined) {
    if (files.hostnqn && files.hostid === given.hostid) {
      return {
        hostnqn: files.hostnqn,
        hostid: given.hostid,
        hostnqnSource: files.hostnqnSource,
        hostidSource: "flag",
      };
    }
    throw new UsageError(`-I/--hostid '${given.hostid}' needs its host NQN.`, {
      hint: "Pass -q/--hostnqn NQN too: the kernel pairs each host ID with one host NQN.",
    });
  }
  if (!files.hostnqn) {
    throw new EnvironmentError(
      `No host NQN is configured ('${paths.etcNvme}/hostnqn' is missing).`,
      {
        hint: "Run 'nvmeof hostnqn --generate' once (it writes /etc/nvme/hostnqn and hostid), " +
          "or pass -q/--hostnqn and -I/--hostid.",
      },
    );
  }
  checkNqn(files.hostnqn, files.hostnqnSource);
  if (files.hostid) {
    if (!isUuid(files.hostid)) {
      throw new EnvironmentError(
        `The host ID in ${files.hostidSource} '${files.hostid}' is not a UUID.`,
        {
          hint: "Fix the file (one 8-4-4-4-12 hex UUID), or pass -q/--hostnqn and -I/--hostid.",
        },
      );
    }
    return { hostnqn: files.hostnqn, hostid: files.hostid, ...pick(files) };
  }
  const derived = uuidOfNqn(files.hostnqn);
  if (derived) {
    return {
      hostnqn: files.hostnqn,
      hostid: derived,
      hostnqnSource: files.hostnqnSource,
      hostidSource: "derived from hostnqn",
    };
  }
  throw new EnvironmentError(`No host ID is configured ('${paths.etcNvme}/hostid' is missing).`, {
    hint: "Write the host's UUID to /etc/nvme/hostid (or run 'nvmeof hostnqn --generate'), " +
      "or pass -q/--hostnqn and -I/--hostid.",
  });
}

function pick(f: { hostnqnSource: string; hostidSource: string }) {
  return { hostnqnSource: f.hostnqnSource, hostidSource: f.hostidSource };
}

/** A host ID as libnvme makes one: the DMI product UUID when readable, else a random UUID. */
export function newHostId(paths: FabricsPaths): { hostid: string; source: string } {
  const dmi = `${paths.sysfs}/class/dmi/id/product_uuid`;
  try {
    const u = readText(dmi).trim().toLowerCase();
    if (isUuid(u) && u !== "00000000-0000-0000-0000-000000000000") {
      return { hostid: u, source: dmi };
    }
  } catch {
    // not readable (no DMI, not root): fall back to a random UUID
  }
  return { hostid: crypto.randomUUID(), source: "random" };
}

/** What `generateHostFiles` did to each file. */
export interface GenerateResult {
  hostnqn: string;
  hostid: string;
  written: string[];
  kept: string[];
}

/**
 * Writes /etc/nvme/hostnqn and /etc/nvme/hostid where absent, never overwriting. A new pair
 * shares one UUID; an existing host NQN keeps its UUID for the new host ID.
 */
export async function generateHostFiles(paths: FabricsPaths): Promise<GenerateResult> {
  const files = await readHostFiles(paths, () => undefined);
  const written: string[] = [];
  const kept: string[] = [];
  let hostid = files.hostid;
  let hostnqn = files.hostnqn;
  if (!hostid) {
    hostid = (hostnqn && uuidOfNqn(hostnqn)) || newHostId(paths).hostid;
  }
  if (!hostnqn) hostnqn = UUID_NQN_PREFIX + hostid;
  try {
    await Deno.mkdir(paths.etcNvme, { recursive: true });
    for (
      const [name, value, existed] of [
        ["hostnqn", hostnqn, files.hostnqn !== undefined],
        ["hostid", hostid, files.hostid !== undefined],
      ] as const
    ) {
      const path = `${paths.etcNvme}/${name}`;
      if (existed) {
        kept.push(path);
        continue;
      }
      // createNew: never replace a file that appeared meanwhile. Flushed with its directory: an
      // identity lost to a power cut would come back as a new host the targets do not know.
      {
        using f = await Deno.open(path, { write: true, createNew: true, mode: 0o644 });
        const bytes = new TextEncoder().encode(value + "\n");
        for (let off = 0; off < bytes.length;) off += await f.write(bytes.subarray(off));
        await f.sync();
      }
      using d = await Deno.open(paths.etcNvme, { read: true });
      await d.sync();
      written.push(path);
    }
  } catch (err) {
    const e = errnoOf(err);
    const Cls = e === EACCES || e === EROFS ? EnvironmentError : FailureError;
    throw new Cls(
      `Cannot write the host identity files in '${paths.etcNvme}': ${(err as Error).message}`,
      {
        cause: err,
        hint: e === EACCES ? "Run as root." : "Check that the directory is writable.",
      },
    );
  }
  return { hostnqn, hostid, written, kept };
}
