/**
 * A namespace's size, use and block format, as nvme-cli's `list` shows them: from Identify
 * Namespace on its block device (what libnvme does), or, where that ioctl is refused, from sysfs
 * (`size`, `queue/logical_block_size`, and `nuse`, which Linux has from 6.8 on).
 */
import { EACCES, EPERM } from "../../ffi/libc.ts";
import { EnvironmentError, errnoOf, FailureError, NativeError } from "../errors.ts";
import { AdminDevice } from "./admin.ts";
import { readAttr } from "./sysfs.ts";

/** Size and use in logical blocks, and the block format in use. */
export interface NamespaceUsage {
  /** NSZE: size in logical blocks (nvme-cli's MaximumLBA). */
  nsze: number;
  /** NUSE: logical blocks in use. */
  nuse: number;
  /** Logical block size in bytes (nvme-cli's SectorSize). */
  lbaSize: number;
  /** Metadata bytes per block (nvme-cli's "+ N B" in its Format column). */
  metaSize: number;
  /** Where it was read. */
  source: "identify" | "sysfs";
}

/**
 * Reads the usage of the namespace whose block device is `device` and whose sysfs directory is
 * `sysDir`. Throws EnvironmentError when Identify needs root and sysfs has no `nuse`.
 */
export async function namespaceUsage(
  device: string,
  nsid: number,
  sysDir: string,
): Promise<NamespaceUsage> {
  let cause: unknown;
  try {
    using dev = AdminDevice.open(device);
    const id = dev.identifyNamespace(nsid);
    return {
      nsze: Number(id.nsze),
      nuse: Number(id.nuse),
      lbaSize: id.lbaSize,
      metaSize: id.metaSize,
      source: "identify",
    };
  } catch (err) {
    cause = err;
  }
  const num = async (attr: string) => {
    const v = await readAttr(sysDir, attr);
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
  };
  const nuse = await num("nuse");
  const sectors = await num("size");
  const lbaSize = await num("queue/logical_block_size");
  if (nuse !== undefined && sectors !== undefined && lbaSize) {
    return {
      nsze: (sectors * 512) / lbaSize,
      nuse,
      lbaSize,
      metaSize: await num("metadata_bytes") ?? 0,
      source: "sysfs",
    };
  }
  const e = cause instanceof NativeError ? cause.errno : errnoOf(cause);
  const why = (cause as Error).message;
  if (e === EACCES || e === EPERM) {
    throw new EnvironmentError(`Cannot read the use of '${device}': ${why}`, {
      hint: "Run as root (Identify Namespace needs it, as for nvme-cli), or use " +
        "'nvmeof list --paths', which reads sysfs only.",
      cause,
    });
  }
  throw new FailureError(`Cannot read the use of '${device}': ${why}`, {
    hint: "Linux before 6.8 has no 'nuse' in sysfs; 'nvmeof list --paths' reads sysfs only.",
    cause,
  });
}
