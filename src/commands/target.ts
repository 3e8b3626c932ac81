/**
 * `nvmeof target up / down / show / check / import`: the storage server's side, declaratively.
 */
import type { CommandDetails, CommandResult, OptionValues, RunContext } from "../cli/command.ts";
import type { ConfigfsIo } from "../configfs/io.ts";
import { type LiveTree, readTree } from "../configfs/nvmet.ts";
import { FailureError, UsageError } from "../errors.ts";
import { applyPlan } from "../target/apply.ts";
import { kernelSourceOptions, kernelSources, refuseWhileConnected } from "../target/connected.ts";
import { lockTarget, openNvmet, requireRoot, standinMode } from "../target/env.ts";
import {
  checkPruneByEmptySpec,
  describeStep,
  planDown,
  planUp,
  type Step,
  stepData,
} from "../target/plan.ts";
import { specEnum } from "../target/schema.ts";
import { loadNvmetcliFile, nvmetcliToSpec, treeToNvmetcli, treeToSpec } from "../target/show.ts";
import {
  DEFAULT_SPEC_FILE,
  isIpv4,
  isIpv6,
  loadSpecFile,
  SpecError,
  type TargetSpec,
  validateSpec,
} from "../target/spec.ts";

const EMPTY: LiveTree = { hosts: [], subsystems: [], ports: [] };

function counts(spec: TargetSpec) {
  return {
    hosts: spec.hosts.length,
    subsystems: spec.subsystems.length,
    namespaces: spec.subsystems.reduce((n, s) => n + s.namespaces.length, 0),
    ports: spec.ports.length,
  };
}

function warnings(spec: TargetSpec): string[] {
  return spec.subsystems.filter((s) => s.allow_any_host).map((s) =>
    `warning: subsystem '${s.nqn}' allows any host to connect (allow_any_host: true); ` +
    "list the hosts instead unless every host on the fabric may use it."
  );
}

const ONE_LINE_FLAGS: Record<string, string> = {
  "subsystems[0].nqn": "--nqn",
  "subsystems[0].namespaces[0].device": "--device",
  "subsystems[0].namespaces[0].nsid": "--nsid",
  "ports[0].traddr": "--traddr",
  "ports[0].trsvcid": "--trsvcid",
  "ports[0].trtype": "--trtype",
  "ports[0].adrfam": "--traddr",
  "ports[0].id": "--port-id",
};

/** Builds the spec of the one-line form, reusing a live port that has the same address. */
function oneLineSpec(v: OptionValues, live: LiveTree): TargetSpec {
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
  const trsvcid = (v.trsvcid as string | undefined) ?? (trtype === "loop" ? undefined : "4420");
  const traddr = v.traddr as string | undefined;
  let portId = v["port-id"] !== undefined ? Number(v["port-id"]) : undefined;
  if (portId === undefined) {
    const same = live.ports.find((p) =>
      p.attr.addr_trtype === trtype &&
      (trtype === "loop" || (p.attr.addr_traddr === traddr && p.attr.addr_trsvcid === trsvcid))
    );
    portId = same?.id;
    if (portId === undefined) {
      const used = new Set(live.ports.map((p) => p.id));
      portId = 1;
      while (used.has(portId)) portId++;
    }
  }
  const raw = {
    hosts: [],
    subsystems: [{
      nqn: v.nqn,
      allow_any_host: any,
      hosts,
      namespaces: [{ nsid: v.nsid ?? 1, device: v.device }],
    }],
    ports: [{
      id: portId,
      trtype,
      ...(traddr !== undefined
        ? { traddr, adrfam: isIpv6(traddr) && !isIpv4(traddr) ? "ipv6" : undefined }
        : {}),
      ...(trsvcid !== undefined && trtype !== "loop" ? { trsvcid } : {}),
      subsystems: [v.nqn],
    }],
  };
  if ((raw.ports[0] as Record<string, unknown>).adrfam === undefined) {
    delete (raw.ports[0] as Record<string, unknown>).adrfam;
  }
  try {
    return validateSpec(raw, { source: "from the command line" });
  } catch (err) {
    if (err instanceof SpecError) {
      throw new SpecError(
        "from the command line",
        err.problems.map((p) => ({
          ...p,
          path: ONE_LINE_FLAGS[p.path] ??
            p.path.replace(/^subsystems\[0\]\.hosts\[\d+\]$/, "--allow-host"),
        })),
      );
    }
    throw err;
  }
}

