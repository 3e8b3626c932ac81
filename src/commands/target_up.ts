/**
 * `nvmeof target up`: make nvmet match a spec file or the one-line form (src/target/up.ts).
 */
import type { CommandDetails, CommandResult, OptionValues, RunContext } from "../cli/command.ts";
import { dryRunFlag, specFlag } from "../cli/target_flags.ts";
import { UsageError } from "../errors.ts";
import type { OneLineInput } from "../target/one_line.ts";
import { PORT_TRTYPES } from "../configfs/nvmet.ts";

/** Flags of the one-line form besides --nqn. */
const ONE_LINE_ONLY = [
  "device",
  "traddr",
  "trsvcid",
  "trtype",
  "allow-host",
  "allow-any-host",
  "nsid",
  "port-id",
];

/** The one-line form's flags, checked for what it needs. */
function oneLineInput(v: OptionValues): OneLineInput {
  const hosts = (v["allow-host"] as string[] | undefined) ?? [];
  const any = v["allow-any-host"] === true;
  if (!v.device) {
    throw new UsageError("The one-line form needs --device.", {
      hint:
        "Example: nvmeof target up --nqn NQN --device /dev/nvme0n1 --traddr 192.168.100.10 --allow-host HOSTNQN",
    });
  }
  const trtype = (v.trtype as string | undefined) ?? "rdma";
  if (!v.traddr && trtype !== "loop") {
    throw new UsageError("The one-line form needs --traddr.", {
      hint: "Give the address to listen on, e.g. --traddr 192.168.100.10.",
    });
  }
  if (hosts.length === 0 && !any) {
    throw new UsageError(
      "Say which hosts may connect: --allow-host HOSTNQN (repeatable) or --allow-any-host.",
      {
        hint: "A host's NQN is in its /etc/nvme/hostnqn.",
      },
    );
  }
  if (hosts.length && any) {
    throw new UsageError("--allow-host and --allow-any-host exclude each other.", {
      hint: "Use one of them.",
    });
  }
  return {
    nqn: v.nqn,
    device: v.device as string,
    nsid: v.nsid as string | undefined,
    trtype,
    traddr: v.traddr as string | undefined,
    trsvcid: (v.trsvcid as string | undefined) ?? (trtype === "loop" ? undefined : "4420"),
    portId: v["port-id"] as string | undefined,
    hosts,
    allowAnyHost: any,
  };
}

async function upRun(ctx: RunContext): Promise<CommandResult> {
  const { versioned } = await import("../output/contract.ts");
  const { planText } = await import("../target/report.ts");
  const { targetUp } = await import("../target/up.ts");
  const v = ctx.values;
  const oneLine = v.nqn !== undefined;
  if (oneLine && v.file !== undefined) {
    throw new UsageError("Give either -f FILE or the one-line form (--nqn …), not both.", {
      hint: "Run 'nvmeof target up --help'.",
    });
  }
  if (!oneLine) {
    for (const f of ONE_LINE_ONLY) {
      if (v[f] !== undefined) {
        throw new UsageError(`--${f} belongs to the one-line form, which needs --nqn.`, {
          hint: "Add --nqn NQN, or put it in the spec file.",
        });
      }
    }
  }
  const data = await targetUp({
    file: v.file as string | undefined,
    oneLine: oneLine ? oneLineInput(v) : undefined,
    prune: v.prune === true,
    allowEmpty: v["allow-empty"] === true,
    verbose: ctx.global.verbose,
  }, {
    configfs: ctx.global.configfs,
    dryRun: v["dry-run"] === true,
    force: v.force === true,
    note: ctx.note,
    env: ctx.env?.target,
  });
  const c = data.summary!;
  return {
    data: versioned(data),
    text: planText(
      "apply the spec",
      `No changes: configfs already matches the spec (${c.subsystems} subsystem(s), ${c.namespaces} namespace(s), ${c.ports} port(s)).`,
      { verbose: ctx.global.verbose },
    ),
  };
}

