/**
 * Planned failover on the storage server: a port's ANA groups moved to one state, live (drain
 * port 1 before maintenance: `inaccessible`; then `optimized` again). Each group is one
 * `ana_state` write (src/target/plan/ana.ts); the kernel tells connected hosts through an ANA
 * change event, and their multipath moves I/O to the paths still optimized. Nothing else on the
 * port changes, so I/O on other groups and ports goes on.
 *
 * This is a change to the live tree only, not to the spec: the spec stays the declared steady
 * state. `target up` (and the boot unit) put the spec's states back, `target up --dry-run` shows
 * the difference as ana_state writes.
 */
import {
  ANA_STATES,
  type AnaState,
  DEFAULT_ANA_GROUP,
  type LiveAnaGroup,
  type LivePort,
  type LiveTree,
  nvmetPath,
  readTree,
  USABLE_ANA_STATES,
} from "../configfs/nvmet.ts";
import { EnvironmentError, FailureError, quote, UsageError } from "../errors.ts";
import { applyPlan } from "./apply.ts";
import { kernelTargetEnv } from "./env.ts";
import { lockTarget } from "./lock.ts";
import { anaStateStep } from "./plan/ana.ts";
import type { Step } from "./plan/step.ts";
import { type PlanResult, planResult } from "./report.ts";
import type { TargetRunOptions } from "./up.ts";
import { nearest, nearestAnaState } from "./values.ts";

/** What `target ana` changes. */
export interface AnaRequest {
  /** The port: its id (`1`) or its directory's name (`0x1`). */
  port: string;
  /** The state to move the groups to, as given (checked here). */
  state: string;
  /** The group ids (as given) to change; none: every group of the port. */
  groups: string[];
}

/** One group's move. */
export interface AnaMove {
  id: number;
  old: string;
  new: string;
}

/** What `target ana` reports: the plan (as `target up`), the port and each group's move. */
export interface AnaResult extends PlanResult {
  port: number;
  state: string;
  groups: AnaMove[];
}

/** The state as nvmet spells it, or a usage error with the nearest one. */
export function parseAnaState(word: string): AnaState {
  if ((ANA_STATES as readonly string[]).includes(word)) return word as AnaState;
  const near = nearestAnaState(word);
  throw new UsageError(
    `${quote(word)} is not an ANA state${near ? ` (did you mean '${near}'?)` : ""}.`,
    { hint: `Use one of: ${ANA_STATES.join(", ")}.` },
  );
}

/** The live port named by `word` (its id or directory name), or an error listing those there are. */
export function findPort(live: LiveTree, word: string): LivePort {
  const byName = live.ports.find((p) => p.name === word);
  if (byName) return byName;
  const n = /^\d+$/.test(word) ? Number(word) : undefined;
  const byId = n === undefined ? undefined : live.ports.find((p) => p.id === n);
  if (byId) return byId;
  const ids = live.ports.map((p) => String(p.id));
  const near = nearest(word, ids, 1);
  throw new FailureError(
    `Port ${quote(word)} does not exist in nvmet${near ? ` (did you mean '${near}'?)` : ""}; ` +
      "nothing was changed.",
    {
      hint: ids.length
        ? `Ports: ${ids.join(", ")} ('nvmeof target show' lists them).`
        : "nvmet has no ports: run 'nvmeof target up' first.",
    },
  );
}