function readLive(io: ConfigfsIo | undefined): LiveTree {
  return io ? readTree(io) : EMPTY;
}

function readSecretAttr(io: ConfigfsIo): (path: string) => string | undefined {
  return (path) => (io.exists(path) ? io.read(path) : undefined);
}

interface PlanResult {
  dry_run: boolean;
  changed: boolean;
  steps: Record<string, unknown>[];
  warnings: string[];
  pruned?: boolean;
  summary?: Record<string, number>;
}

function planText(verb: string, nothing: string) {
  return (data: unknown): string => {
    const d = data as PlanResult;
    if (!d.steps.length) return nothing;
    const lines = d.steps.map((s) => describeStep(s as unknown as Step));
    const head = d.dry_run
      ? `Would ${verb} with ${lines.length} step(s) (dry run, nothing changed):`
      : `${verb[0].toUpperCase()}${verb.slice(1)} with ${lines.length} step(s):`;
    return [head, ...lines.map((l) => `  ${l}`)].join("\n");
  };
}

const specFlag = {
  file: {
    type: "string" as const,
    short: "f",
    value: "FILE",
    description: `Target spec, YAML or JSON (default ${DEFAULT_SPEC_FILE})`,
  },
};
const dryRunFlag = {
  "dry-run": {
    type: "boolean" as const,
    description: "Print the configfs steps, in order, and change nothing",
  },
};

