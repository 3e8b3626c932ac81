/**
 * The live tree in the spec's shape, so that `target show` output fed to `target up` changes
 * nothing (round trip), and conversions to and from nvmetcli's saved JSON. Secrets never appear.
 */
import type { LiveTree } from "../configfs/nvmet.ts";
import { SUBSYSTEM_ATTRS } from "../configfs/nvmet.ts";

const ZERO = /^[0-]*$/;

/** The live tree as a spec document (plain data, ready for YAML or JSON). */
export function treeToSpec(tree: LiveTree): Record<string, unknown> {
  const hosts = tree.hosts.map((h) => ({ nqn: h.nqn }));
  const subsystems = tree.subsystems.map((s) => {
    const out: Record<string, unknown> = {
      nqn: s.nqn,
      allow_any_host: s.attr.allow_any_host === "1",
    };
    if (s.allowed_hosts.length) out.hosts = s.allowed_hosts;
    for (const k of ["serial", "model"] as const) if (s.attr[k]) out[k] = s.attr[k];
    out.namespaces = s.namespaces.map((n) => {
      const ns: Record<string, unknown> = { nsid: n.nsid, device: n.device_path };
      if (n.device_uuid && !ZERO.test(n.device_uuid)) ns.uuid = n.device_uuid;
      if (n.device_nguid && !ZERO.test(n.device_nguid)) ns.nguid = n.device_nguid;
      if (n.buffered_io === "1") ns.buffered_io = true;
      ns.enabled = n.enable;
      return ns;
    });
    return out;
  });
  const ports = tree.ports.map((p) => {
    const a = p.attr;
    const out: Record<string, unknown> = { id: p.id };
    if (a.addr_trtype) out.trtype = a.addr_trtype;
    if (a.addr_adrfam) out.adrfam = a.addr_adrfam;
    if (a.addr_traddr) out.traddr = a.addr_traddr;
    if (a.addr_trsvcid) out.trsvcid = Number(a.addr_trsvcid);
    if (a.addr_treq && a.addr_treq !== "not specified") out.treq = a.addr_treq;
    if (a.addr_tsas && a.addr_trtype === "tcp" && a.addr_tsas !== "none") out.tsas = a.addr_tsas;
    if (a.param_inline_data_size && a.param_inline_data_size !== "-1") {
      out.inline_data_size = Number(a.param_inline_data_size);
    }
    if (a.param_max_queue_size && a.param_max_queue_size !== "-1") {
      out.max_queue_size = Number(a.param_max_queue_size);
    }
    if (a.param_pi_enable === "1") out.pi_enable = true;
    out.subsystems = p.subsystems;
    return out;
  });
  return { hosts, subsystems, ports };
}

/** The live tree as nvmetcli's saved JSON (`nvmetcli save`, facts §4.1), without secrets. */
export function treeToNvmetcli(tree: LiveTree): Record<string, unknown> {
  return {
    hosts: tree.hosts.map((h) => ({ nqn: h.nqn })),
    ports: tree.ports.map((p) => {
      const addr: Record<string, string> = {};
      const param: Record<string, string> = {};
      for (const [f, v] of Object.entries(p.attr)) {
        if (f.startsWith("addr_")) addr[f.slice(5)] = v;
        else if (f.startsWith("param_")) param[f.slice(6)] = v;
      }
      return { portid: p.id, addr, param, referrals: [], subsystems: p.subsystems };
    }),
    subsystems: tree.subsystems.map((s) => ({
      nqn: s.nqn,
      attr: Object.fromEntries(
        ["allow_any_host", ...SUBSYSTEM_ATTRS].filter((k) => s.attr[k] !== undefined).map((
          k,
        ) => [k, s.attr[k]]),
      ),
      allowed_hosts: s.allowed_hosts,
      namespaces: s.namespaces.map((n) => ({
        nsid: n.nsid,
        enable: n.enable ? 1 : 0,
        device: { path: n.device_path, uuid: n.device_uuid, nguid: n.device_nguid },
      })),
    })),
  };
}

type Obj = Record<string, unknown>;

/**
 * Converts nvmetcli's saved JSON into a spec document. Throws Error with the JSON path of what
 * it cannot convert (passthru subsystems, referrals).
 */
export function nvmetcliToSpec(data: unknown): { spec: Record<string, unknown>; notes: string[] } {
  const notes: string[] = [];
  const d = (data ?? {}) as Obj;
  const arr = (v: unknown) => (Array.isArray(v) ? v as Obj[] : []);
  const hosts = arr(d.hosts).map((h, i) => {
    if ((h.dhchap as Obj | undefined)?.key) {
      notes.push(
        `hosts[${i}] has a DH-HMAC-CHAP key; put it in a 0600 file and set dhchap_key_file.`,
      );
    }
    return { nqn: h.nqn };
  });
  const subsystems = arr(d.subsystems).map((s, i) => {
    const attr = (s.attr ?? {}) as Record<string, string>;
    if (arr(s.passthru).length || (s.passthru && !Array.isArray(s.passthru))) {
      notes.push(
        `subsystems[${i}] has passthru settings, which nvmeof does not manage; they were left out.`,
      );
    }
    const out: Obj = { nqn: s.nqn, allow_any_host: attr.allow_any_host === "1" };
    if (arr(s.allowed_hosts).length) out.hosts = s.allowed_hosts;
    for (const k of ["serial", "model", "version", "firmware"]) if (attr[k]) out[k] = attr[k];
    out.namespaces = arr(s.namespaces).map((n) => {
      const dev = (n.device ?? {}) as Record<string, string>;
      const ns: Obj = { nsid: n.nsid, device: dev.path };
      if (dev.uuid && !ZERO.test(dev.uuid)) ns.uuid = dev.uuid;
      if (dev.nguid && !ZERO.test(dev.nguid)) ns.nguid = dev.nguid;
      ns.enabled = Number(n.enable) === 1;
      return ns;
    });
    return out;
  });
  const ports = arr(d.ports).map((p, i) => {
    const addr = (p.addr ?? {}) as Record<string, string>;
    const param = (p.param ?? {}) as Record<string, string>;
    if (arr(p.referrals).length) {
      notes.push(`ports[${i}] has referrals, which nvmeof does not manage; they were left out.`);
    }
    const out: Obj = { id: Number(p.portid) };
    if (addr.trtype) out.trtype = addr.trtype;
    if (addr.adrfam) out.adrfam = addr.adrfam;
    if (addr.traddr) out.traddr = addr.traddr;
    if (addr.trsvcid) out.trsvcid = Number(addr.trsvcid);
    if (addr.treq && addr.treq !== "not specified") out.treq = addr.treq;
    if (addr.tsas && addr.trtype === "tcp" && addr.tsas !== "none") out.tsas = addr.tsas;
    if (param.inline_data_size && param.inline_data_size !== "-1") {
      out.inline_data_size = Number(param.inline_data_size);
    }
    if (param.max_queue_size && param.max_queue_size !== "-1") {
      out.max_queue_size = Number(param.max_queue_size);
    }
    if (param.pi_enable === "1") out.pi_enable = true;
    out.subsystems = p.subsystems ?? [];
    return out;
  });
  return { spec: { hosts, subsystems, ports }, notes };
}
