/**
 * `nvmeof connect`: I/O controllers through /dev/nvme-fabrics (one path here; several paths,
 * -J/-O and --saved in their own modules).
 */
import type { CommandDetails } from "../cli/command.ts";
import { UsageError } from "../errors.ts";
import { connectSubsystem } from "../fabrics/connect.ts";
import { CONNECT_FLAGS, secretFilesFromFlags } from "../fabrics/flags.ts";
import {
  checkNqn,
  DEFAULT_CTRL_LOSS_TMO,
  namespaceQueuesData,
  namespaceQueueText,
  redactedOptionString,
} from "../fabrics/options.ts";
import { fabricsPaths } from "../fabrics/initiator_paths.ts";
import { describeSaved, savedFromOptions } from "../persist/connections.ts";
import { versioned } from "../output/contract.ts";
import { DEFAULT_RETRY_FOR } from "../persist/systemd.ts";
import {
  connectOptionsFromFlags,
  connectText,
  persistEntries,
  progressOf,
  savedFile,
} from "./connect_shared.ts";
import { connectPathsRun, haText, traddrsOf, withProfile } from "./connect_paths.ts";
import { connectConfigRun, dumpConfig } from "./connect_config.ts";
import { connectSavedRun } from "./connect_saved.ts";

export { connectOptionsFromFlags } from "./connect_shared.ts";

