/** Validates the spec's `hosts` section. */
import { quote } from "../../errors.ts";
import { specEnum, specKeys } from "../schema.ts";
import type { HostSpec } from "../spec.ts";
import { isObj, type Obj, orList, type SpecContext } from "./context.ts";

/** One host: an NQN string, or a mapping with the NQN and its DH-HMAC-CHAP settings. */
export function validateHost(cx: SpecContext, h: unknown, path: string): HostSpec | undefined {
  if (typeof h === "string") {
    const n = cx.nqn(h, path);
    return n ? { nqn: n } : undefined;
  }
  if (!isObj(h)) return void cx.bad(path, "must be a mapping with nqn.", "Write '- nqn: …'.");
  cx.keys(h, path, specKeys("host"));
  const host: HostSpec = { nqn: cx.nqn(h.nqn, `${path}.nqn`) ?? "" };
  const kf = cx.keyFile(h, "dhchap_key_file", path);
  if (kf) host.dhchap_key_file = kf;
  const ckf = cx.keyFile(h, "dhchap_ctrl_key_file", path);
  if (ckf) host.dhchap_ctrl_key_file = ckf;
  if (ckf && !kf) {
    cx.bad(
      `${path}.dhchap_ctrl_key_file`,
      "is set without dhchap_key_file.",
      "Add the host key file too: bidirectional authentication needs both.",
    );
  }
  const hashes = specEnum("host", "dhchap_hash");
  const hash = cx.optStr(h, "dhchap_hash", path, orList(hashes));
  if (hash && !hashes.includes(hash)) {
    cx.bad(
      `${path}.dhchap_hash`,
      `${quote(hash)} is not a DH-HMAC-CHAP hash.`,
      `Use ${orList(hashes)}.`,
    );
  } else if (hash) host.dhchap_hash = hash;
  const groups = specEnum("host", "dhchap_dhgroup");
  const group = cx.optStr(h, "dhchap_dhgroup", path, orList(groups));
  if (group && !groups.includes(group)) {
    cx.bad(
      `${path}.dhchap_dhgroup`,
      `${quote(group)} is not a DH group.`,
      `Use ${orList(groups)}.`,
    );
  } else if (group) host.dhchap_dhgroup = group;
  return host;
}

/** The `hosts` list, each host once. */
export function validateHosts(cx: SpecContext, raw: Obj): HostSpec[] {
  const hosts: HostSpec[] = [];
  cx.list(raw, "hosts", "hosts").forEach((h, i) => {
    const host = validateHost(cx, h, `hosts[${i}]`);
    if (host) hosts.push(host);
  });
  cx.dupes(
    hosts.map((h) => h.nqn || undefined),
    (i) => `hosts[${i}].nqn`,
    "host NQN",
    "List each host once.",
  );
  return hosts;
}