async function upRun(ctx: RunContext): Promise<CommandResult> {
  const v = ctx.values;
  const oneLine = v.nqn !== undefined;
  if (oneLine && v.file !== undefined) {
    throw new UsageError("Give either -f FILE or the one-line form (--nqn …), not both.", {
      hint: "Run 'nvmeof target up --help'.",
    });
  }
  if (!oneLine) {
    for (
      const f of [
        "device",
        "traddr",
        "trsvcid",
        "trtype",
        "allow-host",
        "allow-any-host",
        "nsid",
        "port-id",
      ]
    ) {
      if (v[f] !== undefined) {
        throw new UsageError(`--${f} belongs to the one-line form, which needs --nqn.`, {
          hint: "Add --nqn NQN, or put it in the spec file.",
        });
      }
    }
  }
  const dryRun = v["dry-run"] === true;
  // File specs are validated before anything else happens (no module load, no lock).
  let spec = oneLine
    ? undefined
    : await loadSpecFile((v.file as string | undefined) ?? DEFAULT_SPEC_FILE);
  if (!dryRun) requireRoot();
  // A dry run only reads, so it needs neither root nor the lock.
  using _lock = dryRun ? undefined : lockTarget(ctx.global.configfs, { note: ctx.note });
  const peek = openNvmet(ctx.global.configfs, { prepare: false });
  if (oneLine) spec = oneLineSpec(v, readLive(peek));
  spec = spec!;
  const warns = warnings(spec);
  for (const w of warns) ctx.note(w);
  const transports = spec.ports.map((p) => p.trtype);
  const io = dryRun
    ? peek
    : openNvmet(ctx.global.configfs, { prepare: true, transports, note: ctx.note });
  const live = readLive(io);
  const dhchap = spec.hosts.filter((h) => h.dhchap_key_file || h.dhchap_ctrl_key_file);
  if (dhchap.length && live.hosts.some((h) => !h.dhchap_supported)) {
    throw new FailureError(
      `This kernel's nvmet has no DH-HMAC-CHAP (hosts have no dhchap_key attribute), but the spec sets keys for '${
        dhchap[0].nqn
      }'; nothing was changed.`,
      {
        hint:
          "Use a kernel built with CONFIG_NVME_TARGET_AUTH, or remove dhchap_key_file from the spec.",
      },
    );
  }
  if (v.prune === true) {
    checkPruneByEmptySpec(spec, live, {
      source: oneLine ? "from the command line" : `'${v.file ?? DEFAULT_SPEC_FILE}'`,
      allowEmpty: v["allow-empty"] === true,
    });
  }
  const steps = planUp(live, spec, {
    prune: v.prune === true,
    readLiveSecret: io ? readSecretAttr(io) : undefined,
  });
  if (v.force !== true && !dryRun) {
    const sources = kernelSources(kernelSourceOptions(standinMode()));
    refuseWhileConnected(live, steps, { sources, doer: "--prune", note: ctx.note });
  }
  if (!dryRun && steps.length) {
    applyPlan(io!, steps, {
      onStep: ctx.global.verbose ? (s) => ctx.note(describeStep(s)) : undefined,
    });
  }
  const c = counts(spec);
  const data: PlanResult = {
    dry_run: dryRun,
    changed: !dryRun && steps.length > 0,
    steps: steps.map(stepData),
    warnings: warns,
    summary: c,
  };
  return await Promise.resolve({
    data,
    text: planText(
      "apply the spec",
      `No changes: configfs already matches the spec (${c.subsystems} subsystem(s), ${c.namespaces} namespace(s), ${c.ports} port(s)).`,
    ),
  });
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
      choices: specEnum("port", "trtype"),
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

async function downRun(ctx: RunContext): Promise<CommandResult> {
  const v = ctx.values;
  const all = v.all === true;
  if (all && v.file !== undefined) {
    throw new UsageError("Give either -f FILE or --all, not both.", {
      hint: "Run 'nvmeof target down --help'.",
    });
  }
  const spec = all
    ? undefined
    : await loadSpecFile((v.file as string | undefined) ?? DEFAULT_SPEC_FILE, {
      checkFiles: false,
    });
  if (v["dry-run"] !== true) requireRoot();
  using _lock = v["dry-run"] === true
    ? undefined
    : lockTarget(ctx.global.configfs, { note: ctx.note });
  const io = openNvmet(ctx.global.configfs, { prepare: false });
  const live = readLive(io);
  const steps = planDown(live, { all, spec });
  if (v.force !== true && v["dry-run"] !== true) {
    const sources = kernelSources(kernelSourceOptions(standinMode()));
    refuseWhileConnected(live, steps, { sources, note: ctx.note });
  }
  if (v["dry-run"] !== true && steps.length) applyPlan(io!, steps);
  const data: PlanResult = {
    dry_run: v["dry-run"] === true,
    changed: v["dry-run"] !== true && steps.length > 0,
    steps: steps.map(stepData),
    warnings: [],
  };
  return await Promise.resolve({
    data,
    text: planText("remove", "Nothing to remove: configfs has none of it."),
  });
}

/** `nvmeof target down`. */
export const targetDownCommand: CommandDetails = {
  description: `
Removes the spec's ports, subsystems (with their namespaces and allowed-host links) and hosts in
the kernel's order: port links, ports, namespaces, allowed hosts, subsystems, hosts. A host entry
still allowed by a remaining subsystem stays. Refuses while hosts are connected to what it would
remove, unless --force: to a subsystem (nvmet's debugfs, this machine's own controllers) or to a
port it removes or that serves a removed subsystem (the port's RDMA CM ids in state CONNECT and
established TCP connections, which is how hosts on other machines show). A failed step rolls back
what the run removed.`,
  options: {
    ...specFlag,
    all: { type: "boolean", description: "Remove every port, subsystem and host in nvmet" },
    force: { type: "boolean", description: "Remove even while hosts are connected" },
    ...dryRunFlag,
  },
  examples: [
    "nvmeof target down -f /etc/nvmeof/target.yaml",
    "nvmeof target down --all --dry-run   # list what would go",
    "nvmeof target down --all --force",
  ],
  run: downRun,
};

async function showRun(ctx: RunContext): Promise<CommandResult> {
  const io = openNvmet(ctx.global.configfs, { prepare: false });
  if (!io) {
    ctx.note(
      `nvmet is not loaded ('${ctx.global.configfs}/nvmet' does not exist): nothing is configured.`,
    );
  }
  const live = readLive(io);
  if (ctx.values.nvmetcli === true || ctx.global.output === "nvmetcli") {
    const data = treeToNvmetcli(live);
    const json = (d: unknown) => JSON.stringify(d, null, 2);
    return { data, text: json, format: (name, d) => name === "nvmetcli" ? json(d) : undefined };
  }
  const data = treeToSpec(live);
  const { stringify } = await import("yaml");
  const yaml = (d: unknown) => stringify(d, { lineWidth: 0 });
  return { data, text: yaml, format: (name, d) => name === "yaml" ? yaml(d) : undefined };
}

/** `nvmeof target show`. */
export const targetShowCommand: CommandDetails = {
  description: `
Reads configfs into the spec's shape: 'nvmeof target show > t.yaml' then 'nvmeof target up -f t.yaml'
changes nothing. DH-HMAC-CHAP keys are never printed. -o nvmetcli (or --nvmetcli) prints
nvmetcli's saved-config JSON instead (the format of /etc/nvmet/config.json, without keys).
-o text and -o yaml are the same.`,
  options: {
    nvmetcli: { type: "boolean", description: "Print nvmetcli's JSON format instead of the spec" },
  },
  outputs: ["yaml", "nvmetcli"],
  examples: [
    "nvmeof target show",
    "nvmeof target show -o json",
    "nvmeof target show > /etc/nvmeof/target.yaml   # adopt a hand-made configuration",
    "nvmeof target show -o nvmetcli > /etc/nvmet/config.json",
  ],
  run: showRun,
};

async function checkRun(ctx: RunContext): Promise<CommandResult> {
  const file = (ctx.values.file as string | undefined) ?? DEFAULT_SPEC_FILE;
  const spec = await loadSpecFile(file);
  const warns = warnings(spec);
  for (const w of warns) ctx.note(w);
  const c = counts(spec);
  return await Promise.resolve({
    data: { file, valid: true, ...c, warnings: warns },
    text: () =>
      `Spec '${file}' is valid: ${c.hosts} host(s), ${c.subsystems} subsystem(s), ${c.namespaces} namespace(s), ${c.ports} port(s).`,
  });
}

/** `nvmeof target check`. */
export const targetCheckCommand: CommandDetails = {
  description: `
Runs every check 'target up' runs before its first write: syntax (with line and column), unknown
keys, NQN form and length, duplicates, devices, addresses, service ids, key files and their modes.
Each problem names its spec path and the fix. Exit 0 when valid, 1 when not.`,
  options: { ...specFlag },
  examples: [
    "nvmeof target check -f /etc/nvmeof/target.yaml",
    "nvmeof target check -f t.yaml -o json",
  ],
  run: checkRun,
};

async function importRun(ctx: RunContext): Promise<CommandResult> {
  const file = ctx.values["from-nvmetcli"] as string | undefined;
  if (!file) {
    throw new UsageError("Name the nvmetcli file: --from-nvmetcli FILE.json.", {
      hint: "nvmetcli keeps it in /etc/nvmet/config.json.",
    });
  }
  const { stringify } = await import("yaml");
  const raw = await loadNvmetcliFile(file);
  const { spec, notes } = nvmetcliToSpec(raw);
  for (const n of notes) ctx.note(`note: ${n}`);
  validateSpec(spec, { checkFiles: false, source: `converted from '${file}'` });
  return await Promise.resolve({
    data: spec,
    text: (d: unknown) => stringify(d, { lineWidth: 0 }),
  });
}

/** `nvmeof target import`. */
export const targetImportCommand: CommandDetails = {
  description: `
Reads nvmetcli's saved configuration (nvmetcli save, /etc/nvmet/config.json) and prints the
equivalent spec (YAML, or JSON with -o json). Referrals and passthru subsystems are not managed by
nvmeof and are left out with a note; DH-HMAC-CHAP keys must be moved to key files.`,
  options: {
    "from-nvmetcli": { type: "string", value: "FILE", description: "nvmetcli's JSON file" },
  },
  examples: [
    "nvmeof target import --from-nvmetcli /etc/nvmet/config.json > /etc/nvmeof/target.yaml",
  ],
  run: importRun,
};

/** `nvmeof target …`. */
export const targetCommand: CommandDetails = {
  examples: [
    "nvmeof target check -f /etc/nvmeof/target.yaml",
    "nvmeof target up -f /etc/nvmeof/target.yaml",
    "nvmeof target show -o json",
    "nvmeof target down --all",
  ],
};