/** `nvmeof connect`. */
export const connectCommand: CommandDetails = {
  description: `
Writes the connect options to /dev/nvme-fabrics (as nvme-cli does, without needing it), reads
back the new controller, and waits until it is live and the block device of every active
namespace exists. An identical existing connection (same host, subsystem, address, port) is
reported, not duplicated, and is not an error.

The host NQN and host ID come from -q/-I, else from /etc/nvme/hostnqn and /etc/nvme/hostid
('nvmeof hostnqn --generate' creates them). They are always sent together: the kernel pairs
each host NQN with one host ID.

The flags are nvme-cli's (-i -W -P -Q -k -c -l -F -T -D --disable-sqflow -g -G -f …), with their
kernel ranges; negative values where the kernel takes them (-l -1, -l=-1: never give up).
-a also takes a host name, resolved as nvme-cli resolves it. DH-HMAC-CHAP secrets come from
files, never from argv, which every user can read: --dhchap-secret-file FILE for the host's,
-C/--dhchap-ctrl-secret-file FILE for the controller's (nvme-cli's -C takes the key itself; here
it takes the file). A key given inline (-S, --dhchap-ctrl-secret, -C DHHC-1:…) is refused.

Values are checked before anything is written: NQNs under 223 bytes, addresses, queue size
16..1024, tcp-only options (-g -G -f, TLS) not on rdma, and options the running kernel lacks
(--tls needs Linux 6.7: exit 3, naming the release). --persist saves every option given
(ctrl-loss-tmo, reconnect-delay, fast_io_fail_tmo, keep-alive-tmo …) and --saved gives them
back. -v prints the option string written (secrets hidden). Root is needed (except --dry-run).`,
  options: {
    ...CONNECT_FLAGS,
    config: {
      type: "string",
      short: "J",
      value: "FILE",
      description:
        "Connect every I/O controller of this libnvme config.json instead of -a/-n (nvme-cli's -J; 'none': ignore)",
    },
    "dump-config": {
      type: "boolean",
      short: "O",
      description:
        "Print the connection as libnvme's config.json (nvme-cli's -O), without secrets; -J takes it back",
    },
    traddr: {
      ...CONNECT_FLAGS.traddr,
      multiple: true,
      description:
        "Target address (IP, or a host name); repeat it for every path of the subsystem (HA profile)",
    },
    "ctrl-loss-tmo": {
      ...Object.fromEntries(
        Object.entries(CONNECT_FLAGS["ctrl-loss-tmo"]).filter(([k]) => k !== "default"),
      ) as typeof CONNECT_FLAGS["ctrl-loss-tmo"],
      description:
        `Give up reconnecting after this long; -1 = never (default ${DEFAULT_CTRL_LOSS_TMO} as nvme-cli, -1 with the HA profile)`,
    },
    ha: {
      type: "boolean",
      description: `The HA profile even for one path (the default with several -a): ${haText()}`,
    },
    "no-ha": {
      type: "boolean",
      description: "The kernel's and nvme-cli's timeouts even with several -a",
    },
    persist: {
      type: "boolean",
      description: "Also save the connection in /etc/nvmeof/connections.yaml (reconnected at boot)",
    },
    saved: {
      type: "boolean",
      description: "Connect every saved connection instead (what nvmeof-autoconnect.service runs)",
    },
    "retry-for": {
      type: "string",
      value: "SECONDS",
      description:
        `With --saved: keep retrying unreachable targets with backoff (1 s doubling to 15 s) for this long (default ${DEFAULT_RETRY_FOR}; 0 = try once)`,
    },
  },
  examples: [
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1   # rdma, port 4420",
    "nvmeof connect -a 10.0.0.2 -a 10.0.1.2 -n nqn.2024-01.io.example:disk1   # two paths, HA profile",
    "nvmeof connect -a 10.0.0.2 -a 10.0.1.2 -n nqn.2024-01.io.example:disk1 --dry-run -o json",
    "nvmeof connect -t rdma -a 10.0.0.2 -s 4420 -n nqn.2024-01.io.example:disk1 -i 4 -Q 128",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --dry-run   # print the option string",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -o json",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --dhchap-secret-file /etc/nvme/disk1.key",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 --persist   # and at every boot",
    "nvmeof connect -a storage1 -n nqn.2024-01.io.example:disk1 -l -1 -c 2 --fast_io_fail_tmo 5 --persist   # HA timeouts, saved",
    "nvmeof connect -t tcp -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -g -G -f eth1   # digests, from eth1",
    "nvmeof connect --saved   # (re)connect all saved connections",
    "nvmeof connect -a 10.0.0.2 -n nqn.2024-01.io.example:disk1 -l -1 -F 5 -c 2 -O > disk1.json",
    "nvmeof connect -J disk1.json   # every I/O controller the file lists, as 'nvme connect -J'",
    "nvmeof connect --saved --retry-for 300 -o json   # wait up to 5 min for late targets",
  ],
  async run(ctx) {
    if (ctx.values.saved === true) return await connectSavedRun(ctx);
    const config = ctx.values.config;
    if (typeof config === "string" && config !== "none") return await connectConfigRun(ctx, config);
    if (ctx.values["retry-for"] !== undefined) {
      throw new UsageError("--retry-for only applies to --saved.", {
        hint: "Add --saved, or drop --retry-for.",
      });
    }
    const nqnValue = ctx.values.nqn;
    if (typeof nqnValue !== "string") {
      throw new UsageError("The subsystem NQN is missing.", {
        hint: "Give it with -n/--nqn (nvmeof discover -a ADDR lists them).",
      });
    }
    const paths = fabricsPaths();
    const nqn = checkNqn(nqnValue, "-n/--nqn");
    const addrs = traddrsOf(ctx.values);
    if (addrs.length > 1 || ctx.values.ha === true) {
      return await connectPathsRun(ctx, paths, nqn, addrs);
    }
    const opts = await connectOptionsFromFlags(
      withProfile(ctx.values, false),
      paths,
      nqn,
    );
    const persist = ctx.values.persist === true
      ? savedFromOptions(opts, secretFilesFromFlags(ctx.values))
      : undefined;
    if (ctx.values["dump-config"] === true && ctx.values["dry-run"] === true) {
      return dumpConfig([opts]);
    }
    if (ctx.values["dry-run"] === true) {
      const data = versioned({
        dry_run: true,
        device: `${paths.dev}/nvme-fabrics`,
        option_string: redactedOptionString(opts),
        ...namespaceQueuesData(opts),
        ...(persist ? { would_save: persist } : {}),
      });
      return {
        data,
        text: () =>
          [data.option_string, namespaceQueueText(opts)].filter((l) => l).join("\n") +
          (persist ? `\nwould save: ${describeSaved(persist)} in ${savedFile()}` : ""),
      };
    }
    if (ctx.global.verbose) {
      ctx.note(`writing to ${paths.dev}/nvme-fabrics: ${redactedOptionString(opts)}`);
    }
    const r = await connectSubsystem(paths, opts, { progress: progressOf(ctx) });
    if (ctx.values["dump-config"] === true) ctx.note(connectText(r));
    if (ctx.values["dump-config"] === true && !persist) return dumpConfig([opts]);
    if (!persist) return { data: versioned(r), text: () => connectText(r) };
    const saved = await persistEntries([persist]);
    return {
      data: versioned({ ...r, saved: saved.file, saved_change: saved.change }),
      text: () => `${connectText(r)}\n${saved.text}`,
    };
  },
};
