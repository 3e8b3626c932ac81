/**
 * The live tree in the spec's shape, so that `target show` output fed to `target up` changes
 * nothing (round trip). Secrets never appear. nvmetcli's format is in nvmetcli.ts.
 */
import { DEFAULT_ANA_GROUP, type LiveReferral, type LiveTree } from "../configfs/nvmet.ts";

/** An all-zero UUID or NGUID: the kernel's "not set". */
export const ZERO = /^[0-]*$/;

/** Kernel defaults `target show` leaves out: a spec without them changes nothing. */
const SUBSYSTEM_DEFAULTS: Record<string, string> = {
  version: "1.3",
  model: "Linux",
  cntlid_min: "1",
  cntlid_max: "65519",
  qid_max: "128",
  pi_enable: "0",
  ieee_oui: "0x000000",
};

/** The live tree as a spec document (plain data, ready for YAML or JSON). */
export function treeToSpec(tree: LiveTree): Record<string, unknown> {
  const hosts = tree.hosts.map((h) => {
    const out: Record<string, unknown> = { nqn: h.nqn };
    // Keys are never read; hash and group are shown only with a key (their defaults otherwise).
    if (h.dhchap_key_set && h.dhchap_hash) out.dhchap_hash = h.dhchap_hash;
    if (h.dhchap_key_set && h.dhchap_dhgroup) out.dhchap_dhgroup = h.dhchap_dhgroup;
    return out;
  });
  const subsystems = tree.subsystems.map((s) => {
    const out: Record<string, unknown> = {
      nqn: s.nqn,
      allow_any_host: s.attr.allow_any_host === "1",
    };
    if (s.allowed_hosts.length) out.hosts = s.allowed_hosts;
    for (const k of ["serial", "model", "version", "firmware", "ieee_oui"] as const) {
      const v = s.attr[k]?.trim();
      if (v && v !== SUBSYSTEM_DEFAULTS[k]) out[k] = v;
    }
    for (const k of ["cntlid_min", "cntlid_max", "qid_max"] as const) {
      const v = s.attr[k];
      if (v && v !== SUBSYSTEM_DEFAULTS[k]) out[k] = Number(v);
    }
    if (s.attr.pi_enable === "1") out.pi_enable = true;
    out.namespaces = s.namespaces.map((n) => {
      const ns: Record<string, unknown> = { nsid: n.nsid, device: n.device_path };
      if (n.device_uuid && !ZERO.test(n.device_uuid)) ns.uuid = n.device_uuid;
      if (n.device_nguid && !ZERO.test(n.device_nguid)) ns.nguid = n.device_nguid;
      if (n.buffered_io === "1") ns.buffered_io = true;
      if (n.ana_grpid && n.ana_grpid !== String(DEFAULT_ANA_GROUP)) {
        ns.ana_grpid = Number(n.ana_grpid);
      }
      if (n.resv_enable === "1") ns.resv_enable = true;
      ns.enabled = n.enable;
      return ns;
    });
    return out;
  });
  const ports = tree.ports.map((p) => {
    const a = p.attr;
    const out: Record<string, unknown> = { id: p.id, ...addressToSpec(a) };
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
    // Group 1 is every port's own; it is shown only when it is not in its default state.
    const groups = (p.ana_groups ?? []).filter((g) =>
      g.id !== DEFAULT_ANA_GROUP || g.state !== "optimized"
    );
    if (groups.length) out.ana_groups = groups.map((g) => ({ id: g.id, state: g.state }));
    if (p.referrals?.length) out.referrals = p.referrals.map(referralToSpec);
    return out;
  });
  return { hosts, subsystems, ports };
}

/** A port's or referral's address attributes (addr_trtype…addr_trsvcid) in the spec's shape. */
function addressToSpec(a: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (a.addr_trtype) out.trtype = a.addr_trtype;
  if (a.addr_adrfam) out.adrfam = a.addr_adrfam;
  if (a.addr_traddr) out.traddr = a.addr_traddr;
  if (a.addr_trsvcid) out.trsvcid = Number(a.addr_trsvcid);
  return out;
}

/** A live referral in the spec's shape. */
function referralToSpec(r: LiveReferral): Record<string, unknown> {
  const a = r.attr;
  const out: Record<string, unknown> = { name: r.name, ...addressToSpec(a) };
  if (a.addr_portid && a.addr_portid !== "0") out.portid = Number(a.addr_portid);
  if (a.addr_treq && a.addr_treq !== "not specified") out.treq = a.addr_treq;
  if (!r.enable) out.enabled = false;
  return out;
}
