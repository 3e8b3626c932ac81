/**
 * `nvmeof agent`'s loop: follow every endpoint, read the kernel's uevents itself, and read a log
 * again when the kernel says it changed (`NVME_AEN=0x70f002`), when its discovery controller
 * reconnected (`NVME_EVENT=rediscover`) or was lost, at start, and every `rescanMs` as a
 * backstop. Scans run one at a time (scheduler.ts); after each, the state file of `agent status`
 * is written (status.ts). What an earlier run connected and still holds stays the agent's own
 * (for the removal policy). It stops when `cancel` fires (SIGINT, SIGTERM), leaving every
 * controller in place, and says so as its last decision.
 */
import type { ConnectOptions } from "../fabrics/connect_options.ts";
import type { FabricsPaths } from "../fabrics/initiator_paths.ts";
import type { ControllerInfo } from "../fabrics/sysfs.ts";
import { blockUsers } from "../host/block_users.ts";
import type { Exclusion } from "../persist/exclusions_conf.ts";
import { UeventSocket } from "../net/uevent_socket.ts";
import { every } from "../timer.ts";
import { CancelledError, type Canceller } from "../wait.ts";
import { type AgentDecision, pathKey } from "./decisions.ts";
import { scanOf } from "./events.ts";
import {
  endpointLabel,
  Follower,
  type FollowerIo,
  type OwnedPath,
  type RemovalPolicy,
  uniqueEndpoints,
} from "./follower.ts";
import { type ScanReason, ScanScheduler } from "./scheduler.ts";
import {
  type ConnectedStatus,
  holdAgentLock,
  readStatus,
  StatusBook,
  writeStatus,
} from "./status.ts";

/** The default backstop: every endpoint's log is read again this often, in ms. */
export const DEFAULT_RESCAN_MS = 60_000;

/** What the agent is asked to do. */
export interface AgentRequest {
  /** The endpoints to follow (address, host identity, and the options of the I/O connects). */
  endpoints: ConnectOptions[];
  /** The backstop re-read interval, ms (0: none). */
  rescanMs?: number;
  /** What is never connected nor followed. */
  exclusions?: readonly Exclusion[];
  /** What becomes of a path the agent connected once it leaves the log (default leave). */
  onRemoval?: RemovalPolicy;
  /**
   * The HA profile for a subsystem with several paths and for the discovery controllers made
   * (default true; false: --no-ha).
   */
  ha?: boolean;
  /** Saved connections (connections.yaml): their options for the paths they name. */
  saved?: readonly ConnectOptions[];
  /** procfs, for what uses a namespace (disconnect-unused). */
  proc: string;
  /** Says one decision. */
  emit(d: AgentDecision): void;
  /** A diagnostic line (stderr). */
  note(line: string): void;
  /** Fires to stop. */
  cancel: Canceller;
}

/** What the agent did, said when it stops. */
export interface AgentSummary {
  endpoints: string[];
  scans: number;
  uevents: number;
  stopped: string;
}

/**
 * What the last run of the agent connected, by endpoint (read once this run holds the lock, so
 * that run has ended); each is checked against sysfs before it is trusted.
 */
function inherited(): ConnectedStatus[] {
  try {
    return readStatus()?.status.connected ?? [];
  } catch {
    return []; // an unreadable state file: the agent owns nothing from before
  }
}

