/**
 * The command table: every verb of nvmeof, in the order `nvmeof help` lists them.
 *
 * The table holds what `nvmeof help` and the parser need (names, summaries, subcommands); each
 * command's module (flags, help text and `run`) is imported only when that command runs or its
 * help is asked for, and imports the domain code behind `run` only inside it, so that a command's
 * --help loads its module and nothing heavy. The imports are string literals so that
 * `deno compile` still bundles every module. Nothing here may import a command module statically:
 * tests/cli/startup_test.ts checks that `--version` and `--help` load none, and that a command's
 * --help loads no domain code.
 */
import type { CommandEntry } from "../cli/command.ts";

export const COMMANDS: CommandEntry[] = [
  {
    name: "version",
    summary: "Print the version of nvmeof and its runtime",
    load: () => import("./version.ts").then((m) => m.versionCommand),
  },
  {
    name: "discover",
    summary: "List the NVMe subsystems a target offers this host (discovery log)",
    load: () => import("./discover.ts").then((m) => m.discoverCommand),
  },
  {
    name: "connect",
    summary: "Connect to an NVMe subsystem over RDMA and show its block devices",
    load: () => import("./connect.ts").then((m) => m.connectCommand),
  },
  {
    name: "connect-all",
    summary: "Discover, then connect every NVM subsystem this host may use",
    load: () => import("./connect_all.ts").then((m) => m.connectAllCommand),
  },
  {
    name: "disconnect",
    summary: "Disconnect a subsystem (-n NQN) or one controller (-d nvmeN)",
    load: () => import("./disconnect.ts").then((m) => m.disconnectCommand),
  },
  {
    name: "disconnect-all",
    summary: "Disconnect every fabrics controller (optionally of one transport)",
    load: () => import("./disconnect.ts").then((m) => m.disconnectAllCommand),
  },
  {
    name: "list",
    summary: "Show NVMe namespaces as nvme-cli does; --paths: subsystems, paths, ANA states",
    load: () => import("./list.ts").then((m) => m.listCommand),
  },
  {
    name: "list-subsys",
    summary: "Show subsystems and their paths by host NQN, as nvme-cli's list-subsys",
    load: () => import("./list_subsys.ts").then((m) => m.listSubsysCommand),
  },
  {
    name: "connections",
    summary: "List, remove or import the connections saved for boot",
    load: () => import("./connections.ts").then((m) => m.connectionsCommand),
    subcommands: [
      {
        name: "list",
        summary: "List the saved connections, numbered",
        load: () => import("./connections.ts").then((m) => m.connectionsListCommand),
      },
      {
        name: "remove",
        summary: "Forget saved connections (by number, by NQN, or all)",
        load: () => import("./connections.ts").then((m) => m.connectionsRemoveCommand),
      },
      {
        name: "import",
        summary: "Save nvme-cli's discovery.conf and config.json connections",
        load: () => import("./connections.ts").then((m) => m.connectionsImportCommand),
      },
    ],
  },
  {
    name: "enable-autoconnect",
    summary: "Install the systemd unit that connects the saved connections at boot",
    load: () => import("./autoconnect.ts").then((m) => m.enableAutoconnectCommand),
  },
  {
    name: "disable-autoconnect",
    summary: "Remove the boot-time connect unit (saved connections are kept)",
    load: () => import("./autoconnect.ts").then((m) => m.disableAutoconnectCommand),
  },
  {
    name: "hostnqn",
    summary: "Show (or create) this host's NVMe host NQN and host ID",
    load: () => import("./hostnqn.ts").then((m) => m.hostnqnCommand),
  },
  {
    name: "target",
    summary: "Configure this host as an NVMe-oF target (nvmet) from a spec",
    load: () => import("./target.ts").then((m) => m.targetCommand),
    subcommands: [
      {
        name: "up",
        summary: "Make nvmet configfs match a spec: create or change only what differs",
        load: () => import("./target_up.ts").then((m) => m.targetUpCommand),
      },
      {
        name: "down",
        summary: "Remove what a spec describes (or everything) from nvmet configfs",
        load: () => import("./target_down.ts").then((m) => m.targetDownCommand),
      },
      {
        name: "show",
        summary: "Print the live nvmet tree as a spec (YAML; -o json; -o nvmetcli)",
        load: () => import("./target_show.ts").then((m) => m.targetShowCommand),
      },
      {
        name: "check",
        summary: "Validate a spec without touching configfs",
        load: () => import("./target_check.ts").then((m) => m.targetCheckCommand),
      },
      {
        name: "ana",
        summary: "Move a port's ANA groups to a state, live (planned failover: drain, restore)",
        load: () => import("./target_ana.ts").then((m) => m.targetAnaCommand),
      },
      {
        name: "import",
        summary: "Convert nvmetcli's saved JSON to a target spec",
        load: () => import("./target_import.ts").then((m) => m.targetImportCommand),
      },
      {
        name: "enable",
        summary: "Install the systemd unit that brings the target up at every boot",
        load: () => import("./target_enable.ts").then((m) => m.targetEnableCommand),
      },
      {
        name: "disable",
        summary: "Remove the boot-time target unit",
        load: () => import("./target_enable.ts").then((m) => m.targetDisableCommand),
      },
      {
        name: "schema",
        summary: "Print the JSON Schema of the target spec (for editor validation and completion)",
        load: () => import("./target_schema.ts").then((m) => m.targetSchemaCommand),
      },
    ],
  },
  {
    name: "rdma",
    summary: "RDMA devices, connectivity and bandwidth checks (librdmacm/libibverbs over FFI)",
    load: () => import("./rdma.ts").then((m) => m.rdmaCommand),
    subcommands: [
      {
        name: "devices",
        summary: "List RDMA devices, ports, MTUs and GID tables",
        load: () => import("./rdma_devices.ts").then((m) => m.rdmaDevicesCommand),
      },
      {
        name: "ping",
        summary: "Ping a peer over an RDMA-CM connection with RDMA WRITE, READ or SEND",
        load: () => import("./rdma_ping.ts").then((m) => m.rdmaPingCommand),
      },
      {
        name: "bw",
        summary: "Measure RDMA WRITE bandwidth to a peer",
        load: () => import("./rdma_bw.ts").then((m) => m.rdmaBwCommand),
      },
    ],
  },
  {
    name: "probe",
    summary: "Talk NVMe over RDMA from user space: discovery log or a controller's identity",
    load: () => import("./probe.ts").then((m) => m.probeCommand),
  },
  {
    name: "bench",
    summary: "NVMe over RDMA I/O benchmark from user space: IOPS, MB/s, latency, verify",
    load: () => import("./bench.ts").then((m) => m.benchCommand),
  },
  {
    name: "doctor",
    summary: "Check this host's NVMe-oF/RDMA setup and name why a connect fails",
    load: () => import("./doctor.ts").then((m) => m.doctorCommand),
  },
  {
    name: "metrics",
    summary: "Print this machine's NVMe-oF metrics in Prometheus' text format",
    load: () => import("./metrics.ts").then((m) => m.metricsCommand),
  },
  {
    name: "exporter",
    summary: "Serve the metrics over HTTP for Prometheus (GET /metrics)",
    load: () => import("./exporter.ts").then((m) => m.exporterCommand),
    subcommands: [
      {
        name: "enable",
        summary: "Install the systemd unit that runs the exporter",
        load: () => import("./exporter.ts").then((m) => m.exporterEnableCommand),
      },
      {
        name: "disable",
        summary: "Remove the exporter's systemd unit",
        load: () => import("./exporter.ts").then((m) => m.exporterDisableCommand),
      },
    ],
  },
  {
    name: "agent",
    summary: "Follow discovery controllers and connect what they offer as it appears",
    load: () => import("./agent.ts").then((m) => m.agentCommand),
    subcommands: [
      {
        name: "status",
        summary: "Show what the agent follows, the last generation seen and what it connected",
        load: () => import("./agent.ts").then((m) => m.agentStatusCommand),
      },
      {
        name: "enable",
        summary: "Install the systemd unit that runs the agent",
        load: () => import("./agent.ts").then((m) => m.agentEnableCommand),
      },
      {
        name: "disable",
        summary: "Remove the agent's systemd unit",
        load: () => import("./agent.ts").then((m) => m.agentDisableCommand),
      },
    ],
  },
  {
    name: "top",
    summary: "Live view of subsystems, paths, I/O rates, RDMA errors and target ports",
    load: () => import("./top.ts").then((m) => m.topCommand),
  },
  {
    name: "completions",
    summary: "Print the shell completion script for bash, zsh or fish",
    load: () => import("./completions.ts").then((m) => m.completionsCommand(COMMANDS)),
  },
  {
    name: "help",
    summary: "Show help for nvmeof or one of its commands",
    load: () => import("./help.ts").then((m) => m.helpCommand(COMMANDS)),
  },
];