/** `nvmeof target up`. */
export const targetUpCommand: CommandDetails = {
  description: `
Reads the spec (YAML or JSON), validates all of it, then reconciles the live nvmet tree with it
in the kernel's order (hosts, subsystems, namespaces, ports, links). A second run changes nothing.
If the kernel refuses a step, everything this run changed is put back. Loads nvmet and the
transport modules and mounts configfs when they are missing. Objects the spec does not mention
are left alone unless --prune; --prune refuses, unless --force, to remove a port or subsystem
hosts are still connected to (see 'nvmeof target down --help'). An empty spec (a truncated file)
with --prune is refused unless --allow-empty.

The one-line form covers one subsystem with one namespace on one port:
  --nqn NQN --device DEV --traddr ADDR [--trsvcid 4420] [--trtype rdma]
  (--allow-host HOSTNQN… | --allow-any-host)

Spec example:
  hosts:
    - nqn: nqn.2014-08.org.nvmexpress:uuid:0c1e5a8e-7c2b-4a53-9a5e-1f1f3f1f2a01
  subsystems:
    - nqn: nqn.2026-10.pk.nextgen:storage-pool-1
      hosts: [nqn.2014-08.org.nvmexpress:uuid:0c1e5a8e-7c2b-4a53-9a5e-1f1f3f1f2a01]
      namespaces:
        - nsid: 1
          device: /dev/nvme0n1
  ports:
    - id: 1
      trtype: rdma
      traddr: 192.168.100.10
      trsvcid: 4420
      subsystems: [nqn.2026-10.pk.nextgen:storage-pool-1]`,
  options: {
    ...specFlag,
    ...dryRunFlag,
    force: {
      type: "boolean",
      description: "With --prune: remove ports and subsystems even while hosts are connected",
    },
    prune: {
      type: "boolean",
      description: "Also remove objects and links the spec does not mention",
    },
    "allow-empty": {
      type: "boolean",
      description: "With --prune: accept an empty spec, which removes everything",
    },
    nqn: {
      type: "string",
      short: "n",
      value: "NQN",
      description: "One-line form: the subsystem NQN",
    },
    device: {
      type: "string",
      value: "DEV",
      description: "One-line form: block device or file of namespace 1",
    },
    nsid: { type: "string", value: "N", description: "One-line form: namespace id (default 1)" },
    traddr: {
      type: "string",
      short: "a",
      value: "ADDR",
      description: "One-line form: address to listen on",
    },
    trsvcid: {
      type: "string",
      short: "s",
      value: "PORT",
      description: "One-line form: service id (default 4420)",
    },
    trtype: {
      type: "string",
      short: "t",
      value: "TYPE",
      description: "One-line form: rdma, tcp or loop (default rdma)",
      choices: PORT_TRTYPES,
    },
    "port-id": {
      type: "string",
      value: "ID",
      description:
        "One-line form: port id (default: the port with that address, else the lowest free)",
    },
    "allow-host": {
      type: "string",
      multiple: true,
      value: "HOSTNQN",
      description: "One-line form: a host allowed to connect",
    },
    "allow-any-host": {
      type: "boolean",
      description: "One-line form: let any host connect (prints a warning)",
    },
  },
  examples: [
    "nvmeof target up -f /etc/nvmeof/target.yaml   # apply a spec",
    "nvmeof target up --dry-run                     # show the configfs steps only",
    "nvmeof target up --nqn nqn.2026-10.com.example:pool1 --device /dev/nvme0n1 \\\n      --traddr 192.168.100.10 --allow-host nqn.2014-08.org.nvmexpress:uuid:0c1e5a8e-7c2b-4a53-9a5e-1f1f3f1f2a01",
    "nvmeof target up -f target.yaml --prune -o json   # also remove what the spec omits",
  ],
  run: upRun,
};
