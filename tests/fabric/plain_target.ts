/**
 * A target on the storage server built with plain configfs writes, no nvmeof code: the
 * independent peer the initiator tests run against from a compute node. Each subsystem exports
 * one memory-backed null_blk as namespace 1, on one port. Built by one script on `target`; its
 * undo script runs in reverse (after the compute nodes' controllers of these subsystems are
 * deleted), whether the test passed or not.
 */
import { addr, HOSTS, must, on } from "./fabric.ts";

const CFS = "/sys/kernel/config";
const NVMET = `${CFS}/nvmet`;

export interface PlainSubsystem {
  nqn: string;
  /** The only host allowed to connect; absent: any host (attr_allow_any_host=1). */
  allowedHost?: string;
  /** null_blk size in MiB (default 64). */
  sizeMiB?: number;
}

export interface PlainTargetSpec {
  /** Names the null_blk devices (/dev/TAG_i); unique per test. */
  tag: string;
  /** nvmet port id. */
  port: number;
  /** Transport service id (default 4420). */
  svc?: number;
  /** Default: the target's address on link 0. */
  traddr?: string;
  trtype?: "rdma" | "tcp";
  subsystems: PlainSubsystem[];
  /** Make the port (the listener) at all (default true). */
  listen?: boolean;
}

export interface PlainTarget extends AsyncDisposable {
  traddr: string;
  svc: number;
  /** null_blk device of subsystem i on the target. */
  device(i: number): string;
  down(): Promise<void>;
}

/** Builds the target on `target`; throws (after undoing what it did) when a write fails. */
export async function plainTargetOn(spec: PlainTargetSpec): Promise<PlainTarget> {
  const traddr = spec.traddr ?? addr("target", 0);
  const svc = spec.svc ?? 4420;
  const up: string[] = ["set -e", "modprobe -a null_blk nvmet-rdma nvmet-tcp"];
  const undo: string[] = [];
  const hosts = new Set<string>();
  spec.subsystems.forEach(({ nqn, allowedHost, sizeMiB }, i) => {
    const nb = `${CFS}/nullb/${spec.tag}_${i}`;
    const s = `${NVMET}/subsystems/${nqn}`;
    const ns = `${s}/namespaces/1`;
    up.push(
      `mkdir ${nb}; echo ${
        sizeMiB ?? 64
      } > ${nb}/size; echo 1 > ${nb}/memory_backed; echo 1 > ${nb}/power`,
      `mkdir ${s}`,
    );
    undo.push(`echo 0 > ${nb}/power; rmdir ${nb}`, `rmdir ${s}`);
    if (allowedHost === undefined) up.push(`echo 1 > ${s}/attr_allow_any_host`);
    else {
      const h = `${NVMET}/hosts/${allowedHost}`;
      up.push(`[ -d ${h} ] || mkdir ${h}`, `ln -s ${h} ${s}/allowed_hosts/${allowedHost}`);
      undo.push(`rm ${s}/allowed_hosts/${allowedHost}`);
      hosts.add(h);
    }
    up.push(`mkdir ${ns}`, `echo /dev/${spec.tag}_${i} > ${ns}/device_path; echo 1 > ${ns}/enable`);
    undo.push(`echo 0 > ${ns}/enable; rmdir ${ns}`);
  });
  if (spec.listen !== false) {
    const p = `${NVMET}/ports/${spec.port}`;
    up.push(
      `mkdir ${p}`,
      `echo ${spec.trtype ?? "rdma"} > ${p}/addr_trtype; echo ipv4 > ${p}/addr_adrfam`,
      `echo ${traddr} > ${p}/addr_traddr; echo ${svc} > ${p}/addr_trsvcid`,
    );
    undo.push(`rmdir ${p}`);
    for (const { nqn } of spec.subsystems) {
      up.push(`ln -s ${NVMET}/subsystems/${nqn} ${p}/subsystems/${nqn}`);
      undo.push(`rm ${p}/subsystems/${nqn}`);
    }
  }
  for (const h of hosts) undo.unshift(`rmdir ${h}`);
  const nqns = spec.subsystems.map((s) => s.nqn);
  const down = async () => {
    // The compute nodes let go first, so no controller is left reconnecting to nothing.
    for (const h of HOSTS) await on(h, deleteControllers(nqns));
    await on("target", undo.reverse().map((l) => `${l} 2>/dev/null`).join("\n"));
    undo.length = 0;
  };
  const built = await on("target", up.join("\n"));
  if (built.code !== 0) {
    await down();
    throw new Error(`plain target: ${built.stderr}`);
  }
  return {
    traddr,
    svc,
    device: (i) => `/dev/${spec.tag}_${i}`,
    down,
    [Symbol.asyncDispose]: down,
  };
}

/** A script that deletes this node's controllers of the NQNs given. */
export function deleteControllers(nqns: string[]): string {
  return nqns.map((n) =>
    `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${n}" ] && echo 1 > $c/delete_controller; done; true`
  ).join("\n");
}

/** The controllers NODE has for NQN (names, e.g. nvme0). */
export async function controllersOf(node: "host1" | "host2", nqn: string): Promise<string[]> {
  const out = await must(
    node,
    `for c in /sys/class/nvme/nvme*; do [ "$(cat $c/subsysnqn 2>/dev/null)" = "${nqn}" ] && basename $c; done; true`,
  );
  return out.split("\n").filter(Boolean);
}
