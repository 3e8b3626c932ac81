/**
 * nvmeof's own view of the host's NVMe topology (`nvmeof list --paths`): each subsystem with its
 * iopolicy, its namespaces (with native multipath the shared head device and every path to it:
 * controller, transport, address, controller state, ANA state) and its controllers.
 */
import type { ControllerAddress, SubsystemInfo } from "../fabrics/sysfs.ts";
import { humanSize } from "./render.ts";

function where(a: ControllerAddress): string {
  const at = a.traddr ? ` ${a.traddr}${a.trsvcid ? ":" + a.trsvcid : ""}` : "";
  return at + (a.host_traddr ? ` from ${a.host_traddr}` : "");
}

/** The text of `nvmeof list --paths`. */
export function pathViewText(d: { subsystems: SubsystemInfo[] }): string {
  if (d.subsystems.length === 0) return "no NVMe subsystems";
  const out: string[] = [];
  for (const s of d.subsystems) {
    const tags = [
      ...(s.subsystype ? [`(${s.subsystype})`] : []),
      ...(s.iopolicy && s.multipath ? [`iopolicy ${s.iopolicy}`] : []),
    ];
    out.push(`${s.name}  ${s.subsysnqn}${tags.length ? "  " + tags.join("  ") : ""}`);
    for (const n of s.namespaces) {
      const kind = s.multipath ? `  multipath head, ${plural(n.paths.length, "path")}` : "";
      out.push(`  ${n.name}  nsid ${n.nsid}  ${humanSize(n.size)}${kind}`);
      for (const p of n.paths) {
        const ana = p.ana_state ? `  ${p.ana_state}` : "";
        out.push(
          `    ${p.name}  via ${p.controller}  ${p.transport}${where(p.address)}  ${p.state}${ana}`,
        );
      }
    }
    for (const c of s.controllers) {
      out.push(
        `  ${c.name}  ${c.transport}${where(c.address)}  ${c.state}  cntlid ${c.cntlid}` +
          (c.hostnqn ? `  host ${c.hostnqn}` : ""),
      );
    }
  }
  return out.join("\n");
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
