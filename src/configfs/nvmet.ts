/**
 * The nvmet configfs tree as a model (nvmetcli's CFSNode idea, drivers/nvme/target/configfs.c):
 * where each object lives, which attribute files it has, and a reader that turns the live tree
 * into plain data. Writes happen in src/target/apply.ts, one planned step at a time.
 *
 * Layout (drivers/nvme/target/configfs.c): discovery_nqn, hosts/<nqn>/{dhchap_*}, subsystems/<nqn>/{attr_*,
 * allowed_hosts/<nqn>→hosts/<nqn>, namespaces/<nsid>/{device_*, ana_grpid, resv_enable, enable}},
 * ports/<id>/{addr_*, param_*, subsystems/<nqn>→…, ana_groups/<grpid>/ana_state,
 * referrals/<name>/{addr_*, enable}}.
 */
import { ENOENT, ENOTDIR } from "../errno.ts";
import { errnoOf, NativeError } from "../errors.ts";
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
  anaGroup: (port: number | string, grpid: number | string): string =>
    `ports/${port}/ana_groups/${grpid}`,
  referral: (port: number | string, name: string): string => `ports/${port}/referrals/${name}`,
};

/**
 * The ANA group every port has from its creation (the kernel makes `ana_groups/1` itself and
 * refuses to remove it); namespaces belong to it unless they name another.
 */
export const DEFAULT_ANA_GROUP = 1;
/** The transports a port of nvmeof's target listens on (its `addr_trtype`). */
export const PORT_TRTYPES = ["rdma", "tcp", "loop"] as const;
/** The highest ANA group id nvmet takes (NVMET_MAX_ANAGRPS). */
export const MAX_ANA_GROUP = 128;
/**
 * The states an ANA group can be in, as `ana_state` reads and takes them (the host's sysfs
 * `ana_state` of a path names them alike).
 */
export const ANA_STATES = [
  "optimized",
  "non-optimized",
  "inaccessible",
  "persistent-loss",
  "change",
] as const;
/** An ANA state. */
export type AnaState = typeof ANA_STATES[number];
/** The ANA states in which a path carries I/O. */
export const USABLE_ANA_STATES: ReadonlySet<string> = new Set<AnaState>([
  "optimized",
  "non-optimized",
]);

/**
 * Attributes some kernels lack, by file name: the first Linux that has them (and the option it
 * needs), for "needs Linux ≥ X" messages. Debian's 6.1 was probed in the lab: it has attr_qid_max,
 * attr_pi_enable, ana_grpid and ana_groups, and none of these.
 */
export const ATTRIBUTE_SINCE: Record<string, string> = {
  attr_firmware: "Linux 6.2",
  attr_ieee_oui: "Linux 6.2",
  addr_tsas: "Linux 6.7",
  param_max_queue_size: "Linux 6.9",
  resv_enable: "Linux 6.13",
  dhchap_key: "a kernel built with CONFIG_NVME_TARGET_AUTH (Linux ≥ 6.0)",
  dhchap_ctrl_key: "a kernel built with CONFIG_NVME_TARGET_AUTH (Linux ≥ 6.0)",
  dhchap_hash: "a kernel built with CONFIG_NVME_TARGET_AUTH (Linux ≥ 6.0)",
  dhchap_dhgroup: "a kernel built with CONFIG_NVME_TARGET_AUTH (Linux ≥ 6.0)",
};

/** Referral attributes, as file names, in write order (all before `enable`). */
export const REFERRAL_ATTRS = [
  "addr_trtype",
  "addr_adrfam",
  "addr_traddr",
  "addr_trsvcid",
  "addr_portid",
  "addr_treq",
] as const;

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
  "qid_max",
  "pi_enable",
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
  /** The namespace's ANA group ("1" unless set), or undefined on kernels without ANA. */
  ana_grpid?: string;
  /** "1"/"0", or undefined on kernels without reservations (before Linux 6.13). */
  resv_enable?: string;
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
  /** The port's ANA groups in id order (group 1 always, on kernels with ANA). */
  ana_groups?: LiveAnaGroup[];
  /** The port's referrals (other discovery controllers its discovery log lists), by name. */
  referrals?: LiveReferral[];
}

