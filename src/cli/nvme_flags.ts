/**
 * What `probe` and `bench` share: the flags that say where the controller is and who the host
 * is, the bound on each wait, and the ControllerOptions they make.
 */
import type { OptionSpec, OptionValues } from "./command.ts";
import { intFlag } from "./parse.ts";
import { ADDRESS_FLAGS, HOST_FLAGS } from "./fabrics_flags.ts";
import type { ControllerOptions } from "../nvme/controller.ts";

/** -a and -s: the target's address and port (RDMA only). */
export const TARGET_FLAGS = {
  traddr: ADDRESS_FLAGS.traddr,
  trsvcid: ADDRESS_FLAGS.trsvcid,
} as const;

/** -q and -I: the host NQN and host ID. */
export const HOST_ID_FLAGS = {
  hostnqn: HOST_FLAGS.hostnqn,
  hostid: HOST_FLAGS.hostid,
} as const;

/** --timeout MS: the bound on each wait for the target. */
export const TIMEOUT_FLAG: OptionSpec = {
  type: "string",
  value: "MS",
  description: "Bound on each wait for the target (default 5000)",
};

/** Host identity: flags, else the host files; a -q alone gets a fresh host ID (no kernel pairing here). */
export async function hostIdentityFromFlags(
  values: OptionValues,
): Promise<{ hostnqn: string; hostid: string }> {
  const { hostFromFlags } = await import("./fabrics_values.ts");
  const { resolveHostIdentity } = await import("../fabrics/host_identity.ts");
  const { fabricsPaths } = await import("../fabrics/initiator_paths.ts");
  const host = hostFromFlags(values);
  if (host.hostnqn !== undefined && host.hostid === undefined) {
    try {
      return await resolveHostIdentity(host, fabricsPaths());
    } catch {
      return { hostnqn: host.hostnqn, hostid: crypto.randomUUID() };
    }
  }
  return await resolveHostIdentity(host, fabricsPaths());
}

/** The value of --timeout (ms). */
export function timeoutFlag(values: OptionValues): number {
  return intFlag(values, "timeout", 5000, 1, 600000);
}

/**
 * The controller of subsystem `subnqn` the flags name: address, host identity and timeout (the
 * caller adds its Canceller).
 */
export async function controllerFromFlags(
  values: OptionValues,
  subnqn: string,
): Promise<ControllerOptions> {
  const { addressFromFlags } = await import("./fabrics_values.ts");
  const address = addressFromFlags({ ...values, transport: "rdma" });
  const id = await hostIdentityFromFlags(values);
  return {
    host: address.traddr,
    port: Number(address.trsvcid),
    subnqn,
    hostnqn: id.hostnqn,
    hostid: id.hostid,
    timeoutMs: timeoutFlag(values),
  };
}
