/**
 * `nvmeof connect-all`: discover, then connect every NVM subsystem the log lists (the walk is
 * src/initiator/connect_all.ts).
 */
import type { CommandDetails } from "../cli/command.ts";
import { CONNECT_ALL_FLAGS } from "../cli/connect_flags.ts";
import { UsageError } from "../errors.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";

/** `nvmeof connect-all`. */
export const connectAllCommand: CommandDetails = {
  description: `
Reads the discovery log at ADDR (like 'nvmeof discover'), then connects each NVM subsystem
entry of the same transport, skipping those already connected and the discovery entries.
Referrals to other discovery controllers are followed once; a row that came through one names it
('referral': the discovery controller that listed the entry). Exit 1 if any connect failed.
Without -a, as nvme-cli, it goes through every discovery controller listed in
/etc/nvme/discovery.conf (one line of nvme-cli flags each); the tuning flags given apply to
each line, and a line's own flags win.`,
  options: CONNECT_ALL_FLAGS,
  examples: [
    "nvmeof connect-all -a 10.0.0.2",
    "nvmeof connect-all -t rdma -a 10.0.0.2 -s 4420 -i 4 -o json",
    "nvmeof connect-all -a 10.0.0.2 --persist   # and again at every boot",
    "nvmeof connect-all   # through every controller of /etc/nvme/discovery.conf",
  ],
  async run(ctx) {
    const { connectIo, resultOf } = await import("../cli/connect_values.ts");
    const { connectOptionsFromFlags, secretFilesFromFlags } = await import(
      "../cli/fabrics_values.ts"
    );
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { connectAll, connectAllFromConf } = await import("../initiator/connect_all.ts");
    const { savedFromOptions } = await import("../persist/connections.ts");
    const v = ctx.values;
    const io = connectIo(ctx);
    const paths = fabricsPaths();
    if (v.traddr === undefined) {
      if (v.persist === true) {
        throw new UsageError(
          "--persist needs -a: discovery.conf already lists what it would save.",
          {
            hint: "'nvmeof connections import --from-nvme-cli' saves discovery.conf's controllers.",
          },
        );
      }
      const flags = await connectOptionsFromFlags({ ...v, traddr: "0.0.0.0" }, paths, "");
      return resultOf(await connectAllFromConf(paths, flags, io));
    }
    const base = await connectOptionsFromFlags(v, paths, "");
    const save = v.persist === true
      ? savedFromOptions({ ...base, nqn: DISCOVERY_NQN }, secretFilesFromFlags(v))
      : undefined;
    return resultOf(await connectAll(paths, { base, save }, io));
  },
};
