/**
 * The nvmet configfs tree as a model (nvmetcli's CFSNode idea, drivers/nvme/target/configfs.c):
 * where each object lives, which attribute files it has, and a reader that turns the live tree
 * into plain data. Writes happen in src/target/apply.ts, one planned step at a time.
 *
 * Layout (drivers/nvme/target/configfs.c): hosts/<nqn>/, subsystems/<nqn>/{attr_*, allowed_hosts/<nqn>→hosts/<nqn>,
 * namespaces/<nsid>/{device_*, enable}}, ports/<id>/{addr_*, param_*, subsystems/<nqn>→…}.
 */
import type { ConfigfsIo } from "./io.ts";

/**
 * Paths of nvmet objects, relative to the nvmet root. Ports and namespaces take their directory
 * name: a number for objects nvmeof makes, the live name (`0x2`, `010`) for those it found.
 */
export const nvmetPath = {
  host: (nqn: string): string => `hosts/${nqn}`,
  subsystem: (nqn: string): string => `subsystems/${nqn}`,
  allowedHost: (subnqn: string, hostnqn: string): string =>
    `subsystems/${subnqn}/allowed_hosts/${hostnqn}`,
  namespace: (subnqn: string, nsid: number | string): string =>
    `subsystems/${subnqn}/namespaces/${nsid}`,
  port: (id: number | string): string => `ports/${id}`,
  portLink: (id: number | string, subnqn: string): string => `ports/${id}/subsystems/${subnqn}`,
};

/**
 * The number the kernel reads from a port or namespace directory name, as its kstrtou16/32 with
 * base 0 does: `0x10` is 16, `010` is 8 (octal), `10` is 10; undefined for a name it refuses.
 */
export function kernelNumber(name: string): number | undefined {
  const m = /^\+?(?:0[xX]([0-9a-fA-F]+)|(0[0-7]*)|([1-9][0-9]*))$/.exec(name);
  if (!m) return undefined;
  const n = m[1] !== undefined
    ? parseInt(m[1], 16)
    : m[2] !== undefined
    ? parseInt(m[2], 8)
    : Number(m[3]);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Directories named by kernel numbers, as {name, number}, in number order (then by name). */
function numbered(names: string[]): Array<{ name: string; n: number }> {
  return names.flatMap((name) => {
    const n = kernelNumber(name);
    return n === undefined ? [] : [{ name, n }];
  }).sort((a, b) => a.n - b.n || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Subsystem attributes nvmeof manages, by their name after `attr_`, in write order. */
export const SUBSYSTEM_ATTRS = [
  "version",
  "serial",
  "model",
  "firmware",
  "ieee_oui",
  "cntlid_min",
  "cntlid_max",
] as const;

/** Port attributes, as file names, in the order the kernel wants them written (trtype first: it resets tsas). */
export const PORT_ATTRS = [
  "addr_trtype",
  "addr_adrfam",
  "addr_traddr",
  "addr_trsvcid",
  "addr_treq",
  "addr_tsas",
  "param_inline_data_size",
  "param_max_queue_size",
  "param_pi_enable",
] as const;

/** A namespace as configfs shows it. */
export interface LiveNamespace {
  /** The directory's name: `1`, or as made by hand (`010`, `0x10`). */
  name: string;
  /** The nsid the kernel reads from the name. */
  nsid: number;
  device_path: string;
  device_uuid: string;
  device_nguid: string;
  /** "1"/"0", or undefined on kernels without the attribute. */
  buffered_io?: string;
  enable: boolean;
}

/** A subsystem as configfs shows it. */
export interface LiveSubsystem {
  nqn: string;
  /** `attr_*` files by their name after the prefix (`allow_any_host`, `serial` …). */
  attr: Record<string, string>;
  allowed_hosts: string[];
  namespaces: LiveNamespace[];
}

/** A port as configfs shows it. */
export interface LivePort {
  /** The directory's name: `1`, or as made by hand (`0x2`). */
  name: string;
  /** The port id the kernel reads from the name. */
  id: number;
  /** `addr_*` and `param_*` files by file name; absent files (older kernels) are absent keys. */
  attr: Record<string, string>;
  subsystems: string[];
}

/** A host entry. */
export interface LiveHost {
  nqn: string;
  /** Whether this kernel has DH-HMAC-CHAP attributes on hosts. */
  dhchap_supported: boolean;
  /** Whether a host key is set (the key itself is never read into the model). */
  dhchap_key_set: boolean;
}

/** The whole nvmet tree. */
export interface LiveTree {
  hosts: LiveHost[];
  subsystems: LiveSubsystem[];
  ports: LivePort[];
}

function readIf(io: ConfigfsIo, path: string): string | undefined {
  return io.exists(path) ? io.read(path) : undefined;
}

function listIf(io: ConfigfsIo, path: string): string[] {
  return io.isDir(path) ? io.list(path) : [];
}

/** Reads the live nvmet tree (no secrets). */
export function readTree(io: ConfigfsIo): LiveTree {
  const hosts = listIf(io, "hosts").map((nqn): LiveHost => {
    const key = readIf(io, `${nvmetPath.host(nqn)}/dhchap_key`);
    return { nqn, dhchap_supported: key !== undefined, dhchap_key_set: !!key };
  });
  const subsystems = listIf(io, "subsystems").map((nqn): LiveSubsystem => {
    const dir = nvmetPath.subsystem(nqn);
    const attr: Record<string, string> = {};
    for (const f of io.list(dir)) {
      if (f.startsWith("attr_")) attr[f.slice(5)] = io.read(`${dir}/${f}`);
    }
    const namespaces = numbered(listIf(io, `${dir}/namespaces`))
      .map(({ name, n: nsid }): LiveNamespace => {
        const ns = nvmetPath.namespace(nqn, name);
        const path = io.read(`${ns}/device_path`);
        return {
          name,
          nsid,
          // The kernel shows an unset path as "(null)".
          device_path: path === "(null)" ? "" : path,
          device_uuid: readIf(io, `${ns}/device_uuid`) ?? "",
          device_nguid: readIf(io, `${ns}/device_nguid`) ?? "",
          buffered_io: readIf(io, `${ns}/buffered_io`),
          enable: io.read(`${ns}/enable`) === "1",
        };
      });
    return { nqn, attr, allowed_hosts: listIf(io, `${dir}/allowed_hosts`), namespaces };
  });
  const ports = numbered(listIf(io, "ports"))
    .map(({ name, n: id }): LivePort => {
      const dir = nvmetPath.port(name);
      const attr: Record<string, string> = {};
      for (const f of PORT_ATTRS) {
        const v = readIf(io, `${dir}/${f}`);
        if (v !== undefined) attr[f] = v;
      }
      return { name, id, attr, subsystems: listIf(io, `${dir}/subsystems`) };
    });
  return { hosts, subsystems, ports };
}
