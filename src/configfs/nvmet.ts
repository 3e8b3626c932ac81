/**
 * The nvmet configfs tree as a model (nvmetcli's CFSNode idea, drivers/nvme/target/configfs.c):
 * where each object lives, which attribute files it has, and a reader that turns the live tree
 * into plain data. Writes happen in src/target/apply.ts, one planned step at a time.
 *
 * Layout (facts §3): hosts/<nqn>/, subsystems/<nqn>/{attr_*, allowed_hosts/<nqn>→hosts/<nqn>,
 * namespaces/<nsid>/{device_*, enable}}, ports/<id>/{addr_*, param_*, subsystems/<nqn>→…}.
 */
import type { ConfigfsIo } from "./io.ts";

/** Paths of nvmet objects, relative to the nvmet root. */
export const nvmetPath = {
  host: (nqn: string): string => `hosts/${nqn}`,
  subsystem: (nqn: string): string => `subsystems/${nqn}`,
  allowedHost: (subnqn: string, hostnqn: string): string =>
    `subsystems/${subnqn}/allowed_hosts/${hostnqn}`,
  namespace: (subnqn: string, nsid: number): string => `subsystems/${subnqn}/namespaces/${nsid}`,
  port: (id: number): string => `ports/${id}`,
  portLink: (id: number, subnqn: string): string => `ports/${id}/subsystems/${subnqn}`,
};

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
    const namespaces = listIf(io, `${dir}/namespaces`)
      .map(Number)
      .sort((a, b) => a - b)
      .map((nsid): LiveNamespace => {
        const ns = nvmetPath.namespace(nqn, nsid);
        return {
          nsid,
          device_path: io.read(`${ns}/device_path`),
          device_uuid: readIf(io, `${ns}/device_uuid`) ?? "",
          device_nguid: readIf(io, `${ns}/device_nguid`) ?? "",
          buffered_io: readIf(io, `${ns}/buffered_io`),
          enable: io.read(`${ns}/enable`) === "1",
        };
      });
    return { nqn, attr, allowed_hosts: listIf(io, `${dir}/allowed_hosts`), namespaces };
  });
  const ports = listIf(io, "ports")
    .map(Number)
    .sort((a, b) => a - b)
    .map((id): LivePort => {
      const dir = nvmetPath.port(id);
      const attr: Record<string, string> = {};
      for (const f of PORT_ATTRS) {
        const v = readIf(io, `${dir}/${f}`);
        if (v !== undefined) attr[f] = v;
      }
      return { id, attr, subsystems: listIf(io, `${dir}/subsystems`) };
    });
  return { hosts, subsystems, ports };
}
