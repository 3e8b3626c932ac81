/**
 * The command table: every verb of nvmeof, in the order `nvmeof help` lists them.
 */
import type { Command } from "../cli/command.ts";
import { helpCommand } from "./help.ts";
import { versionCommand } from "./version.ts";

export const COMMANDS: Command[] = [
  versionCommand,
  helpCommand(() => COMMANDS),
];
