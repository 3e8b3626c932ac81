/**
 * A stand-in host for the metrics, shared by the unit and cli tiers: the multipath host of
 * tests/sysfs_standin.ts (two paths: rdma live and optimized, tcp connecting and inaccessible)
 * with its timeouts and block statistics, an rxe-like RDMA port with hw_counters, and an nvmet
 * tree (two ports, two subsystems, one of them with an NQN holding quotes, a backslash, spaces
 * and a newline) whose tcp port has a listening socket and a connected host in /proc/net/tcp.
 */
import { multipathTree } from "./sysfs_standin.ts";

/** The subsystem of the stand-in target with an awkward NQN. */
export const ODD_NQN = 'nqn.2026-01.io.example:odd "quoted" back\\slash two words\nline';
/** The other subsystem of the stand-in target. */
export const PLAIN_NQN = "nqn.2026-01.io.example:plain";
/** The stand-in's netdev MTU (a RoCE active MTU of 1024). */
export const NETDEV_MTU = 1500;

/** Hosts in the stand-in's kernel log. */
export const HOST_A = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001";
export const HOST_B = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002";

/** A `stat` line: reads 10, 80 sectors, 7 ms; writes 20, 160 sectors, 9 ms; 3 in flight. */
export const STAT_LINE = "10 0 80 7 20 0 160 9 3 50 60 0 0 0 0 0 0";

/** Writes the tree under `root`; returns the environment and the nvmet root. */
export async function metricsTree(
  root: string,
): Promise<{ env: Record<string, string>; nvmet: string }> {
  const env = await multipathTree(root);
  const w = async (path: string, text: string) => {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text + "\n");
  };
  for (const c of ["nvme1", "nvme2"]) {
    await w(`sys/class/nvme/${c}/kato`, "5");
    await w(`sys/class/nvme/${c}/reconnect_delay`, "10");
    await w(`sys/class/nvme/${c}/fast_io_fail_tmo`, "off");
  }
  await w("sys/class/nvme/nvme1/ctrl_loss_tmo", "600");
  await w("sys/class/nvme/nvme2/ctrl_loss_tmo", "off");
  for (const dev of ["nvme1n1", "nvme1c1n1", "nvme1c2n1", "nvme3n1", "loop7"]) {
    await w(`sys/class/block/${dev}/stat`, STAT_LINE);
  }
  // rxe0 port 1 over eth1.
  const p = "sys/class/infiniband/rxe0/ports/1";
  await w(`${p}/state`, "4: ACTIVE");
  await w(`${p}/phys_state`, "5: LinkUp");
  await w(`${p}/rate`, "10 Gb/sec (1X QDR)");
  await w(`${p}/link_layer`, "Ethernet");
  await w(`${p}/gid_attrs/ndevs/0`, "eth1");
  await w(`${p}/gid_attrs/ndevs/1`, "eth1");
  await w(`${p}/hw_counters/rcvd_seq_err`, "3");
  await w(`${p}/hw_counters/duplicate_request`, "1");
  await w(`${p}/hw_counters/lifespan`, "10");
  await w(`${p}/counters/port_xmit_data`, "1234");
  await w("sys/class/net/eth1/mtu", String(NETDEV_MTU));

  // nvmet: port 1 tcp 10.77.0.1:4420 with both subsystems, port 2 rdma with the plain one.
  const n = "config/nvmet";
  const sub = async (nqn: string, anyHost: string, nsid: string, device: string, on: string) => {
    const d = `${n}/subsystems/${nqn}`;
    await w(`${d}/attr_allow_any_host`, anyHost);
    await w(`${d}/namespaces/${nsid}/device_path`, device);
    await w(`${d}/namespaces/${nsid}/enable`, on);
    await Deno.mkdir(`${root}/${d}/allowed_hosts`, { recursive: true });
  };
  await sub(PLAIN_NQN, "1", "1", "/dev/loop7", "1");
  await sub(ODD_NQN, "0", "2", "/dev/loop8", "0");
  await Deno.mkdir(`${root}/${n}/subsystems/${ODD_NQN}/allowed_hosts/nqn.host-a`, {
    recursive: true,
  });
  await Deno.mkdir(`${root}/${n}/hosts`, { recursive: true });
  const port = async (id: string, trtype: string, trsvcid: string, subs: string[]) => {
    const d = `${n}/ports/${id}`;
    await w(`${d}/addr_trtype`, trtype);
    await w(`${d}/addr_adrfam`, "ipv4");
    await w(`${d}/addr_traddr`, "10.77.0.1");
    await w(`${d}/addr_trsvcid`, trsvcid);
    await w(`${d}/ana_groups/1/ana_state`, "optimized");
    await Deno.mkdir(`${root}/${d}/subsystems`, { recursive: true });
    for (const s of subs) {
      await Deno.symlink(`${root}/${n}/subsystems/${s}`, `${root}/${d}/subsystems/${s}`);
    }
  };
  await port("1", "tcp", "4420", [PLAIN_NQN, ODD_NQN]);
  await port("2", "rdma", "4421", [PLAIN_NQN]);
  // 10.77.0.1:4420 listening, and two queues of 10.77.0.2 connected to it (words printed %08X).
  await w(
    "proc/net/tcp",
    [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid",
      "   0: 01004D0A:1144 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0",
      "   1: 01004D0A:1144 02004D0A:C822 01 00000000:00000000 00:00000000 00000000     0",
      "   2: 01004D0A:1144 02004D0A:C823 01 00000000:00000000 00:00000000 00000000     0",
    ].join("\n"),
  );
  // The kernel log as /dev/kmsg gives it: two controllers for host A, one (with DH-HMAC-CHAP) for B.
  await w(
    "dev/kmsg",
    [
      `6,801,1000,-;nvmet: creating nvm controller 1 for subsystem ${PLAIN_NQN} for NQN ${HOST_A}.`,
      "4,802,1001,-;nvme nvme1: starting error recovery",
      `6,803,1002,-;nvmet: creating nvm controller 2 for subsystem ${PLAIN_NQN} for NQN ${HOST_A}.`,
      `6,804,1003,-;nvmet: Created nvm controller 3 for subsystem ${PLAIN_NQN} for NQN ${HOST_B} with DH-HMAC-CHAP.`,
      " SUBSYSTEM=nvmet",
    ].join("\n"),
  );
  return {
    env: { ...env, NVMEOF_PROC: `${root}/proc` },
    nvmet: `${root}/${n}`,
  };
}
