/**
 * Following one discovery endpoint: hold one persistent discovery controller there (found among
 * the host's controllers, or made with a non-zero keep-alive so that nvmet keeps it and sends it
 * Discovery Log Change events), read its log, and connect what the log lists through connect-all's
 * walk (existing controllers recognised, referrals followed, discovery entries ignored), leaving out
 * what the exclusion list names. A path it connected itself that leaves the log is left, or with
 * `disconnect-unused` disconnected once nothing uses its namespaces. A failure is retried with
 * back-off, and said once per change.
 */
import { FailureError } from "../errors.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import { haProfile } from "../fabrics/connect_table.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { type DiscoveryLogEntry, trtypeName } from "../fabrics/discovery_log.ts";
import {
  createController,
  deleteController,
  readDiscoveryLog,
} from "../fabrics/kernel_controller.ts";
import { DISCOVERY_NQN } from "../fabrics/nqn.ts";
import {
  controllerDir,
  type ControllerInfo,
  listControllers,
  matchesConnection,
  readAttr,
  readController,
} from "../fabrics/sysfs.ts";
import { connectEntries, unusableEntry } from "../initiator/connect_all.ts";
import type { ConnectIo } from "../initiator/connect_io.ts";
import { addr, failureReason } from "../initiator/connect_report.ts";
import { excludedBy, type Exclusion } from "../persist/exclusions_conf.ts";
import { type AgentDecision, backoffMs, pathKey, rowDecisions, StateLog } from "./decisions.ts";
import type { ScanReason } from "./scheduler.ts";
import { sleep, type Timer, timer } from "../timer.ts";

/** nvme-cli's keep-alive for a persistent discovery controller (`discover -p`), seconds. */
export const DISCOVERY_KATO = 30;

/**
 * The keep-alive and reconnect delay of a discovery controller the agent makes. With the HA
 * profile (the default), the profile's: the controller notices a storage server's loss and return
 * on the clock of the paths it serves, and the kernel's `rediscover` after its reconnect has the
 * log read within seconds. With nvme-cli's 30 s and the kernel's 10 s reconnect delay, a storage
 * server's boot reached the agent 50-65 s after its paths (docs/agent.md). Without the HA profile
 * (--no-ha), nvme-cli's `discover -p`.
 */
export function discoveryTimeouts(
  ha: boolean,
): Pick<ConnectOptions, "keepAliveTmo" | "reconnectDelay"> {
  if (!ha) return { keepAliveTmo: DISCOVERY_KATO };
  const { keepAliveTmo, reconnectDelay } = haProfile();
  return { keepAliveTmo, reconnectDelay };
}

/** What the agent does with a path it connected once the path leaves the log. */
export type RemovalPolicy = "leave" | "disconnect-unused";

/** A path the agent connected itself: its controller and the log entry it came from. */
export interface OwnedPath {
  device: string;
  subnqn: string;
  trtype: string;
  traddr: string;
  trsvcid: string;
}

/** What a follower needs from the agent around it. */
export interface FollowerIo {
  /** Says a decision. */
  emit(d: AgentDecision): void;
  /** Asks for another scan of this endpoint (a retry). */
  request(endpoint: string, reason: ScanReason): void;
  /** How the connects talk. */
  connect: ConnectIo;
  /** A log was read (for the status). */
  read?(endpoint: string, log: { genctr: number; reason: ScanReason; controller: string }): void;
  /** A referral entry of ENDPOINT's log: the discovery controller it names, to follow too. */
  referral?(to: ConnectOptions, from: string): void;
  /** What uses controller C's namespaces ("nvme1n1 mounted at /mnt"); empty when nothing. */
  usersOf?(c: ControllerInfo): string[];
  /** A controller the agent connected is no longer its own (disconnected, or removed). */
  released?(device: string): void;
  /** How many paths of subsystem NQN the logs read so far list (every endpoint's). */
  pathsOf?(subnqn: string): number;
}

