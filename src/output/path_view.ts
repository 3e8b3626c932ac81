/**
 * nvmeof's own view of the host's NVMe topology (`nvmeof list --paths`): each subsystem with its
 * iopolicy, its namespaces (with native multipath the shared head device and every path to it:
 * controller, transport, address, controller state, ANA state, I/O timeout) and its controllers.
 */
import type { ControllerAddress, ControllerInfo, SubsystemInfo } from "../fabrics/sysfs.ts";
import { arpWords } from "../net/neighbour.ts";
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
      out.push(`  ${n.name}  nsid ${n.nsid}  ${humanSize(n.size)}${kind}${timeout(n)}`);
      for (const p of n.paths) {
        const ana = (p.ana_state ? `  ${p.ana_state}` : "") + timeout(p);
        const arp = s.controllers.find((c) =>
            c.name === p.controller
          )?.neighbour?.state === "failed"
          ? "  ARP unanswered"
          : "";
        out.push(
          `    ${p.name}  via ${p.controller}  ${p.transport}${
            where(p.address)
          }  ${p.state}${ana}` +
            arp,
        );
      }
    }
    for (const c of s.controllers) {
      out.push(
        `  ${c.name}  ${c.transport}${where(c.address)}  ${c.state}  cntlid ${c.cntlid}` +
          (c.hostnqn ? `  host ${c.hostnqn}` : ""),
      );
      const hint = neighbourHint(c);
      if (hint) out.push(`    ${hint}`);
    }
  }
  return out.join("\n");
}

/** A queue's I/O timeout, as the view says it ("" when sysfs had none). */
function timeout(q: { io_timeout?: number }): string {
  return q.io_timeout === undefined ? "" : `  io_timeout ${q.io_timeout} ms`;
}

/** What a controller that is not live has in the ARP table, and what that means. */
function neighbourHint(c: ControllerInfo): string | undefined {
  const n = c.neighbour;
  if (!n) return undefined;
  return n.state === "failed"
    ? `${arpWords(n)}: the link to the target is down or blocked, so every reconnect fails ` +
      "before it reaches the target ('nvmeof doctor' shows how to check the link)"
    : `${arpWords(n)}: the link answers, so look at the target side ('nvmeof doctor -a ` +
      `${n.address} …' probes it); if the storage server's NIC went down and up, its RDMA ` +
      "listener may be stale (Soft-RoCE): run 'nvmeof doctor' on the storage server";
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
