/**
 * The command table: every verb of nvmeof, in the order `nvmeof help` lists them.
 */
import type { Command } from "../cli/command.ts";
import { helpCommand } from "./help.ts";
import { versionCommand } from "./version.ts";
import { discoverCommand } from "./discover.ts";
import { connectAllCommand, connectCommand } from "./connect.ts";
import { disconnectAllCommand, disconnectCommand } from "./disconnect.ts";
import { listCommand } from "./list.ts";
import { hostnqnCommand } from "./hostnqn.ts";
import { targetCommand } from "./target.ts";
import { rdmaCommand } from "./rdma.ts";
import { connectionsCommand } from "./connections.ts";
import { disableAutoconnectCommand, enableAutoconnectCommand } from "./autoconnect.ts";
import { completionsCommand } from "./completions.ts";
import { doctorCommand } from "./doctor.ts";
import { probeCommand } from "./probe.ts";
import { benchCommand } from "./bench.ts";

export const COMMANDS: Command[] = [
  versionCommand,
  discoverCommand,
  connectCommand,
  connectAllCommand,
  disconnectCommand,
  disconnectAllCommand,
  listCommand,
  connectionsCommand,
  enableAutoconnectCommand,
  disableAutoconnectCommand,
  hostnqnCommand,
  targetCommand,
  rdmaCommand,
  probeCommand,
  benchCommand,
  doctorCommand,
  completionsCommand(() => COMMANDS),
  helpCommand(() => COMMANDS),
];