/** Runs the agent until `req.cancel` fires. */
export async function runAgent(paths: FabricsPaths, req: AgentRequest): Promise<AgentSummary> {
  using _lock = holdAgentLock();
  // Open the uevent socket before the first scan, so that no change in between is missed.
  using socket = new UeventSocket();
  const endpoints = uniqueEndpoints(req.endpoints);
  const before = inherited();
  const labels = endpoints.map(endpointLabel);
  // What an earlier run connected through an endpoint this run does not follow is not its own.
  const book = new StatusBook(
    labels,
    new Date(),
    before.filter((c) => labels.includes(c.endpoint)),
  );
  const roots = { sysfs: paths.sysfs, dev: paths.dev, proc: req.proc };
  const follower = (o: ConnectOptions, referredBy?: string) => {
    const label = endpointLabel(o);
    const owned: OwnedPath[] = before.filter((c) => c.endpoint === label).map((c) => ({
      device: c.device,
      subnqn: c.subnqn,
      trtype: c.trtype,
      traddr: c.traddr,
      trsvcid: c.trsvcid,
    }));
    return new Follower(paths, o, {
      io,
      referredBy,
      exclusions: req.exclusions,
      onRemoval: req.onRemoval,
      owned,
      ha: req.ha,
      saved: req.saved,
    });
  };
  const followers = new Map<string, Follower>();
  let uevents = 0;
  let statusFailed = false;
  const saveStatus = () => {
    try {
      writeStatus(book.snapshot({ scans: scheduler.scans, uevents }));
    } catch (err) {
      if (!statusFailed) req.note(`nvmeof agent: no status file: ${(err as Error).message}`);
      statusFailed = true;
    }
  };
  const scheduler = new ScanScheduler(async (batch) => {
    // Every log of the batch first, then the connects: a subsystem offered at several endpoints
    // is known to have several paths before the first of them is connected.
    for (const [id, reason] of batch) await followers.get(id)?.read(reason);
    for (const id of batch.keys()) await followers.get(id)?.connect();
    saveStatus();
  }, (err) => req.note(`nvmeof agent: a scan failed: ${(err as Error).message}`));
  const emit = (d: AgentDecision) => {
    book.decided(d);
    req.emit(d);
  };
  const io: FollowerIo = {
    emit,
    request: (id, reason) => scheduler.request(id, reason),
    connect: { note: req.note, verbose: false },
    read: (id, log) => book.read(id, log),
    usersOf: (c: ControllerInfo) =>
      [...new Set(c.namespaces.map((n) => n.name))].flatMap((n) => blockUsers(roots, n)),
    released: (device) => book.released(device),
    pathsOf: (subnqn) => {
      const paths = new Set<string>();
      for (const f of followers.values()) {
        for (const p of f.listed) if (p.subnqn === subnqn) paths.add(pathKey(p));
      }
      return paths.size;
    },
    referral: (to, from) => {
      const label = endpointLabel(to);
      if (followers.has(label)) return; // followed already (loops between servers end here)
      const f = follower(to, from);
      book.inherit(before.filter((c) => c.endpoint === label));
      followers.set(label, f);
      book.add(label);
      scheduler.request(label, "referral");
    },
  };
  for (const o of endpoints) {
    const f = follower(o);
    followers.set(f.label, f);
  }
  const owners = {
    discovery: (name: string) => [...followers.values()].find((f) => f.controller === name)?.label,
    io: (name: string) => [...followers.values()].find((f) => f.devices.has(name))?.label,
  };
  const all = (reason: ScanReason) => {
    for (const id of followers.keys()) scheduler.request(id, reason);
  };
  all("start");
  const rescanMs = req.rescanMs ?? DEFAULT_RESCAN_MS;
  const backstop = rescanMs > 0 ? every(rescanMs, () => all("periodic")) : undefined;
  let stopped = "stopped";
  try {
    for (;;) {
      const batch = await socket.next(rescanMs > 0 ? rescanMs : 60_000, req.cancel);
      uevents += batch.events.length;
      if (batch.overflowed) all("overflow");
      for (const e of batch.events) {
        const s = scanOf(e, owners);
        if (s) scheduler.request(s.endpoint, s.reason);
      }
    }
  } catch (err) {
    if (!(err instanceof CancelledError)) throw err;
    stopped = req.cancel.reason ?? "stopped";
  } finally {
    backstop?.cancel();
    for (const f of followers.values()) f.stop();
    await scheduler.idle();
    emit({ time: new Date().toISOString(), action: "stopped", error: stopped });
    saveStatus();
  }
  return { endpoints: [...followers.keys()], scans: scheduler.scans, uevents, stopped };
}
