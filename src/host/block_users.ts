/**
 * Who uses a block device: what a tool must check before it takes a device away. A device (or
 * one of its partitions) is in use when it is mounted (`<proc>/self/mountinfo` by major:minor),
 * a swap area (`<proc>/swaps`), held by another block device (device-mapper, md: its sysfs
 * `holders`), or open in a process (a `<proc>/<pid>/fd` link to its node, as fuser finds it).
 * What cannot be read counts as a use: the answer errs on the side of keeping the device.
 */
import { listDir, readText } from "./kfs.ts";

/** The roots read: sysfs (`class/block`) and procfs. */
export interface BlockUserRoots {
  sysfs: string;
  proc: string;
  dev: string;
}

/** The device and its partitions: name → "major:minor". */
function devicesOf(roots: BlockUserRoots, name: string): Map<string, string> {
  const out = new Map<string, string>();
  const dir = `${roots.sysfs}/class/block/${name}`;
  const dev = (d: string) => {
    try {
      return readText(`${d}/dev`).trim();
    } catch {
      return undefined;
    }
  };
  const own = dev(dir);
  if (own) out.set(name, own);
  for (const p of listDir(dir)) {
    if (!p.startsWith(name)) continue;
    const n = dev(`${dir}/${p}`);
    if (n) out.set(p, n);
  }
  return out;
}

function readWhole(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * What uses block device NAME (`nvme1n1`) or its partitions, one phrase each ("mounted at /mnt",
 * "held by dm-0", "open by pid 412 (fio)"); empty when nothing does.
 */
export function blockUsers(roots: BlockUserRoots, name: string): string[] {
  const devices = devicesOf(roots, name);
  if (devices.size === 0) return [];
  const out: string[] = [];
  const byNumber = new Map([...devices].map(([n, mm]) => [mm, n]));
  const mountinfo = readWhole(`${roots.proc}/self/mountinfo`);
  if (mountinfo === undefined) out.push(`its mounts cannot be read (${roots.proc}/self/mountinfo)`);
  for (const line of (mountinfo ?? "").split("\n")) {
    const f = line.split(" ");
    const dev = byNumber.get(f[2]);
    if (dev) out.push(`${dev} mounted at ${f[4]?.replace(/\\040/g, " ")}`);
  }
  const nodes = new Map([...devices.keys()].map((n) => [`${roots.dev}/${n}`, n]));
  for (const line of (readWhole(`${roots.proc}/swaps`) ?? "").split("\n").slice(1)) {
    const dev = nodes.get(line.split(/\s+/)[0]);
    if (dev) out.push(`${dev} is a swap area`);
  }
  for (const n of devices.keys()) {
    const dir = n === name
      ? `${roots.sysfs}/class/block/${n}`
      : `${roots.sysfs}/class/block/${name}/${n}`;
    for (const h of listDir(`${dir}/holders`)) out.push(`${n} held by ${h}`);
  }
  for (const pid of listDir(roots.proc)) {
    if (!/^\d+$/.test(pid)) continue;
    const fds = `${roots.proc}/${pid}/fd`;
    let list: string[];
    try {
      list = listDir(fds);
    } catch {
      out.push(`the open files of pid ${pid} cannot be read`);
      continue;
    }
    for (const fd of list) {
      let target: string;
      try {
        target = Deno.readLinkSync(`${fds}/${fd}`);
      } catch {
        continue; // the process or the fd went away
      }
      const dev = nodes.get(target);
      if (!dev) continue;
      const comm = readWhole(`${roots.proc}/${pid}/comm`)?.trim();
      out.push(`${dev} open by pid ${pid}${comm ? ` (${comm})` : ""}`);
      break;
    }
  }
  return out;
}
