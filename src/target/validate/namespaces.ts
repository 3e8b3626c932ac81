/** Validates the namespaces of one subsystem of the spec. */
import { fileKind } from "../../configfs/libc_fs.ts";
import { quote } from "../../errors.ts";
import { specKeys, specRange } from "../schema.ts";
import type { NamespaceSpec } from "../spec.ts";
import { normalizeNguid, UUID_RE } from "../values.ts";
import { isObj, type Obj, type SpecContext } from "./context.ts";

/** The namespace's device: an absolute path to a block device or regular file. */
function validateDevice(cx: SpecContext, n: Obj, npath: string): string {
  const device = n.device === undefined
    ? cx.str(n.device, `${npath}.device`, "the path of a block device or regular file") ?? ""
    : cx.pathStr(n, "device", npath, "the path of a block device or regular file") ?? "";
  if (device && cx.checkFiles) {
    const kind = fileKind(device, { follow: true });
    if (kind === undefined) {
      cx.bad(
        `${npath}.device`,
        `device ${quote(device)} does not exist.`,
        "Create it, or fix the path (see lsblk).",
      );
    } else if (kind !== "file" && kind !== "block") {
      cx.bad(
        `${npath}.device`,
        `${quote(device)} is neither a block device nor a regular file.`,
        "Point it at a block device (/dev/…) or an image file.",
      );
    }
  }
  if (device && !device.startsWith("/")) {
    cx.bad(
      `${npath}.device`,
      `${quote(device)} is not an absolute path.`,
      "Write the full path, e.g. /dev/nvme0n1.",
    );
  }
  return device;
}

/** One namespace. */
export function validateNamespace(
  cx: SpecContext,
  n: unknown,
  npath: string,
): NamespaceSpec | undefined {
  if (!isObj(n)) {
    return void cx.bad(
      npath,
      "must be a mapping with nsid and device.",
      "Write '- nsid: 1' and 'device: /dev/…'.",
    );
  }
  cx.keys(n, npath, specKeys("namespace"));
  const nsid = cx.int(n.nsid, `${npath}.nsid`, specRange("namespace", "nsid")) ?? 0;
  const device = validateDevice(cx, n, npath);
  const ns: NamespaceSpec = { nsid, device, enabled: cx.bool(n, "enabled", npath, true) };
  if (n.buffered_io !== undefined) ns.buffered_io = cx.bool(n, "buffered_io", npath, false);
  if (n.ana_grpid !== undefined) {
    ns.ana_grpid = cx.int(n.ana_grpid, `${npath}.ana_grpid`, specRange("namespace", "ana_grpid"));
  }
  if (n.resv_enable !== undefined) ns.resv_enable = cx.bool(n, "resv_enable", npath, false);
  const uuid = cx.optStr(n, "uuid", npath, "a UUID");
  if (uuid !== undefined) {
    if (UUID_RE.test(uuid)) ns.uuid = uuid.toLowerCase();
    else {cx.bad(
        `${npath}.uuid`,
        `${quote(uuid)} is not a UUID.`,
        "Write 8-4-4-4-12 hex digits (uuidgen makes one).",
      );}
  }
  const nguid = cx.optStr(n, "nguid", npath, "an NGUID");
  if (nguid !== undefined) {
    const v = normalizeNguid(nguid);
    if (v) ns.nguid = nguid;
    else {cx.bad(
        `${npath}.nguid`,
        `${quote(nguid)} is not an NGUID.`,
        "Write 32 hex digits ('-' or ':' separators allowed).",
      );}
  }
  return ns;
}

/** The `namespaces` list of the subsystem at `path`, each nsid once. */
export function validateNamespaces(cx: SpecContext, s: Obj, path: string): NamespaceSpec[] {
  const namespaces: NamespaceSpec[] = [];
  cx.list(s, "namespaces", `${path}.namespaces`).forEach((n, j) => {
    const ns = validateNamespace(cx, n, `${path}.namespaces[${j}]`);
    if (ns) namespaces.push(ns);
  });
  cx.dupes(
    namespaces.map((n) => n.nsid || undefined),
    (j) => `${path}.namespaces[${j}].nsid`,
    "nsid",
    "Give each namespace of a subsystem its own nsid.",
  );
  return namespaces;
}
