/**
 * The live tree in the spec's shape, so that `target show` output fed to `target up` changes
 * nothing (round trip). Secrets never appear. nvmetcli's format is in nvmetcli.ts.
 */
import type { LiveTree } from "../configfs/nvmet.ts";

/** An all-zero UUID or NGUID: the kernel's "not set". */
export const ZERO = /^[0-]*$/;

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