/** BASE with connect's HA profile for each option BASE leaves unset (what was given wins). */
export function withHaProfile(base: ConnectOptions): ConnectOptions {
  const profile: Record<string, number> = {};
  for (const [f, v] of Object.entries(haProfile()) as [keyof ConnectOptions, number][]) {
    if (base[f] === undefined) profile[f] = v;
  }
  return { ...base, ...profile };
}

/** The log entry's path, as the rows and the exclusion list name it. */
function entryPath(e: DiscoveryLogEntry, base: ConnectOptions) {
  return {
    subnqn: e.subnqn,
    trtype: trtypeName(e.trtype),
    traddr: e.traddr,
    trsvcid: e.trsvcid || base.trsvcid,
  };
}

/** The label of an endpoint: `rdma 10.0.0.2:4420`, and where it is reached from when given. */
export function endpointLabel(o: ConnectOptions): string {
  return addr(o.transport, o.traddr, o.trsvcid) +
    (o.hostTraddr ? ` from ${o.hostTraddr}` : "") + (o.hostIface ? ` on ${o.hostIface}` : "") +
    (o.hostnqn ? ` as ${o.hostnqn}` : "");
}

/** The endpoints given, each once (the first of identical ones wins). */
export function uniqueEndpoints(list: ConnectOptions[]): ConnectOptions[] {
  const seen = new Set<string>();
  return list.filter((o) => {
    const key = endpointLabel(o);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Whether C is a discovery controller of endpoint O that stays (keep-alive not 0). */
export async function isPersistentDiscoveryOf(
  paths: FabricsPaths,
  c: ControllerInfo,
  o: ConnectOptions,
): Promise<boolean> {
  if (!o.hostnqn) return false;
  const same = matchesConnection(c, {
    transport: o.transport,
    traddr: o.traddr,
    trsvcid: o.trsvcid,
    subsysnqn: DISCOVERY_NQN,
    hostnqn: o.hostnqn,
    hostTraddr: o.hostTraddr,
    hostIface: o.hostIface,
  });
  if (!same) return false;
  // One made by `discover` or `connect-all` (keep-alive 0) is about to go away.
  return await readAttr(controllerDir(paths, c.name), "kato") !== "0";
}

/** One followed endpoint. */
export class Follower {
  readonly label: string;
  /** I/O controllers seen through this endpoint (its rows' devices). */
  readonly devices: Set<string> = new Set();
  #paths: FabricsPaths;
  #base: ConnectOptions;
  #timeouts: Pick<ConnectOptions, "keepAliveTmo" | "reconnectDelay">;
  #io: FollowerIo;
  #said = new StateLog();
  #controller: string | undefined;
  #failures = 0;
  #retry: Timer | undefined;
  #stopped = false;
  #exclusions: readonly Exclusion[];
  #onRemoval: RemovalPolicy;
  /** The paths this follower connected itself, by controller. */
  #owned = new Map<string, OwnedPath>();
  /** The base with the HA profile for what it does not set; undefined: never the HA profile. */
  #haBase: ConnectOptions | undefined;
  /** Saved connections whose options a path they name is connected with. */
  #saved: readonly ConnectOptions[];
  /** What `read` left for `connect`. */
  #pending:
    | { reason: ScanReason; genctr: number; entries: DiscoveryLogEntry[]; all: DiscoveryLogEntry[] }
    | undefined;
  /** The NVM subsystem paths of the last log read whole (this host's transport, IP addresses). */
  listed: Array<{ subnqn: string; trtype: string; traddr: string; trsvcid: string }> = [];
  /** The endpoint whose log referred to this one, if any. */
  readonly referredBy: string | undefined;

  constructor(
    paths: FabricsPaths,
    base: ConnectOptions,
    options: {
      io: FollowerIo;
      referredBy?: string;
      exclusions?: readonly Exclusion[];
      onRemoval?: RemovalPolicy;
      /** Paths an earlier run of the agent connected through this endpoint, still held. */
      owned?: readonly OwnedPath[];
      /**
       * The HA profile (connect's, for several paths) for a subsystem with several paths, in
       * what the endpoint's options leave unset, and its keep-alive and reconnect delay for the
       * discovery controller made here (default true).
       */
      ha?: boolean;
      /**
       * Saved connections (`connect --persist`): a path one of them names is connected with its
       * options over the endpoint's and the HA profile's.
       */
      saved?: readonly ConnectOptions[];
    },
  ) {
    this.referredBy = options.referredBy;
    this.#exclusions = options.exclusions ?? [];
    this.#onRemoval = options.onRemoval ?? "leave";
    const ha = options.ha ?? true;
    if (ha) this.#haBase = withHaProfile(base);
    this.#timeouts = discoveryTimeouts(ha);
    this.#saved = options.saved ?? [];
    for (const p of options.owned ?? []) {
      this.#owned.set(p.device, p);
      this.devices.add(p.device);
    }
    this.#paths = paths;
    this.#base = base;
    this.#io = options.io;
    this.label = endpointLabel(base);
  }

  /** The discovery controller held now (`nvme0`), if any. */
  get controller(): string | undefined {
    return this.#controller;
  }

  /** Stops retrying (the agent is stopping); the controllers stay. */
  stop(): void {
    this.#stopped = true;
    this.#retry?.cancel();
  }

  /**
   * The first half of a scan: reads the log at the endpoint (the paths it lists are then
   * `listed`), and hands its referrals on; never throws. The agent reads every log of a batch
   * before it connects any, so that a subsystem offered at several endpoints is known to have
   * several paths before its first is connected.
   */
  async read(reason: ScanReason): Promise<void> {
    this.#pending = undefined;
    if (this.#stopped) return;
    this.#retry?.cancel();
    this.#retry = undefined;
    try {
      const { ctrl, made } = await this.#discoveryController();
      if (ctrl.state !== "live") {
        throw new FailureError(
          `its discovery controller ${ctrl.name} is ${ctrl.state} (the kernel is reconnecting it)`,
        );
      }
      if (this.#said.changed("endpoint", `following ${ctrl.name}`)) {
        this.#io.emit({
          time: new Date().toISOString(),
          action: "following",
          endpoint: this.label,
          reason,
          discovery_controller: ctrl.name,
          made,
          ...(this.referredBy ? { referred_by: this.referredBy } : {}),
        });
      }
      const log = await readDiscoveryLog(this.#paths, ctrl.name);
      const genctr = Number(log.genctr);
      this.#io.read?.(this.label, { genctr, reason, controller: ctrl.name });
      const entries = this.#withoutExcluded(log.entries, { reason, genctr });
      // Referrals become endpoints of their own (followed through a persistent discovery
      // controller too); what cannot be reached stays with connect-all's walk, which says why.
      const referral = (e: typeof log.entries[number]) =>
        e.subtype === 1 && this.#io.referral !== undefined &&
        unusableEntry(e, this.#base) === undefined;
      for (const e of entries.filter(referral)) {
        this.#io.referral!({
          ...this.#base,
          traddr: e.traddr,
          trsvcid: e.trsvcid || this.#base.trsvcid,
        }, this.label);
      }
      const usable = entries.filter((e) => !referral(e));
      this.listed = usable.filter((e) => e.subtype === 2 && !unusableEntry(e, this.#base))
        .map((e) => entryPath(e, this.#base));
      this.#pending = { reason, genctr, entries: usable, all: log.entries };
    } catch (err) {
      this.#unreachable(reason, err);
    }
  }

  /**
   * The second half: connects what the log read by `read` lists (a subsystem the agent knows
   * several paths of with the HA profile), says the decisions, and applies the removal policy;
   * nothing when the read failed. Never throws.
   */
  async connect(): Promise<void> {
    const p = this.#pending;
    this.#pending = undefined;
    if (!p || this.#stopped) return;
    const { reason, genctr } = p;
    try {
      const several = (e: DiscoveryLogEntry) =>
        this.#haBase !== undefined && e.subtype === 2 &&
        (this.#io.pathsOf?.(e.subnqn) ?? 1) > 1;
      // Each entry's options: the endpoint's (the HA profile's where it has several paths),
      // under those of a saved connection that names its path; one walk per set of options.
      const groups = new Map<ConnectOptions, DiscoveryLogEntry[]>();
      for (const e of p.entries) {
        const base = several(e) ? this.#haBase! : this.#base;
        const saved = e.subtype === 2 ? this.#savedFor(e, base) : undefined;
        const key = saved ?? base;
        groups.set(key, [...groups.get(key) ?? [], e]);
      }
      const rows = [];
      for (const [base, entries] of groups) {
        rows.push(
          ...await connectEntries(this.#paths, base, entries, {
            follow: true,
            io: this.#io.connect,
          }),
        );
      }
      for (const r of rows) {
        if (r.device) this.devices.add(r.device);
        if (r.device && r.status === "connected") {
          const { subnqn, trtype, traddr, trsvcid } = r;
          this.#owned.set(r.device, { device: r.device, subnqn, trtype, traddr, trsvcid });
        }
      }
      const failed = rows.some((r) => r.status === "failed");
      const retryInS = failed ? this.#scheduleRetry() : this.#succeeded();
      const scan = { endpoint: this.label, reason, genctr, retryInS };
      for (const d of rowDecisions(rows, this.#said, scan)) this.#io.emit(d);
      // Only a log read whole says what left it: a failed read is never "everything left".
      await this.#leftTheLog(p.all, { reason, genctr });
    } catch (err) {
      this.#unreachable(reason, err);
    }
  }

  /**
   * BASE under the options of the saved connection that names entry E's path (subsystem,
   * transport, address, service id, host NQN, host address), or undefined when none does.
   */
  #savedFor(e: DiscoveryLogEntry, base: ConnectOptions): ConnectOptions | undefined {
    const p = entryPath(e, base);
    const c = this.#saved.find((s) =>
      s.nqn === p.subnqn && s.transport === p.trtype && s.traddr === p.traddr &&
      s.trsvcid === p.trsvcid && s.hostnqn === base.hostnqn &&
      (s.hostTraddr ?? "") === (base.hostTraddr ?? "")
    );
    if (!c) return undefined;
    const own = Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined));
    return { ...base, ...own, nqn: "" };
  }

  #unreachable(reason: ScanReason, err: unknown): void {
    const error = err instanceof Error ? failureReason(err) : String(err);
    const retryInS = this.#scheduleRetry();
    if (this.#said.changed("endpoint", `unreachable ${error}`)) {
      this.#io.emit({
        time: new Date().toISOString(),
        action: "unreachable",
        endpoint: this.label,
        reason,
        error,
        retry_in_s: retryInS,
      });
    }
  }

  /** ENTRIES without those the exclusion list names; each exclusion said once. */
  #withoutExcluded(
    entries: DiscoveryLogEntry[],
    scan: { reason: ScanReason; genctr: number },
  ): DiscoveryLogEntry[] {
    if (this.#exclusions.length === 0) return entries;
    return entries.filter((e) => {
      if (e.subtype === 3) return true; // the discovery controller itself
      const p = entryPath(e, this.#base);
      const x = excludedBy(this.#exclusions, p);
      if (!x) return true;
      if (this.#said.changed(`excluded ${pathKey(p)}`, x.where)) {
        this.#io.emit({
          time: new Date().toISOString(),
          action: "skipped",
          endpoint: this.label,
          ...scan,
          ...p,
          error: `excluded by ${x.where}`,
        });
      }
      return false;
    });
  }

  /**
   * The paths this follower connected that ENTRIES (a log read whole) no longer list: left as
   * they are, or with disconnect-unused disconnected once nothing uses their namespaces. A
   * controller that is gone, or is no longer the one connected, is forgotten.
   */
  async #leftTheLog(
    entries: DiscoveryLogEntry[],
    scan: { reason: ScanReason; genctr: number },
  ): Promise<void> {
    const listed = new Set(
      entries.filter((e) => e.subtype === 2).map((e) => pathKey(entryPath(e, this.#base))),
    );
    for (const [device, p] of this.#owned) {
      const c = await readController(this.#paths, device);
      if (
        !c || c.subsysnqn !== p.subnqn || c.address.traddr !== p.traddr ||
        c.address.trsvcid !== p.trsvcid
      ) {
        this.#release(device);
        continue;
      }
      const key = `removal ${pathKey(p)}`;
      if (listed.has(pathKey(p))) {
        this.#said.forget(key);
        continue;
      }
      const d: AgentDecision = {
        time: new Date().toISOString(),
        action: "left",
        endpoint: this.label,
        ...scan,
        ...p,
      };
      if (this.#onRemoval === "leave") {
        if (this.#said.changed(key, "left")) this.#io.emit(d);
        continue;
      }
      const users = this.#io.usersOf?.(c) ?? ["its users cannot be checked"];
      if (users.length > 0) {
        if (this.#said.changed(key, `kept ${users.join(", ")}`)) {
          this.#io.emit({ ...d, action: "kept", users });
        }
        continue;
      }
      try {
        await deleteController(this.#paths, device);
      } catch (err) {
        if (await readController(this.#paths, device)) {
          const error = failureReason(err);
          if (this.#said.changed(key, `failed ${error}`)) {
            this.#io.emit({ ...d, action: "failed", error });
          }
          continue;
        }
      }
      this.#said.forget(key);
      this.#release(device);
      this.#io.emit({ ...d, action: "disconnected" });
    }
  }

  #release(device: string): void {
    this.#owned.delete(device);
    this.devices.delete(device);
    this.#io.released?.(device);
  }

  /** The retry after one more failure, in seconds. */
  #scheduleRetry(): number {
    this.#failures++;
    const ms = backoffMs(this.#failures);
    if (!this.#stopped) {
      this.#retry = timer(ms);
      this.#retry.done.then(() => this.#io.request(this.label, "retry"));
    }
    return ms / 1000;
  }

  #succeeded(): undefined {
    this.#failures = 0;
    return undefined;
  }

  /** The discovery controller held, found among the host's, or made. */
  async #discoveryController(): Promise<{ ctrl: ControllerInfo; made: boolean }> {
    const paths = this.#paths;
    if (this.#controller) {
      const c = await readController(paths, this.#controller);
      if (c && await isPersistentDiscoveryOf(paths, c, this.#base)) return { ctrl: c, made: false };
      this.#controller = undefined;
    }
    const found: ControllerInfo[] = [];
    for (const c of await listControllers(paths)) {
      if (await isPersistentDiscoveryOf(paths, c, this.#base)) found.push(c);
    }
    const pick = found.find((c) => c.state === "live") ?? found[0];
    if (pick) {
      this.#controller = pick.name;
      return { ctrl: pick, made: false };
    }
    const o = this.#base;
    const dopts: ConnectOptions = {
      transport: o.transport,
      traddr: o.traddr,
      trsvcid: o.trsvcid,
      nqn: DISCOVERY_NQN,
      ...(o.hostTraddr ? { hostTraddr: o.hostTraddr } : {}),
      ...(o.hostIface ? { hostIface: o.hostIface } : {}),
      ...(o.hostnqn ? { hostnqn: o.hostnqn } : {}),
      ...(o.hostid ? { hostid: o.hostid } : {}),
      ...this.#timeouts,
    };
    const made = await createController(paths, dopts, { ...dopts, discovery: true });
    this.#controller = made.name;
    // Its attributes can lag the write's return by a moment.
    for (let i = 0; i < 50; i++) {
      const c = await readController(paths, made.name);
      if (c && c.state === "live") return { ctrl: c, made: true };
      await sleep(20);
    }
    const c = await readController(paths, made.name);
    if (!c) {
      throw new FailureError(`The discovery controller ${made.name} vanished after it was made.`);
    }
    return { ctrl: c, made: true };
  }
}
