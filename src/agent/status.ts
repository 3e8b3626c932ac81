/**
 * What a running agent follows and did, kept in /run/nvmeof/agent.json (a root-only directory)
 * after every scan, for `nvmeof agent status`: each endpoint's discovery controller, state and last
 * generation read, the subsystems it connected, and its counts.
 */
import { EnvironmentError } from "../errors.ts";
import { heldLock, lockHolder, privateRunDir, runDirPath } from "../host/run_dir.ts";
import { writeDurableSync } from "../persist/durable.ts";
import type { AgentDecision } from "./decisions.ts";
import type { ScanReason } from "./scheduler.ts";

/** The state file's name in the runtime directory. */
const FILE = "agent.json";
/** The lock that keeps a second agent from starting on this host. */
const LOCK = "agent.lock";

/**
 * Holds this host's agent lock until disposed: a second agent would follow the same endpoints
 * and race the first for their discovery controllers. Fails naming the agent that holds it.
 */
export function holdAgentLock(): Disposable {
  const path = `${privateRunDir("state directory")}/${LOCK}`;
  const file = Deno.openSync(path, { create: true, read: true, write: true, mode: 0o600 });
  if (!file.tryLockSync(true)) {
    const holder = lockHolder(path);
    file.close();
    throw new EnvironmentError(
      `Another nvmeof agent${holder ? ` (${holder})` : ""} runs on this host.`,
      {
        hint: "One agent follows every endpoint: add endpoints to /etc/nvme/discovery.conf, " +
          "'nvmeof agent status' shows what it follows.",
      },
    );
  }
  return heldLock(file, `pid ${Deno.pid}\n`);
}

/** One followed endpoint, as the status shows it. */
export interface EndpointStatus {
  endpoint: string;
  state: "starting" | "following" | "unreachable";
  discovery_controller?: string;
  /** The generation counter of the last log read. */
  genctr?: number;
  /** When the log was last read (ISO 8601), and why. */
  read_at?: string;
  /** When a read last found a generation other than the one before it (ISO 8601). */
  changed_at?: string;
  reason?: ScanReason;
  /** Why it is unreachable. */
  error?: string;
}

/** A subsystem the agent connected itself. */
export interface ConnectedStatus {
  time: string;
  endpoint: string;
  subnqn: string;
  trtype: string;
  traddr: string;
  trsvcid: string;
  device: string;
  genctr?: number;
  reason?: ScanReason;
}

/** The whole state file. */
export interface AgentStatus {
  pid: number;
  started: string;
  updated: string;
  /** Set once the agent has stopped, with why. */
  stopped?: string;
  scans: number;
  uevents: number;
  /** Connects that failed (each attempt). */
  failures: number;
  /** Paths it connected (absent in the state of an older nvmeof: count its `connected`). */
  connects?: number;
  endpoints: EndpointStatus[];
  connected: ConnectedStatus[];
}

/** The agent's state, updated from its decisions and log reads. */
export class StatusBook {
  #status: AgentStatus;

