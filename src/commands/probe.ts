/**
 * `nvmeof probe`: speak NVMe over RDMA from user space (no nvme-rdma module, no block device):
 * the discovery log, or a controller's identity and namespaces, with the time of each step.
 */
import type { hostPort } from "../net/address.ts";
import type { CommandDetails, CommandResult, OptionSpec, RunContext } from "../cli/command.ts";
import type { logToText } from "../fabrics/discovery_log.ts";
import {
  controllerFromFlags,
  HOST_ID_FLAGS,
  TARGET_FLAGS,
  TIMEOUT_FLAG,
} from "../cli/nvme_flags.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";

export const PROBE_OPTIONS = {
  ...TARGET_FLAGS,
  nqn: {
    type: "string",
    short: "n",
    value: "NQN",
    description: "Subsystem to identify (default: read the discovery log)",
  },
  ...HOST_ID_FLAGS,
  timeout: TIMEOUT_FLAG,
} satisfies Record<string, OptionSpec>;

function text(
  d: Record<string, unknown>,
  logText: typeof logToText,
  at: typeof hostPort,
): string {
  const lines: string[] = [];
  const c = d.controller as Record<string, unknown> | undefined;
  if (c) {
    lines.push(
      `subsystem  ${d.subnqn}`,
      `target     ${at(String(d.traddr), String(d.trsvcid))} (cntlid ${d.cntlid})`,
    );
    for (
      const k of [
        "model",
        "serial",
        "firmware",
        "version",
        "mdts_bytes",
        "maxcmd",
        "mqes",
        "kas",
        "ioccsz",
        "icdoff",
      ]
    ) {
      lines.push(`${k.padEnd(10)} ${c[k]}`);
    }
    lines.push(`${"sgls".padEnd(10)} ${(c.sgl_support as string[]).join(", ")}`);
    for (const n of d.namespaces as Record<string, unknown>[]) {
      lines.push(
        `namespace  ${n.nsid}: ${n.nsze} blocks × ${n.lba_size} B = ${n.size_bytes} bytes`,
      );
    }
  }
  const log = d.discovery_log as Parameters<typeof logToText>[0] | undefined;
  if (log) lines.push(logText(log).trimEnd());
  lines.push("steps:");
  for (const s of d.steps as { step: string; ms: number }[]) {
    lines.push(`  ${s.ms.toFixed(3).padStart(9)} ms  ${s.step}`);
  }
  return lines.join("\n") + "\n";
}

export const probeCommand: CommandDetails = {
  description: `
Connects the admin queue itself over RDMA-CM (NVMe/RDMA private data: qid 0, hrqsize 32,
hsqsize 31), sends Fabrics Connect with the connect data in registered memory the target
RDMA-READs, enables the controller (Property Set CC.EN, wait CSTS.RDY), and reads into
registered memory the target RDMA-WRITEs. Without -n: the discovery log of
${DISCOVERY_NQN} (-o json prints nvme-cli's keys, as 'nvmeof discover'). With -n: model,
serial, firmware, MDTS, queue limits, SGL support and every active namespace's size and block
size. Ends with a clean shutdown (CC.SHN) and disconnect, and lists the time of each step.
Needs no nvme-rdma module and creates no block device. A refused Connect prints the decoded
NVMe status (0x184 host not allowed, 0x182 unknown subsystem, …).`,
  options: PROBE_OPTIONS,
  examples: [
    "nvmeof probe -a 10.77.0.1                               # discovery log",
    "nvmeof probe -a 10.77.0.1 -n nqn.2024-01.io.example:disk1",
    "nvmeof probe -a 10.77.0.1 -n nqn.2024-01.io.example:disk1 -q nqn.2024-01.io.example:h1 -o json",
  ],
  async run(ctx: RunContext): Promise<CommandResult> {
    const { logToNvmeCli, logToText } = await import("../fabrics/discovery_log.ts");
    const { Controller } = await import("../nvme/controller.ts");
    const { mdtsBytes, sglSupport } = await import("../nvme/identify.ts");
    const { Canceller } = await import("../wait.ts");
    const { hostPort } = await import("../net/address.ts");
    const v = ctx.values;
    const subnqn = typeof v.nqn === "string" ? v.nqn : DISCOVERY_NQN;
    const target = await controllerFromFlags(v, subnqn);
    using cancel = new Canceller().onSignals();
    const o = { ...target, cancel };
    const ctrl = await Controller.connect(o);
    try {
      await ctrl.enable();
      if (subnqn === DISCOVERY_NQN) {
        const log = await ctrl.discoveryLog();
        await ctrl.shutdown();
        const data = { ...logToNvmeCli(log), steps: ctrl.steps };
        return {
          data,
          text: () => text({ discovery_log: log, steps: ctrl.steps }, logToText, hostPort),
        };
      }
      const ic = await ctrl.identifyController();
      const nsids = await ctrl.activeNamespaces();
      const namespaces = [];
      for (const nsid of nsids) {
        const ns = await ctrl.identifyNamespace(nsid);
        namespaces.push({
          nsid,
          nsze: Number(ns.nsze),
          ncap: Number(ns.ncap),
          lba_size: ns.lbaSize,
          size_bytes: Number(ns.nsze) * ns.lbaSize,
          nguid: ns.nguid,
        });
      }
      await ctrl.keepAlive();
      await ctrl.shutdown();
      const data = {
        traddr: o.host,
        trsvcid: o.port,
        subnqn,
        hostnqn: o.hostnqn,
        cntlid: ctrl.cntlid,
        controller: {
          model: ic.mn,
          serial: ic.sn,
          firmware: ic.fr,
          version: ctrl.version,
          vid: ic.vid,
          ieee: ic.ieee,
          mdts: ic.mdts,
          mdts_bytes: mdtsBytes(ic.mdts, ctrl.cap) ?? "unlimited",
          maxcmd: ic.maxcmd,
          mqes: ctrl.cap?.mqes,
          cap_timeout_ms: ctrl.cap?.timeoutMs,
          nn: ic.nn,
          kas: ic.kas,
          sqes: ic.sqes,
          cqes: ic.cqes,
          sgls: ic.sgls,
          sgl_support: sglSupport(ic.sgls),
          ioccsz: ic.ioccsz,
          iorcsz: ic.iorcsz,
          icdoff: ic.icdoff,
          msdbd: ic.msdbd,
          subnqn: ic.subnqn,
        },
        namespaces,
        steps: ctrl.steps,
      };
      return { data, text: (d) => text(d as Record<string, unknown>, logToText, hostPort) };
    } finally {
      ctrl.close();
    }
  },
};
