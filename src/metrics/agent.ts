/**
 * The agent's families (collector `agent`): what `nvmeof agent` on this host follows and did, from
 * the state it writes after every scan (`/run/nvmeof/agent.json`, src/agent/status.ts). No state
 * file (no agent has run since boot, or this is a storage server): no families.
 */
import { readStatus } from "../agent/status.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";

/** Seconds since the epoch of an ISO 8601 time; undefined when there is none. */
function epoch(iso: string | undefined): number | undefined {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

/** The agent's families, from the state file in DIR (default the runtime directory). */
export function collectAgent(dir?: string): Promise<MetricFamily[]> {
  const found = readStatus(dir);
  if (!found) return Promise.resolve([]);
  const st = found.status;
  const set = new FamilySet();
  set.family(
    "nvmeof_agent_up",
    "gauge",
    "1 while the agent that wrote the state runs, 0 once it has stopped or died.",
  )({}, found.running ? 1 : 0);
  const following = set.family(
    "nvmeof_agent_endpoint_following",
    "gauge",
    "1 when the agent follows the discovery endpoint (its log was read), 0 while it cannot.",
  );
  const generation = set.family(
    "nvmeof_agent_endpoint_generation",
    "gauge",
    "The generation counter of the endpoint's discovery log when last read.",
  );
  const lastRead = set.family(
    "nvmeof_agent_endpoint_last_read_timestamp_seconds",
    "gauge",
    "When the endpoint's log was last read.",
  );
  const lastChange = set.family(
    "nvmeof_agent_endpoint_last_change_timestamp_seconds",
    "gauge",
    "When a read of the endpoint's log last found a new generation.",
  );
  for (const e of st.endpoints) {
    const labels = { endpoint: e.endpoint };
    following(labels, e.state === "following" ? 1 : 0);
    if (e.genctr !== undefined) generation(labels, e.genctr);
    const read = epoch(e.read_at);
    if (read !== undefined) lastRead(labels, read);
    const changed = epoch(e.changed_at);
    if (changed !== undefined) lastChange(labels, changed);
  }
  set.family(
    "nvmeof_agent_connected_paths",
    "gauge",
    "Paths the agent connected that it still holds.",
  )({}, st.connected.length);
  set.family(
    "nvmeof_agent_connects_total",
    "counter",
    "Paths the agent connected since it started.",
  )(
    {},
    st.connects ?? st.connected.length,
  );
  set.family(
    "nvmeof_agent_connect_failures_total",
    "counter",
    "Connect attempts of the agent that failed since it started.",
  )({}, st.failures);
  set.family("nvmeof_agent_scans_total", "counter", "Scans the agent ran since it started.")(
    {},
    st.scans,
  );
  set.family(
    "nvmeof_agent_uevents_total",
    "counter",
    "Kernel uevents the agent read since it started.",
  )({}, st.uevents);
  return Promise.resolve(set.families());
}