  /** ENDPOINTS followed; CONNECTED: what an earlier run connected and still holds (inherited). */
  constructor(endpoints: string[], now = new Date(), connected: ConnectedStatus[] = []) {
    this.#status = {
      pid: Deno.pid,
      started: now.toISOString(),
      updated: now.toISOString(),
      scans: 0,
      uevents: 0,
      failures: 0,
      connects: 0,
      endpoints: endpoints.map((endpoint) => ({ endpoint, state: "starting" })),
      connected: [...connected],
    };
  }

  /** An endpoint learnt while running (a referral). */
  add(endpoint: string): void {
    if (!this.#endpoint(endpoint)) this.#status.endpoints.push({ endpoint, state: "starting" });
  }

  #endpoint(label: string | undefined): EndpointStatus | undefined {
    return this.#status.endpoints.find((e) => e.endpoint === label);
  }

  /** A log was read at ENDPOINT. */
  read(endpoint: string, log: { genctr: number; reason: ScanReason; controller: string }): void {
    const e = this.#endpoint(endpoint);
    if (!e) return;
    const now = new Date().toISOString();
    if (e.genctr !== log.genctr) e.changed_at = now;
    Object.assign(e, {
      state: "following",
      discovery_controller: log.controller,
      genctr: log.genctr,
      read_at: now,
      reason: log.reason,
    });
    delete e.error;
  }

  /** What an earlier run connected through an endpoint learnt while running (a referral's). */
  inherit(connected: readonly ConnectedStatus[]): void {
    for (const c of connected) {
      if (!this.#status.connected.some((k) => k.device === c.device)) {
        this.#status.connected.push(c);
      }
    }
  }

  /** Controller DEVICE is no longer the agent's (it disconnected it, or the kernel removed it). */
  released(device: string): void {
    this.#status.connected = this.#status.connected.filter((c) => c.device !== device);
  }

  /** A decision was said. */
  decided(d: AgentDecision): void {
    const e = this.#endpoint(d.endpoint);
    if (d.action === "unreachable" && e) {
      e.state = "unreachable";
      e.error = d.error;
    } else if (d.action === "connected" && d.device) {
      this.#status.connects = (this.#status.connects ?? 0) + 1;
      this.#status.connected.push({
        time: d.time,
        endpoint: d.endpoint ?? "",
        subnqn: d.subnqn ?? "",
        trtype: d.trtype ?? "",
        traddr: d.traddr ?? "",
        trsvcid: d.trsvcid ?? "",
        device: d.device,
        ...(d.genctr !== undefined ? { genctr: d.genctr } : {}),
        ...(d.reason ? { reason: d.reason } : {}),
      });
    } else if (d.action === "failed") {
      this.#status.failures++;
    } else if (d.action === "stopped") {
      this.#status.stopped = d.error ?? "stopped";
    }
  }

  /** The state now, with the scheduler's counts. */
  snapshot(counts: { scans: number; uevents: number }): AgentStatus {
    return { ...this.#status, ...counts, updated: new Date().toISOString() };
  }
}

/** Writes the state file (mode 0600 in the root-only runtime directory). */
export function writeStatus(status: AgentStatus): string {
  const path = `${privateRunDir("state directory")}/${FILE}`;
  writeDurableSync(path, JSON.stringify(status, null, 2) + "\n", 0o600);
  return path;
}

/**
 * The state file of the last agent run (in DIR, default the runtime directory), and whether that
 * agent still runs; undefined without one.
 */
export function readStatus(
  dir: string = runDirPath(),
): { file: string; status: AgentStatus; running: boolean } | undefined {
  const file = `${dir}/${FILE}`;
  let text: string;
  try {
    text = Deno.readTextFileSync(file);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const status = JSON.parse(text) as AgentStatus;
  let alive = false;
  try {
    alive = Deno.readTextFileSync(`/proc/${status.pid}/cmdline`).includes("agent");
  } catch { /* gone */ }
  return { file, status, running: alive && status.stopped === undefined };
}

/** The status as text. */
export function statusText(s: { status: AgentStatus; running: boolean }): string {
  const st = s.status;
  const lines = [
    s.running
      ? `agent running (pid ${st.pid}) since ${st.started}; ${st.scans} scans, ${st.uevents} uevents, ${st.failures} failed connects`
      : `agent not running (last run pid ${st.pid}, started ${st.started}${
        st.stopped ? `, ${st.stopped}` : ", ended without stopping"
      }; state of ${st.updated})`,
  ];
  for (const e of st.endpoints) {
    const via = e.discovery_controller ? ` through ${e.discovery_controller}` : "";
    const gen = e.genctr !== undefined ? `, generation ${e.genctr} read ${e.read_at}` : "";
    lines.push(`  ${e.endpoint}: ${e.state}${via}${gen}${e.error ? `: ${e.error}` : ""}`);
  }
  if (st.connected.length === 0) lines.push("  connected nothing yet");
  for (const c of st.connected) {
    lines.push(
      `  connected ${c.subnqn} as ${c.device} at ${c.time}` +
        (c.genctr !== undefined ? ` (generation ${c.genctr})` : ""),
    );
  }
  return lines.join("\n");
}