/** An ANA group of a port. */
export interface LiveAnaGroup {
  /** The directory's name. */
  name: string;
  /** The group id the kernel reads from the name. */
  id: number;
  /** `ana_state`: optimized, non-optimized, inaccessible, persistent-loss or change. */
  state: string;
}

/** A referral of a port. */
export interface LiveReferral {
  /** The directory's name (free text). */
  name: string;
  /** `addr_*` files by file name. */
  attr: Record<string, string>;
  enable: boolean;
}

/** A host entry. */
export interface LiveHost {
  nqn: string;
  /** Whether this kernel has DH-HMAC-CHAP attributes on hosts. */
  dhchap_supported: boolean;
  /** Whether a host key is set (the key itself is never read into the model). */
  dhchap_key_set: boolean;
  /** Whether a controller key is set (bidirectional authentication; never read into the model). */
  dhchap_ctrl_key_set?: boolean;
  /** `dhchap_hash` and `dhchap_dhgroup`, which are not secrets; undefined without the files. */
  dhchap_hash?: string;
  dhchap_dhgroup?: string;
}

/** The whole nvmet tree. */
export interface LiveTree {
  /** The root's `discovery_nqn` (Linux ≥ 5.18); absent when not read or not there. */
  discovery_nqn?: string;
  hosts: LiveHost[];
  subsystems: LiveSubsystem[];
  ports: LivePort[];
}

/** Whether an error says the path is not there (or not a directory). */
function absent(err: unknown): boolean {
  const n = err instanceof NativeError ? err.errno : errnoOf(err);
  return n === ENOENT || n === ENOTDIR;
}

// One call per attribute or directory, not a look before it: the tree of a storage server for
// hundreds of hosts is tens of thousands of them, each a system call into configfs.
function listIf(io: ConfigfsIo, path: string): string[] {
  try {
    return io.list(path);
  } catch (err) {
    if (absent(err)) return [];
    throw err;
  }
}

/**
 * Makes `obj[key]` a value read when it is first looked at (and kept), or set. A plan looks at a
 * few of the attributes a tree holds (a no-op `up` of 64 subsystems with 256 namespaces at 770 of
 * about 2500), and reading the others was most of its time in the lab guest.
 */
function deferred<T extends object, K extends keyof T>(obj: T, key: K, read: () => T[K]): void {
  const settle = (value: T[K]) =>
    Object.defineProperty(obj, key, {
      value,
      enumerable: true,
      configurable: true,
      writable: true,
    });
  Object.defineProperty(obj, key, {
    enumerable: true,
    configurable: true,
    get: () => {
      const value = read();
      settle(value);
      return value;
    },
    set: settle,
  });
}

/**
 * Reads the live nvmet tree (no secrets). The objects and links are read now; a subsystem's
 * attributes and a namespace's beyond its device_path and enable are read when first looked at
 * (`deferred`), so look at the tree before changing what it describes. `outline` reads what a view
 * of the tree needs and no more (metrics read it at every collection, where the whole tree is
 * thousands of files): no host entries, of a subsystem's attributes only allow_any_host, of a
 * namespace only its device_path and enable (the other namespace fields are empty); ports whole.
 * Never plan from an outline.
 */
