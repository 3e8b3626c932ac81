/**
 * Shared pieces of the target tests: a stand-in configfs in a temporary directory, a snapshot of
 * a tree (every file's text and every link's target) to prove a rollback restored it exactly.
 */
import { type InjectedFailure, StandinConfigfs } from "../standin/configfs.ts";

export const HOST1 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
export const HOST2 = "nqn.2014-08.org.nvmexpress:uuid:66666666-7777-8888-9999-000000000000";
export const SUB1 = "nqn.2026-10.pk.nextgen:storage-pool-1";
export const SUB2 = "nqn.2026-10.pk.nextgen:storage-pool-2";

/** A stand-in nvmet root in a fresh temporary directory. */
export function standin(
  failures: InjectedFailure[] = [],
  options: { kernel?: "6.1" } = {},
): StandinConfigfs & Disposable {
  const dir = Deno.makeTempDirSync({ prefix: "nvmeof-cfs-" });
  const io = new StandinConfigfs(`${dir}/nvmet`, { failures, ...options }) as
    & StandinConfigfs
    & Disposable;
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

/** Changes a valid spec document into an invalid one. */
export type Mutate = (s: Doc, dev: string[]) => void;

/**
 * Bad inputs for the validator: each row breaks one thing in twoSubsystemSpec and gives the spec
 * path the error must name and words of its message.
 */
export const BAD_SPECS: Array<[string, Mutate, string, RegExp]> = [
  ["unknown top-level key", (s) => (s.portz = []), "portz", /not a known key/],
  [
    "unknown subsystem key",
    (s) => (s.subsystems[0].allow_any_hosts = true),
    "subsystems[0].allow_any_hosts",
    /not a known key/,
  ],
  [
    "NQN with whitespace",
    (s) => (s.subsystems[0].nqn = "storage pool 1"),
    "subsystems[0].nqn",
    /contains whitespace or control characters/,
  ],
  [
    "NQN longer than 222 bytes",
    (s) => (s.subsystems[0].nqn = "nqn.2026-10.pk.nextgen:" + "x".repeat(200)),
    "subsystems[0].nqn",
    /223 bytes long; Linux hosts accept at most 222/,
  ],
  [
    "discovery NQN as subsystem",
    (s) => (s.subsystems[0].nqn = "nqn.2014-08.org.nvmexpress.discovery"),
    "subsystems[0].nqn",
    /discovery NQN/,
  ],
  [
    "NQN with a slash",
    (s) => (s.subsystems[0].nqn = "nqn.2026-10.pk.nextgen:a/b"),
    "subsystems[0].nqn",
    /contains '\/'/,
  ],
  [
    "duplicate subsystem NQN",
    (s) => (s.subsystems[1].nqn = SUB1),
    "subsystems[1].nqn",
    /duplicates subsystem NQN/,
  ],
  [
    "a host listed twice under a subsystem",
    (s) => (s.subsystems[0].hosts = [HOST1, HOST2, HOST1]),
    "subsystems[0].hosts[2]",
    /^duplicates host '[^']+' of subsystems\[0\]\.hosts\[0\]\.$/,
  ],
  [
    "a bad NQN among a subsystem's good hosts",
    (s) => (s.subsystems[0].hosts = [HOST1, HOST2, "nqn.2026-10.pk.nextgen:a/b"]),
    "subsystems[0].hosts[2]",
    /contains '\/'/,
  ],
  [
    "duplicate nsid",
    (s) => (s.subsystems[0].namespaces[1].nsid = 1),
    "subsystems[0].namespaces[1].nsid",
    /duplicates nsid '1'/,
  ],
  [
    "nsid zero",
    (s) => (s.subsystems[0].namespaces[0].nsid = 0),
    "subsystems[0].namespaces[0].nsid",
    /integer from 1/,
  ],
  [
    "missing device",
    (s) => (s.subsystems[0].namespaces[1].device = "/dev/does-not-exist-nvmeof"),
    "subsystems[0].namespaces[1].device",
    /does not exist/,
  ],
  [
    "device is a directory",
    (s) => (s.subsystems[0].namespaces[1].device = "/tmp"),
    "subsystems[0].namespaces[1].device",
    /neither a block device nor a regular file/,
  ],
  [
    "device is a character device",
    (s) => (s.subsystems[0].namespaces[0].device = "/dev/null"),
    "subsystems[0].namespaces[0].device",
    /neither a block device/,
  ],
  [
    "bad uuid",
    (s) => (s.subsystems[0].namespaces[0].uuid = "1234"),
    "subsystems[0].namespaces[0].uuid",
    /not a UUID/,
  ],
  [
    "bad nguid",
    (s) => (s.subsystems[0].namespaces[0].nguid = "xyz"),
    "subsystems[0].namespaces[0].nguid",
    /not an NGUID/,
  ],
  [
    "serial too long",
    (s) => (s.subsystems[0].serial = "x".repeat(21)),
    "subsystems[0].serial",
    /1 to 20 printable ASCII/,
  ],
  [
    "allow_any_host with hosts",
    (s) => (s.subsystems[0].allow_any_host = true),
    "subsystems[0].allow_any_host",
    /EINVAL/,
  ],
  [
    "allow_any_host not a boolean",
    (s) => (s.subsystems[1].allow_any_host = "yes"),
    "subsystems[1].allow_any_host",
    /true or false/,
  ],
  [
    "host NQN invalid",
    (s) => (s.subsystems[0].hosts = ["host/1"]),
    "subsystems[0].hosts[0]",
    /contains '\/'/,
  ],
  [
    "duplicate port id",
    (s) => s.ports.push({ id: 1, traddr: "10.77.0.2", subsystems: [] }),
    "ports[1].id",
    /duplicates port id '1'/,
  ],
  [
    "same address twice",
    (s) => s.ports.push({ id: 2, traddr: "10.77.0.1", subsystems: [] }),
    "ports[1].traddr",
    /EADDRINUSE/,
  ],
  [
    "bad IPv4",
    (s) => (s.ports[0].traddr = "10.77.0.256"),
    "ports[0].traddr",
    /neither an IPv4 nor an IPv6/,
  ],
  [
    "IPv6 address with adrfam ipv4",
    (s) => {
      s.ports[0].traddr = "fd00::1";
      s.ports[0].adrfam = "ipv4";
    },
    "ports[0].traddr",
    /not an IPv4 address/,
  ],
  ["adrfam ib on rdma", (s) => (s.ports[0].adrfam = "ib"), "ports[0].adrfam", /ipv4 or ipv6/],
  ["trsvcid out of range", (s) => (s.ports[0].trsvcid = 70000), "ports[0].trsvcid", /1 to 65535/],
  ["unknown transport", (s) => (s.ports[0].trtype = "fc"), "ports[0].trtype", /rdma, tcp or loop/],
  [
    "port names an undefined subsystem",
    (s) => (s.ports[0].subsystems = ["nqn.2026-10.pk.nextgen:nope"]),
    "ports[0].subsystems[0]",
    /does not define/,
  ],
  ["tsas on rdma", (s) => (s.ports[0].tsas = "tls1.3"), "ports[0].tsas", /only for tcp/],
  [
    "missing key file",
    (s) => (s.hosts[0].dhchap_key_file = "/nonexistent/key"),
    "hosts[0].dhchap_key_file",
    /does not exist/,
  ],
  [
    "namespaces not a list",
    (s) => (s.subsystems[0].namespaces = { nsid: 1 }),
    "subsystems[0].namespaces",
    /must be a list/,
  ],
];