/** The groups of `port` named by `words` (every group when none), or an error naming the missing. */
export function findGroups(port: LivePort, words: string[]): LiveAnaGroup[] {
  const have = port.ana_groups;
  if (!have) {
    throw new EnvironmentError(
      `Port ${port.id} has no ANA groups: this kernel's nvmet has no ANA (no ana_groups directory).`,
      { hint: "Use a kernel with nvmet ANA support (Linux ≥ 4.19)." },
    );
  }
  if (!words.length) return have;
  const ids = have.map((g) => String(g.id));
  const out: LiveAnaGroup[] = [];
  for (const w of words) {
    if (!/^\d+$/.test(w)) {
      throw new UsageError(`ANA group ${quote(w)} is not a number.`, {
        hint: `Give a group id of port ${port.id}: ${ids.join(", ")}.`,
      });
    }
    const g = have.find((x) => x.id === Number(w));
    if (!g) {
      const near = nearest(w, ids, 1);
      throw new FailureError(
        `Port ${port.id} has no ANA group ${w}${near ? ` (did you mean '${near}'?)` : ""}; ` +
          "nothing was changed.",
        {
          hint: `Its groups: ${ids.join(", ")}. Add a group in the spec's ana_groups of the ` +
            "port and run 'nvmeof target up'.",
        },
      );
    }
    if (!out.includes(g)) out.push(g);
  }
  return out;
}

/** The ana_state writes that move `groups` of `port` to `state` (none for a group already there). */
export function planAnaState(port: LivePort, groups: LiveAnaGroup[], state: AnaState): Step[] {
  return groups.flatMap((g) =>
    g.state === state ? [] : [anaStateStep(nvmetPath.anaGroup(port.name, g.name), state, g.state)]
  );
}

/**
 * Namespaces the move would leave with no usable path: exported on `port` in a group the move makes
 * unusable, and on no other port in a group that is optimized or non-optimized. Lines for a message.
 */
export function strandedNamespaces(
  live: LiveTree,
  port: LivePort,
  moved: LiveAnaGroup[],
  state: AnaState,
): string[] {
  if (USABLE_ANA_STATES.has(state)) return [];
  const movedIds = new Set(moved.map((g) => g.id));
  const out: string[] = [];
  for (const nqn of port.subsystems) {
    const sub = live.subsystems.find((s) => s.nqn === nqn);
    for (const ns of sub?.namespaces ?? []) {
      const grp = Number(ns.ana_grpid ?? DEFAULT_ANA_GROUP);
      if (!movedIds.has(grp)) continue;
      const elsewhere = live.ports.some((p) =>
        p !== port && p.subsystems.includes(nqn) &&
        p.ana_groups?.some((g) => g.id === grp && USABLE_ANA_STATES.has(g.state))
      );
      if (!elsewhere) out.push(`namespace ${ns.nsid} of ${quote(nqn)} (ANA group ${grp})`);
    }
  }
  return out;
}

/** Moves a port's ANA groups to a state (see `nvmeof target ana --help`); returns what it did. */
export function setAnaState(req: AnaRequest, options: TargetRunOptions): AnaResult {
  const { dryRun, note } = options;
  const env = options.env ?? kernelTargetEnv();
  const state = parseAnaState(req.state);
  if (!dryRun) env.requireWriter();
  using _lock = dryRun ? undefined : lockTarget(options.configfs, { note });
  const io = env.open(options.configfs, { prepare: false });
  if (!io) {
    throw new EnvironmentError("nvmet is not loaded: there is no port to change.", {
      hint: "Bring the target up first: nvmeof target up -f SPEC.",
    });
  }
  const live = readTree(io);
  const port = findPort(live, req.port);
  const groups = findGroups(port, req.groups);
  const stranded = strandedNamespaces(live, port, groups, state);
  if (stranded.length && !options.force) {
    throw new FailureError(
      `Moving port ${port.id} to ${state} would leave ${
        stranded.join("; ")
      } with no optimized or non-optimized path on any port; nothing was changed.`,
      {
        hint: "Make another port's group optimized first (nvmeof target ana --port N --state " +
          "optimized), or add --force: hosts then queue that namespace's I/O until a path is usable.",
      },
    );
  }
  const warnings = stranded.map((s) =>
    `warning: ${s} has no optimized or non-optimized path left (--force); hosts queue its I/O.`
  );
  for (const w of warnings) note(w);
  const steps = planAnaState(port, groups, state);
  if (!dryRun && steps.length) applyPlan(io, steps);
  return {
    ...planResult(steps, { dryRun, warnings }),
    port: port.id,
    state,
    groups: groups.map((g) => ({ id: g.id, old: g.state, new: state })),
  };
}
