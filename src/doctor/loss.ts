/**
 * Whether the fabric loses packets: read the RDMA port's hw_counters, run a short transfer
 * (Identify Controller of the discovery controller, repeated: each is a 4 KiB RDMA WRITE from
 * the target plus a command and a response), read them again. A reliable connection hides a
 * loss by retransmitting, and these counters are where it shows.
 */
import type { Counters } from "../rdma/port_counters.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import { Controller } from "../nvme/controller.ts";
import { type Check, check } from "./check.ts";

/**
 * Counters that move only when a packet was lost, reordered or retransmitted (rxe:
 * rcvd_seq_err, out_of_seq_request, duplicate_request, completer_retry_err, retry_exceeded_err;
 * mlx5: out_of_sequence, packet_seq_err, local_ack_timeout_err, implied_nak_seq_err,
 * roce_adp_retrans …). RNR counters are left out: they say a receiver had no buffer, not loss.
 */
export const LOSS_COUNTER =
  /seq_err|out_of_seq|out_of_sequence|duplicate_request|retry_exceeded|completer_retry|local_ack_timeout|implied_nak|adp_retrans|slow_restart|link_downed/;

/** Identify Controller commands the transfer sends. */
export const TRANSFER_ROUNDS = 32;

/** The loss counters that moved between two readings, with their increase. */
export function movedLossCounters(before: Counters, after: Counters): [string, number][] {
  return Object.keys(after)
    .filter((k) => LOSS_COUNTER.test(k) && before[k] !== undefined && after[k] > before[k])
    .sort()
    .map((k) => [k, after[k] - before[k]]);
}

/** reach.loss: ok when no loss counter moved during the transfer. */
export function lossCheck(
  before: Counters | undefined,
  after: Counters | undefined,
  o: { dev: string; port: number; netdev?: string; transfer: string; transferError?: string },
): Check {
  const id = "reach.loss";
  const where = `${o.dev} port ${o.port}`;
  if (!before || !after) {
    return check(
      id,
      "skip",
      `${where} has no hw_counters in sysfs: packet loss cannot be read`,
      `look by hand: rdma statistic show link ${o.dev}/${o.port}`,
    );
  }
  const watched = Object.keys(after).filter((k) => LOSS_COUNTER.test(k));
  const moved = movedLossCounters(before, after);
  if (moved.length === 0 && o.transferError) {
    return check(
      id,
      "warn",
      `${where}: no loss counter moved, but ${o.transfer} did not complete (${o.transferError})`,
      "see reach.path_mtu and reach.kernel_connect; on the target, its kernel log (dmesg)",
    );
  }
  if (moved.length === 0) {
    return check(
      id,
      "ok",
      `${where}: no retransmission or sequence-error counter moved during ${o.transfer} ` +
        `(${watched.length} watched: ${watched.join(", ") || "none"})`,
    );
  }
  const nd = o.netdev ?? "NETDEV";
  return check(
    id,
    "warn",
    `the fabric is not lossless: during ${o.transfer}, ${where} counted ` +
      `${moved.map(([k, d]) => `${k} +${d}`).join(", ")}: packets were lost and retransmitted ` +
      "(each loss costs a retransmission timeout: stalls, then 'Connection timed out' under load)",
    `find the hop that drops: tc -s qdisc show dev ${nd} (netem, policers) and ip -s link show ${nd} ` +
      "on both ends, then the switch port counters; for RoCE make the fabric lossless: PFC on the " +
      `RoCE priority (dcb pfc set dev ${nd} prio-pfc 3:on, and on the switch) or ECN`,
  );
}

/**
 * Runs the transfer against the target's discovery controller: connect, enable, `rounds`
 * Identify Controller, shutdown. Returns how many completed and the error that stopped it.
 */
export async function transferProbe(
  traddr: string,
  trsvcid: number,
  o: { hostnqn: string; hostid: string; timeoutMs: number; rounds: number },
): Promise<{ done: number; error?: string }> {
  let done = 0;
  try {
    using ctrl = await Controller.connect({
      host: traddr,
      port: trsvcid,
      subnqn: DISCOVERY_NQN,
      hostnqn: o.hostnqn,
      hostid: o.hostid,
      timeoutMs: o.timeoutMs,
    });
    await ctrl.enable();
    for (; done < o.rounds; done++) await ctrl.identifyController();
    await ctrl.shutdown();
    return { done };
  } catch (err) {
    return { done, error: (err as Error).message };
  }
}
