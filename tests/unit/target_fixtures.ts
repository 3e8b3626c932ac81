/**
 * Shared pieces of the target tests: a stand-in configfs in a temporary directory, a snapshot of
 * a tree (every file's text and every link's target) to prove a rollback restored it exactly.
 */
import { type InjectedFailure, StandinConfigfs } from "../../src/configfs/standin.ts";

export const HOST1 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
export const HOST2 = "nqn.2014-08.org.nvmexpress:uuid:66666666-7777-8888-9999-000000000000";
export const SUB1 = "nqn.2026-10.pk.nextgen:storage-pool-1";
export const SUB2 = "nqn.2026-10.pk.nextgen:storage-pool-2";

/** A stand-in nvmet root in a fresh temporary directory. */
export function standin(failures: InjectedFailure[] = []): StandinConfigfs & Disposable {
  const dir = Deno.makeTempDirSync({ prefix: "nvmeof-cfs-" });
  const io = new StandinConfigfs(`${dir}/nvmet`, { failures }) as StandinConfigfs & Disposable;
  io[Symbol.dispose] = () => Deno.removeSync(dir, { recursive: true });
  return io;
}

/** Every entry under `root`: `path -> file text | link target | <dir>`. */
export function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of Deno.readDirSync(`${root}/${rel}`)) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isSymlink) out[p] = "-> " + Deno.readLinkSync(`${root}/${p}`);
      else if (e.isDirectory) {
        out[p] = "<dir>";
        walk(p);
      } else out[p] = Deno.readTextFileSync(`${root}/${p}`);
    }
  };
  walk("");
  return out;
}

/** Temporary regular files to serve as namespace devices. */
export function devices(n: number): string[] & Disposable {
  const dir = Deno.makeTempDirSync({ prefix: "nvmeof-dev-" });
  const list = Array.from({ length: n }, (_, i) => {
    const p = `${dir}/disk${i}.img`;
    Deno.writeFileSync(p, new Uint8Array(4096));
    return p;
  }) as string[] & Disposable;
  list[Symbol.dispose] = () => Deno.removeSync(dir, { recursive: true });
  return list;
}

/** A spec document as tests edit it (any shape, to build invalid ones too). */
// deno-lint-ignore no-explicit-any
export type Doc = any;

/** A valid spec document with two subsystems, three namespaces and one RDMA port. */
export function twoSubsystemSpec(dev: string[]): Doc {
  return {
    hosts: [{ nqn: HOST1 }],
    subsystems: [
      {
        nqn: SUB1,
        hosts: [HOST1],
        namespaces: [{ nsid: 1, device: dev[0] }, { nsid: 2, device: dev[1] }],
      },
      { nqn: SUB2, allow_any_host: true, namespaces: [{ nsid: 1, device: dev[2] }] },
    ],
    ports: [{
      id: 1,
      trtype: "rdma",
      traddr: "10.77.0.1",
      trsvcid: 4420,
      subsystems: [SUB1, SUB2],
    }],
  };
}
