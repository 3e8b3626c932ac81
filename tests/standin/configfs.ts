/**
 * A plain directory standing in for the kernel's nvmet configfs, for the unit and cli tiers. It is
 * test code, not part of the product: the cli tier reaches it through tests/standin/main.ts.
 *
 * What it mirrors of drivers/nvme/target/configfs.c (facts §3): `mkdir` of a host, subsystem,
 * namespace or port creates that group's attribute files with the kernel's defaults and its
 * default child groups; `rmdir` removes them and refuses (ENOTEMPTY) while user-made children
 * remain; writing a port's `addr_*`/`param_*` while the port has a subsystem link is EACCES; writing
 * a namespace's `device_*` while it is enabled is EBUSY (`buffered_io`: EINVAL); enabling a namespace whose device does not
 * exist is ENOENT; removing a subsystem a port links to is EBUSY; `attr_allow_any_host` 1 with allowed hosts, or a host link while any host is
 * allowed, is EINVAL; linking a subsystem to a port without a transport type is EINVAL; an ANA
 * group is made `inaccessible`, its id must be 1..128 (EINVAL) and group 1 cannot go (EPERM); a
 * referral is made disabled, with empty addresses, which it refuses to change while enabled (EACCES). `kernel: "6.1"` leaves out the files Debian's
 * 6.1 lacks (lab-probed): discovery_nqn, dhchap_*, attr_ieee_oui, attr_firmware, addr_tsas,
 * param_max_queue_size; without it the tree is a newer kernel's (still without resv_enable).
 *
 * It does not invent success: anything else is the filesystem's own answer. Failures can be
 * injected to prove rollback: `failures` selects a mutating operation by its 1-based ordinal
 * (`#3=EIO`) or by operation and path (`link ports/1/subsystems/nqn.x=EADDRNOTAVAIL`).
 */
import { DirectoryConfigfs } from "../../src/configfs/io.ts";

/** One injected failure. */
export interface InjectedFailure {
  /** The 1-based ordinal of the mutating operation to fail, or undefined to match by op/path. */
  ordinal?: number;
  op?: "write" | "mkdir" | "rmdir" | "link" | "unlink";
  path?: string;
  /** errno name to fail with, e.g. "EADDRNOTAVAIL". */
  errno: string;
}

/** Parses `#3=EIO;link ports/1/subsystems/x=EADDRNOTAVAIL` (the NVMEOF_CONFIGFS_FAIL format). */
export function parseFailures(text: string): InjectedFailure[] {
  return text.split(";").map((s) => s.trim()).filter(Boolean).map((entry) => {
    const eq = entry.lastIndexOf("=");
    if (eq < 0) throw new Error(`Bad injected failure '${entry}': expected SELECTOR=ERRNO.`);
    const sel = entry.slice(0, eq).trim();
    const errno = entry.slice(eq + 1).trim();
    if (sel.startsWith("#")) return { ordinal: Number(sel.slice(1)), errno };
    const [op, path] = sel.split(/\s+/, 2);
    return { op: op as InjectedFailure["op"], path, errno };
  });
}

/** An errno-carrying error shaped like Deno's own (`code` is the errno name). */
export function errnoError(code: string, what: string): Error {
  const err = new Error(`${code}: ${what}`);
  (err as { code?: string }).code = code;
  return err;
}

const ZERO_UUID = "00000000-0000-0000-0000-000000000000";

