/**
 * Following one discovery endpoint: hold one persistent discovery controller there (found among
 * the host's controllers, or made with a non-zero keep-alive so that nvmet keeps it and sends it
 * Discovery Log Change events), read its log, and connect what the log lists through connect-all's
 * walk (existing controllers recognised, referrals followed, discovery entries ignored). A failure
 * is retried with back-off, and said once per change.
 */
import { FailureError } from "../errors.ts";
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import { createController, readDiscoveryLog } from "../fabrics/kernel_controller.ts";
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
import { type AgentDecision, backoffMs, rowDecisions, StateLog } from "./decisions.ts";
import type { ScanReason } from "./scheduler.ts";

/** nvme-cli's keep-alive for a persistent discovery controller (`discover -p`), seconds. */
export const DISCOVERY_KATO = 30;

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
  #kato: number;
  #io: FollowerIo;
  #said = new StateLog();
  #controller: string | undefined;
  #failures = 0;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  /** The endpoint whose log referred to this one, if any. */
  readonly referredBy: string | undefined;

  constructor(
    paths: FabricsPaths,
    base: ConnectOptions,
    options: { io: FollowerIo; kato?: number; referredBy?: string },
  ) {
    this.referredBy = options.referredBy;
    this.#paths = paths;
    this.#base = base;
    this.#kato = options.kato ?? DISCOVERY_KATO;
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
    clearTimeout(this.#retry);
  }

  /** Reads the log at the endpoint and connects what it lists; never throws. */
  async scan(reason: ScanReason): Promise<void> {
    if (this.#stopped) return;
    clearTimeout(this.#retry);
    this.#retry = undefined;
    let ctrl: ControllerInfo;
    let made: boolean;
    try {
      ({ ctrl, made } = await this.#discoveryController());
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
      this.#io.read?.(this.label, { genctr: Number(log.genctr), reason, controller: ctrl.name });
      // Referrals become endpoints of their own (followed through a persistent discovery
      // controller too); what cannot be reached stays with connect-all's walk, which says why.
      const referral = (e: typeof log.entries[number]) =>
        e.subtype === 1 && this.#io.referral !== undefined &&
        unusableEntry(e, this.#base) === undefined;
      for (const e of log.entries.filter(referral)) {
        this.#io.referral!({
          ...this.#base,
          traddr: e.traddr,
          trsvcid: e.trsvcid || this.#base.trsvcid,
        }, this.label);
      }
      const rows = await connectEntries(
        this.#paths,
        this.#base,
        log.entries.filter((e) => !referral(e)),
        { follow: true, io: this.#io.connect },
      );
      for (const r of rows) if (r.device) this.devices.add(r.device);
      const failed = rows.some((r) => r.status === "failed");
      const retryInS = failed ? this.#scheduleRetry() : this.#succeeded();
      const scan = { endpoint: this.label, reason, genctr: Number(log.genctr), retryInS };
      for (const d of rowDecisions(rows, this.#said, scan)) this.#io.emit(d);
    } catch (err) {
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
  }

  /** The retry after one more failure, in seconds. */
  #scheduleRetry(): number {
    this.#failures++;
    const ms = backoffMs(this.#failures);
    if (!this.#stopped) {
      this.#retry = setTimeout(() => this.#io.request(this.label, "retry"), ms);
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
      keepAliveTmo: this.#kato,
    };
    const made = await createController(paths, dopts, { ...dopts, discovery: true });
    this.#controller = made.name;
    // Its attributes can lag the write's return by a moment.
    for (let i = 0; i < 50; i++) {
      const c = await readController(paths, made.name);
      if (c && c.state === "live") return { ctrl: c, made: true };
      await new Promise((r) => setTimeout(r, 20));
    }
    const c = await readController(paths, made.name);
    if (!c) {
      throw new FailureError(`The discovery controller ${made.name} vanished after it was made.`);
    }
    return { ctrl: c, made: true };
  }
}
