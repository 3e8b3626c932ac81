/**
 * `nvmeof connect`: I/O controllers through /dev/nvme-fabrics: one path, several paths (HA), a
 * libnvme config.json (-J) or the saved connections (--saved); the work is in src/initiator/.
 */
import type { CommandDetails } from "../cli/command.ts";
import { CONNECT_COMMAND_FLAGS } from "../cli/connect_flags.ts";
import { UsageError } from "../errors.ts";

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
  options: CONNECT_COMMAND_FLAGS,
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
    const {
      checkConfigFlags,
      checkSavedFlags,
      connectIo,
      multipathFromFlags,
      resultOf,
      retryForMs,
      traddrsOf,
      withProfile,
    } = await import("../cli/connect_values.ts");
    const { connectOptionsFromFlags, secretFilesFromFlags } = await import(
      "../cli/fabrics_values.ts"
    );
    const { checkNqn } = await import("../fabrics/option_checks.ts");
    const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
    const { connectConfig } = await import("../initiator/config_connect.ts");
    const { connectPaths } = await import("../initiator/multipath_connect.ts");
    const { connectSaved } = await import("../initiator/saved_connect.ts");
    const { connectSingle } = await import("../initiator/single_connect.ts");
    const { savedFromOptions } = await import("../persist/connections.ts");
    const v = ctx.values;
    const io = connectIo(ctx);
    const dryRun = v["dry-run"] === true;
    const dumpConfig = v["dump-config"] === true;
    if (v.saved === true) {
      checkSavedFlags(v);
      return resultOf(
        await connectSaved(fabricsPaths(), { retryForMs: retryForMs(v), dryRun }, io),
      );
    }
    const file = v.config;
    if (typeof file === "string" && file !== "none") {
      checkConfigFlags(v);
      return resultOf(await connectConfig(fabricsPaths(), { file, dryRun, dumpConfig }, io));
    }
    if (v["retry-for"] !== undefined) {
      throw new UsageError("--retry-for only applies to --saved.", {
        hint: "Add --saved, or drop --retry-for.",
      });
    }
    if (typeof v.nqn !== "string") {
      throw new UsageError("The subsystem NQN is missing.", {
        hint: "Give it with -n/--nqn (nvmeof discover -a ADDR lists them).",
      });
    }
    const paths = fabricsPaths();
    const nqn = checkNqn(v.nqn, "-n/--nqn");
    const addrs = traddrsOf(v);
    if (addrs.length > 1 || v.ha === true) {
      const flags = await multipathFromFlags(v, paths, { nqn, addrs });
      return resultOf(await connectPaths(paths, { nqn, ...flags, dryRun }, io));
    }
    const options = await connectOptionsFromFlags(withProfile(v, false), paths, nqn);
    const save = v.persist === true
      ? savedFromOptions(options, secretFilesFromFlags(v))
      : undefined;
    return resultOf(await connectSingle(paths, { options, save, dryRun, dumpConfig }, io));
  },
};