function randomSerial(): string {
  const b = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Files Debian's Linux 6.1 does not have (probed in the lab guest). */
const NOT_ON_6_1 = new Set([
  "dhchap_key",
  "dhchap_ctrl_key",
  "dhchap_hash",
  "dhchap_dhgroup",
  "attr_ieee_oui",
  "attr_firmware",
  "addr_tsas",
  "param_max_queue_size",
]);

/** The attribute files and default groups the kernel makes on `mkdir` of each group. */
function kernelDefaults(path: string): { files: Record<string, string>; dirs: string[] } | null {
  const p = path.split("/");
  if (p.length === 4 && p[0] === "ports" && p[2] === "ana_groups") {
    return { files: { ana_state: "inaccessible" }, dirs: [] };
  }
  if (p.length === 4 && p[0] === "ports" && p[2] === "referrals") {
    return {
      files: {
        addr_trtype: "",
        addr_adrfam: "",
        addr_traddr: "",
        addr_trsvcid: "",
        addr_portid: "0",
        addr_treq: "not specified",
        enable: "0",
      },
      dirs: [],
    };
  }
  if (p.length === 2 && p[0] === "hosts") {
    return {
      files: {
        dhchap_key: "",
        dhchap_ctrl_key: "",
        dhchap_hash: "hmac(sha256)",
        dhchap_dhgroup: "null",
      },
      dirs: [],
    };
  }
  if (p.length === 2 && p[0] === "subsystems") {
    return {
      files: {
        attr_allow_any_host: "0",
        attr_version: "1.3",
        attr_serial: randomSerial(),
        attr_model: "Linux",
        attr_cntlid_min: "1",
        attr_cntlid_max: "65519",
        attr_qid_max: "128",
        attr_ieee_oui: "0x000000",
        attr_firmware: "6.1.0",
        attr_pi_enable: "0",
      },
      dirs: ["allowed_hosts", "namespaces"],
    };
  }
  if (p.length === 4 && p[0] === "subsystems" && p[2] === "namespaces") {
    return {
      files: {
        device_path: "(null)", // the kernel prints the unset path with %s
        device_uuid: crypto.randomUUID(), // nvmet_ns_alloc() generates one
        device_nguid: ZERO_UUID,
        ana_grpid: "1",
        enable: "0",
        buffered_io: "0",
        revalidate_size: "",
      },
      dirs: [],
    };
  }
  if (p.length === 2 && p[0] === "ports") {
    return {
      files: {
        addr_trtype: "",
        addr_adrfam: "",
        addr_traddr: "",
        addr_trsvcid: "",
        addr_treq: "not specified",
        addr_tsas: "reserved",
        param_inline_data_size: "-1",
        param_max_queue_size: "-1",
        param_pi_enable: "0",
      },
      dirs: ["subsystems", "referrals", "ana_groups", "ana_groups/1"],
    };
  }
  return null;
}

/** A temporary directory that behaves like nvmet configfs where the tests need it to. */
export class StandinConfigfs extends DirectoryConfigfs {
  #failures: InjectedFailure[];
  #ops = 0;
  #kernel: "6.1" | undefined;
  /** Every mutating operation attempted, in order (`write subsystems/x/attr_serial`). */
  readonly journal: string[] = [];

  constructor(
    root: string,
    options: { failures?: InjectedFailure[]; kernel?: "6.1" } = {},
  ) {
    super(root);
    this.#failures = options.failures ?? [];
    this.#kernel = options.kernel;
    Deno.mkdirSync(root, { recursive: true });
    for (const d of ["hosts", "subsystems", "ports"]) {
      Deno.mkdirSync(`${root}/${d}`, { recursive: true });
    }
    if (!this.exists("discovery_nqn") && this.#kernel !== "6.1") {
      Deno.writeTextFileSync(`${root}/discovery_nqn`, "nqn.2014-08.org.nvmexpress.discovery\n");
    }
  }

  #check(op: NonNullable<InjectedFailure["op"]>, path: string): void {
    this.#ops++;
    this.journal.push(`${op} ${path}`);
    for (const f of this.#failures) {
      if (f.ordinal === this.#ops || (f.op === op && f.path === path)) {
        throw errnoError(f.errno, `${op} '${path}' (injected)`);
      }
    }
  }

  #portEnabled(port: string): boolean {
    return this.list(`ports/${port}/subsystems`).length > 0;
  }

  override write(path: string, value: string): void {
    this.#check("write", path);
    const p = path.split("/");
    const name = p[p.length - 1];
    if (!this.exists(path)) throw errnoError("ENOENT", `no attribute '${path}'`);
    if (
      p[0] === "ports" && p[2] === "referrals" && p.length === 5 && name.startsWith("addr_") &&
      this.read(`ports/${p[1]}/referrals/${p[3]}/enable`) === "1"
    ) {
      throw errnoError("EACCES", `referral ${p[3]} is enabled`);
    }
    if (p[0] === "ports" && p[2] === "ana_groups" && name === "ana_state") {
      const states = ["optimized", "non-optimized", "inaccessible", "persistent-loss", "change"];
      if (!states.includes(value.trim())) throw errnoError("EINVAL", `ana_state '${value}'`);
    }
    if (
      p[0] === "ports" && p.length === 3 && /^(addr|param)_/.test(name) && this.#portEnabled(p[1])
    ) {
      throw errnoError("EACCES", `port ${p[1]} is enabled`);
    }
    if (p[0] === "subsystems" && p.length === 5 && p[2] === "namespaces") {
      const dir = p.slice(0, 4).join("/");
      const enabled = this.read(`${dir}/enable`) === "1";
      if (/^device_/.test(name) && enabled) throw errnoError("EBUSY", `namespace enabled`);
      if (name === "device_path" && value.trim() === "") throw errnoError("EINVAL", "empty path");
      if (name === "buffered_io" && enabled) throw errnoError("EINVAL", `namespace enabled`);
      if (name === "enable" && value.trim() === "1" && !enabled) {
        const dev = this.read(`${dir}/device_path`);
        if (dev === "(null)") throw errnoError("EINVAL", "no device_path");
        try {
          Deno.statSync(dev);
        } catch {
          throw errnoError("ENOENT", `device '${dev}'`);
        }
      }
    }
    if (p[0] === "subsystems" && name === "attr_allow_any_host" && value.trim() === "1") {
      if (this.list(`subsystems/${p[1]}/allowed_hosts`).length > 0) {
        throw errnoError("EINVAL", "allowed_hosts not empty");
      }
    }
    super.write(path, value.replace(/\n$/, "") + "\n");
    // Setting the transport resets its security type (nvmet_port_init_tsas_*): none for tcp.
    if (p[0] === "ports" && p.length === 3 && name === "addr_trtype" && this.#kernel !== "6.1") {
      super.write(`ports/${p[1]}/addr_tsas`, value.trim() === "tcp" ? "none\n" : "reserved\n");
    }
  }

  override mkdir(path: string): void {
    this.#check("mkdir", path);
    const d = kernelDefaults(path);
    if (!d) return super.mkdir(path);
    if (this.exists(path)) throw errnoError("EEXIST", path);
    const p = path.split("/");
    if (p[2] === "ana_groups" && (!/^[1-9]\d*$/.test(p[3]) || Number(p[3]) > 128)) {
      throw errnoError("EINVAL", `ANA group '${p[3]}'`);
    }
    // The kernel makes a group with all its attributes and default groups at once: build it
    // beside the tree, then rename it into place, so that no one sees it half made.
    const tmp = Deno.makeTempDirSync({ dir: `${this.root}/..`, prefix: ".standin-mkdir-" });
    try {
      for (const dir of d.dirs) Deno.mkdirSync(`${tmp}/${dir}`);
      for (const [f, v] of Object.entries(d.files)) {
        if (this.#kernel === "6.1" && NOT_ON_6_1.has(f)) continue;
        Deno.writeTextFileSync(`${tmp}/${f}`, v + "\n");
      }
      if (p[0] === "ports" && p.length === 2) {
        Deno.writeTextFileSync(`${tmp}/ana_groups/1/ana_state`, "optimized\n");
      }
      Deno.chmodSync(tmp, 0o755);
      Deno.renameSync(tmp, `${this.root}/${path}`);
    } catch (err) {
      Deno.removeSync(tmp, { recursive: true });
      throw err;
    }
  }

  override rmdir(path: string): void {
    this.#check("rmdir", path);
    const p = path.split("/");
    if (p[0] === "ports" && p[2] === "ana_groups" && p[3] === "1") {
      throw errnoError("EPERM", "ANA group 1 is the port's own");
    }
    if (p[0] === "subsystems" && p.length === 2) {
      for (const port of this.list("ports")) {
        if (this.exists(`ports/${port}/subsystems/${p[1]}`)) {
          throw errnoError("EBUSY", `'${path}' is linked from port ${port}`);
        }
      }
    }
    const d = kernelDefaults(path);
    if (d) {
      for (const dir of d.dirs) {
        if (dir === "ana_groups/1") continue;
        const extra = this.list(`${path}/${dir}`).filter((n) =>
          !(dir === "ana_groups" && n === "1")
        );
        if (extra.length) throw errnoError("ENOTEMPTY", `'${path}/${dir}' has ${extra[0]}`);
      }
      Deno.removeSync(`${this.root}/${path}`, { recursive: true });
      return;
    }
    super.rmdir(path);
  }

  override link(path: string, target: string): void {
    this.#check("link", path);
    const p = path.split("/");
    if (p[0] === "subsystems" && p[2] === "allowed_hosts") {
      if (this.read(`subsystems/${p[1]}/attr_allow_any_host`) === "1") {
        throw errnoError("EINVAL", "allow_any_host is set");
      }
    }
    if (
      p[0] === "ports" && p[2] === "subsystems" && this.read(`ports/${p[1]}/addr_trtype`) === ""
    ) {
      throw errnoError("EINVAL", "port has no trtype");
    }
    if (this.exists(path)) throw errnoError("EEXIST", path);
    // The kernel's links read back relative, up to the configfs root and down again
    // ("../../../../nvmet/hosts/<nqn>"), whatever target they were made with.
    const up = "../".repeat(path.split("/").length);
    const nvmet = this.root.slice(this.root.lastIndexOf("/") + 1);
    Deno.symlinkSync(`${up}${nvmet}/${target}`, `${this.root}/${path}`);
  }

  override unlink(path: string): void {
    this.#check("unlink", path);
    super.unlink(path);
  }
}
