/**
 * A stand-in for the NVMe host's sysfs and /dev, as Linux 6.1 lays them out with native
 * multipath: one fabrics subsystem reached over two paths (rdma live and optimized, tcp
 * connecting and inaccessible) behind one head, and one PCIe drive whose namespace is its
 * controller's own. Shared by the unit and cli tiers.
 */

export const MP_NQN = "nqn.2024-01.io.example:ha";
export const MP_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000002";
export const MP_HOSTID = "5a1e0000-0000-4000-8000-000000000002";

/** Writes the tree under `root` (sys/, dev/, etc/nvme/); returns nvmeof's environment for it. */
export async function multipathTree(root: string): Promise<Record<string, string>> {
  const w = async (path: string, text: string) => {
    await Deno.mkdir(`${root}/${path.slice(0, path.lastIndexOf("/"))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${path}`, text + "\n");
  };
  await w("etc/nvme/hostnqn", MP_HOSTNQN);
  await w("etc/nvme/hostid", MP_HOSTID);
  const ctrl = async (name: string, transport: string, address: string, state: string) => {
    const d = `sys/class/nvme/${name}`;
    await w(`${d}/transport`, transport);
    await w(`${d}/address`, address);
    await w(`${d}/subsysnqn`, MP_NQN);
    await w(`${d}/hostnqn`, MP_HOSTNQN);
    await w(`${d}/hostid`, MP_HOSTID);
    await w(`${d}/cntlid`, name === "nvme1" ? "1" : "2");
    await w(`${d}/state`, state);
    await w(`${d}/model`, "Linux");
    await w(`${d}/serial`, "9a6b1c2d3e4f5a6b7c8d");
    await w(`${d}/firmware_rev`, "6.1.0-50");
    await Deno.mkdir(`${root}/sys/class/nvme-subsystem/nvme-subsys1/${name}`, { recursive: true });
  };
  await ctrl("nvme1", "rdma", "traddr=10.77.0.1,trsvcid=4420", "live");
  await ctrl("nvme2", "tcp", "traddr=10.77.0.1,trsvcid=4421,src_addr=10.77.0.2", "connecting");
  const path = async (dir: string, ana: string, grp: string) => {
    await w(`${dir}/nsid`, "1");
    await w(`${dir}/size`, "131072");
    await w(`${dir}/queue/logical_block_size`, "512");
    await w(`${dir}/ana_state`, ana);
    await w(`${dir}/ana_grpid`, grp);
  };
  await path("sys/class/nvme/nvme1/nvme1c1n1", "optimized", "1");
  await path("sys/class/nvme/nvme2/nvme1c2n1", "inaccessible", "2");
  // The second path's queue as connect --io-timeout 2 leaves it; the first has no io_timeout.
  await w("sys/class/nvme/nvme2/nvme1c2n1/queue/io_timeout", "2000");
  const s = "sys/class/nvme-subsystem/nvme-subsys1";
  await w(`${s}/subsysnqn`, MP_NQN);
  await w(`${s}/subsystype`, "nvm");
  await w(`${s}/iopolicy`, "round-robin");
  await w(`${s}/model`, "Linux");
  await w(`${s}/serial`, "9a6b1c2d3e4f5a6b7c8d");
  await w(`${s}/firmware_rev`, "6.1.0-50");
  await w(`${s}/nvme1n1/nsid`, "1");
  await w(`${s}/nvme1n1/size`, "131072");
  await w(`${s}/nvme1n1/queue/logical_block_size`, "512");
  await w(`${s}/nvme1n1/nuse`, "1000"); // Linux 6.8+; Identify on a regular file fails (ENOTTY)
  await w("dev/nvme1n1", "");
  await w("dev/ng1n1", "");

  // A PCIe drive: no host NQN, its namespace under its controller, 4 KiB blocks with 8 B of metadata.
  const p = "sys/class/nvme/nvme3";
  await w(`${p}/transport`, "pcie");
  await w(`${p}/address`, "0000:00:04.0");
  await w(`${p}/subsysnqn`, "nqn.2014.08.org.nvmexpress:80868086PHLJ0001");
  await w(`${p}/cntlid`, "0");
  await w(`${p}/state`, "live");
  await w(`${p}/model`, "INTEL SSDPE2KX010T8");
  await w(`${p}/serial`, "PHLJ0001");
  await w(`${p}/firmware_rev`, "VDV10131");
  await w(`${p}/nvme3n1/nsid`, "1");
  await w(`${p}/nvme3n1/size`, "2048");
  await w(`${p}/nvme3n1/queue/logical_block_size`, "4096");
  await w(`${p}/nvme3n1/nuse`, "128");
  await w(`${p}/nvme3n1/metadata_bytes`, "8");
  await w(`${p}/nvme3n1/queue/io_timeout`, "30000");
  await w("dev/nvme3n1", "");
  const q = "sys/class/nvme-subsystem/nvme-subsys3";
  await w(`${q}/subsysnqn`, "nqn.2014.08.org.nvmexpress:80868086PHLJ0001");
  await Deno.mkdir(`${root}/${q}/nvme3`, { recursive: true });
  return {
    NVMEOF_SYSFS: `${root}/sys`,
    NVMEOF_DEV: `${root}/dev`,
    NVMEOF_ETC_NVME: `${root}/etc/nvme`,
  };
}
