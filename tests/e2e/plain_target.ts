/**
 * A target built with plain configfs writes, no nvmeof code: the independent peer the initiator
 * e2e tests run against. One 64 MiB memory-backed null_blk, exported as namespace 1 of every
 * subsystem, on one RDMA port. Each step's undo is recorded as it succeeds; `down()` runs them in
 * reverse, and a build that fails midway undoes what it did before throwing.
 */
import { bash as sh, must } from "../helpers.ts";

const CFS = "/sys/kernel/config";
const NVMET = `${CFS}/nvmet`;

export interface PlainSubsystem {
  nqn: string;
  /** The only host allowed to connect; absent: any host (attr_allow_any_host=1). */
  allowedHost?: string;
}

export interface PlainTargetSpec {
  /** Names the null_blk device (/dev/TAG); unique per test run. */
  tag: string;
  /** nvmet port id. */
  port: string;
  addr: string;
  svc: string;
  subsystems: PlainSubsystem[];
}

export interface PlainTarget {
  /** The port's configfs directory. */
  port: string;
  /** Undoes every step, in reverse; tolerates a port or link the test removed itself. */
  down(): Promise<void>;
}

export async function plainTarget(spec: PlainTargetSpec): Promise<PlainTarget> {
  const undo: string[] = [];
  const down = async () => {
    for (const cmd of undo.reverse()) await sh(cmd);
    undo.length = 0;
  };
  try {
    await sh("modprobe null_blk nr_devices=0; modprobe nvmet-rdma; modprobe nvme-rdma");
    const nb = `${CFS}/nullb/${spec.tag}`;
    await must(`mkdir ${nb}`);
    undo.push(`rmdir ${nb}`, `echo 0 > ${nb}/power`);
    await must(`echo 64 > ${nb}/size; echo 1 > ${nb}/memory_backed; echo 1 > ${nb}/power`);
    for (const { nqn, allowedHost } of spec.subsystems) {
      const s = `${NVMET}/subsystems/${nqn}`;
      await must(`mkdir ${s}`);
      undo.push(`rmdir ${s}`);
      if (allowedHost === undefined) await must(`echo 1 > ${s}/attr_allow_any_host`);
      else {
        const h = `${NVMET}/hosts/${allowedHost}`;
        await must(`mkdir ${h}`);
        undo.push(`rmdir ${h}`);
        await must(`ln -s ${h} ${s}/allowed_hosts/${allowedHost}`);
        undo.push(`rm ${s}/allowed_hosts/${allowedHost}`);
      }
      const ns = `${s}/namespaces/1`;
      await must(`mkdir ${ns}`);
      undo.push(`rmdir ${ns}`, `echo 0 > ${ns}/enable`);
      await must(`echo /dev/${spec.tag} > ${ns}/device_path; echo 1 > ${ns}/enable`);
    }
    const p = `${NVMET}/ports/${spec.port}`;
    await must(`mkdir ${p}`);
    undo.push(`[ ! -d ${p} ] || rmdir ${p}`);
    await must(
      `echo rdma > ${p}/addr_trtype; echo ipv4 > ${p}/addr_adrfam; ` +
        `echo ${spec.addr} > ${p}/addr_traddr; echo ${spec.svc} > ${p}/addr_trsvcid`,
    );
    for (const { nqn } of spec.subsystems) {
      const link = `${p}/subsystems/${nqn}`;
      await must(`ln -s ${NVMET}/subsystems/${nqn} ${link}`);
      undo.push(`[ ! -L ${link} ] || rm ${link}`);
    }
    return { port: p, down };
  } catch (err) {
    await down();
    throw err;
  }
}