export function readTree(io: ConfigfsIo, part: "whole" | "outline" = "whole"): LiveTree {
  const outline = part === "outline";
  // A host's attributes are the kernel's: one built without DH-HMAC-CHAP gives no host the dhchap_*
  // files, so the first host's answer is every host's (one read for all of them then).
  let dhchap: boolean | undefined;
  const hosts = (outline ? [] : listIf(io, "hosts")).map((nqn): LiveHost => {
    const dir = nvmetPath.host(nqn);
    const key = dhchap === false ? undefined : io.readIf(`${dir}/dhchap_key`);
    dhchap ??= key !== undefined;
    const host: LiveHost = { nqn, dhchap_supported: key !== undefined, dhchap_key_set: !!key };
    if (key === undefined) return host;
    const ctrl = io.readIf(`${dir}/dhchap_ctrl_key`);
    if (ctrl !== undefined) host.dhchap_ctrl_key_set = !!ctrl;
    const hash = io.readIf(`${dir}/dhchap_hash`);
    if (hash !== undefined) host.dhchap_hash = hash;
    const group = io.readIf(`${dir}/dhchap_dhgroup`);
    if (group !== undefined) host.dhchap_dhgroup = group;
    return host;
  });
  const subsystems = listIf(io, "subsystems").map((nqn): LiveSubsystem => {
    const dir = nvmetPath.subsystem(nqn);
    const attr: Record<string, string> = {};
    if (outline) attr.allow_any_host = io.read(`${dir}/attr_allow_any_host`);
    else {
      for (const f of io.list(dir)) {
        if (f.startsWith("attr_")) deferred(attr, f.slice(5), () => io.read(`${dir}/${f}`));
      }
    }
    const namespaces = numbered(listIf(io, `${dir}/namespaces`))
      .map(({ name, n: nsid }): LiveNamespace => {
        const ns = nvmetPath.namespace(nqn, name);
        const path = io.read(`${ns}/device_path`);
        // The kernel shows an unset path as "(null)".
        const device_path = path === "(null)" ? "" : path;
        if (outline) {
          const enable = io.read(`${ns}/enable`) === "1";
          return { name, nsid, device_path, device_uuid: "", device_nguid: "", enable };
        }
        const live: LiveNamespace = {
          name,
          nsid,
          device_path,
          device_uuid: "",
          device_nguid: "",
          buffered_io: undefined,
          ana_grpid: undefined,
          resv_enable: undefined,
          enable: io.read(`${ns}/enable`) === "1",
        };
        deferred(live, "device_uuid", () => io.readIf(`${ns}/device_uuid`) ?? "");
        deferred(live, "device_nguid", () => io.readIf(`${ns}/device_nguid`) ?? "");
        deferred(live, "buffered_io", () => io.readIf(`${ns}/buffered_io`));
        deferred(live, "ana_grpid", () => io.readIf(`${ns}/ana_grpid`));
        deferred(live, "resv_enable", () => io.readIf(`${ns}/resv_enable`));
        return live;
      });
    return { nqn, attr, allowed_hosts: listIf(io, `${dir}/allowed_hosts`), namespaces };
  });
  const ports = numbered(listIf(io, "ports"))
    .map(({ name, n: id }): LivePort => {
      const dir = nvmetPath.port(name);
      const attr: Record<string, string> = {};
      for (const f of PORT_ATTRS) {
        const v = io.readIf(`${dir}/${f}`);
        if (v !== undefined) attr[f] = v;
      }
      const ana_groups = numbered(listIf(io, `${dir}/ana_groups`)).map(({ name: g, n }) => ({
        name: g,
        id: n,
        state: io.read(`${nvmetPath.anaGroup(name, g)}/ana_state`),
      }));
      const referrals = listIf(io, `${dir}/referrals`).sort().map((r): LiveReferral => {
        const rdir = nvmetPath.referral(name, r);
        const rattr: Record<string, string> = {};
        for (const f of REFERRAL_ATTRS) {
          const v = io.readIf(`${rdir}/${f}`);
          if (v !== undefined) rattr[f] = v;
        }
        return { name: r, attr: rattr, enable: io.readIf(`${rdir}/enable`) === "1" };
      });
      return {
        name,
        id,
        attr,
        subsystems: listIf(io, `${dir}/subsystems`),
        ana_groups,
        referrals,
      };
    });
  const tree: LiveTree = { hosts, subsystems, ports };
  const discovery = io.readIf("discovery_nqn");
  if (discovery !== undefined) tree.discovery_nqn = discovery;
  return tree;
}
