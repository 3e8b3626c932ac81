/**
 * `nvmeof target …`: the storage server's side, declaratively. Each subcommand is its own file
 * (target_up.ts, target_down.ts, target_show.ts, target_check.ts, target_import.ts, …).
 */
import type { CommandDetails } from "../cli/command.ts";

/** `nvmeof target …`. */
export const targetCommand: CommandDetails = {
  examples: [
    "nvmeof target check -f /etc/nvmeof/target.yaml",
    "nvmeof target up -f /etc/nvmeof/target.yaml",
    "nvmeof target show -o json",
    "nvmeof target ana --port 1 --state inaccessible   # drain port 1 (planned failover)",
    "nvmeof target down --all",
  ],
};
