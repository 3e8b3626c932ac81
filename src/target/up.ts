/**
 * `target up` and `target down` as one call each: validate, lock, open (loading modules for up),
 * read, plan, refuse to cut off connected hosts, apply with rollback. A dry run only reads, so it
 * needs neither root nor the lock.
 */
import type { ConfigfsIo } from "../configfs/io.ts";
import type { LiveTree } from "../configfs/nvmet.ts";
import { FailureError } from "../errors.ts";
import { applyPlan } from "./apply.ts";
import { hashAhead } from "./identity.ts";
import type { RefuseOptions } from "./connected.ts";
import { kernelTargetEnv, readLive, type TargetEnv } from "./env.ts";
import { lockTarget } from "./lock.ts";
import type { OneLineInput } from "./one_line.ts";
import {
  checkPruneByEmptySpec,
  describeStep,
  identitiesToDerive,
  planDown,
  planUp,
  removes,
  type Step,
} from "./plan.ts";
import { type PlanResult, planResult, specCounts, specWarnings } from "./report.ts";
import { loadSpecFile, type TargetSpec } from "./spec.ts";
import { defaultSpecFile } from "./spec_file.ts";

/**
 * Refuses (see connected.ts) when the plan removes what a host is connected to. Only a plan that
 * removes something can, so the check and its connection readers are loaded only for one: an up
 * that only creates or changes (from empty, a no-op, a host added) loads neither.
 */
async function refuseIfCutting(live: LiveTree, steps: Step[], o: RefuseOptions): Promise<void> {
  if (!steps.some(removes)) return;
  const { refuseWhileConnected } = await import("./connected.ts");
  await refuseWhileConnected(live, steps, o);
}

function readSecretAttr(io: ConfigfsIo): (path: string) => string | undefined {
  return (path) => (io.exists(path) ? io.read(path) : undefined);
}

/** Where the run happens and how it talks. */
export interface TargetRunOptions {
  /** Where configfs is mounted (nvmet below it). */
  configfs: string;
  dryRun: boolean;
  /** Change even while hosts are connected to what goes. */
  force: boolean;
  /** Progress and warnings, to stderr. */
  note: (line: string) => void;
  /** The host nvmet lives on (default: the running kernel's). */
  env?: TargetEnv;
}

/** What `target up` applies: a spec file, or the one-line form. */
export interface UpRequest {
  /** The spec file (default: defaultSpecFile()) unless oneLine is given. */
  file?: string;
  oneLine?: OneLineInput;
  prune: boolean;
  /** With prune: accept an empty spec. */
  allowEmpty: boolean;
  /** Note each step as it is applied. */
  verbose: boolean;
}

/** Refuses DH-HMAC-CHAP keys on a kernel whose nvmet hosts have no dhchap_key. */
function refuseAuthWithoutSupport(spec: TargetSpec, live: LiveTree): void {
  const dhchap = spec.hosts.filter((h) => h.dhchap_key_file || h.dhchap_ctrl_key_file);
  if (dhchap.length && live.hosts.some((h) => !h.dhchap_supported)) {
    throw new FailureError(
      `This kernel's nvmet has no DH-HMAC-CHAP (hosts have no dhchap_key attribute), but the spec sets keys for '${
        dhchap[0].nqn
      }'; nothing was changed.`,
      {
        hint:
          "Use a kernel built with CONFIG_NVME_TARGET_AUTH, or remove dhchap_key_file from the spec.",
      },
    );
  }
}

/** Makes nvmet match the spec (see `nvmeof target up --help`); returns what it did. */
export async function targetUp(req: UpRequest, options: TargetRunOptions): Promise<PlanResult> {
  const { dryRun, note } = options;
  const env = options.env ?? kernelTargetEnv();
  const file = req.file ?? defaultSpecFile();
  // File specs are validated before anything else happens (no module load, no lock).
  const fromFile = req.oneLine ? undefined : await loadSpecFile(file);
  if (!dryRun) env.requireWriter();
  using _lock = dryRun ? undefined : lockTarget(options.configfs, { note });
  const peek = env.open(options.configfs, { prepare: false });
  // The one-line form reads the tree to reuse a live port; a dry run reads nothing else.
  const peekLive = fromFile ? undefined : readLive(peek);
  // The one-line form's module is loaded only for it.
  const spec = fromFile ??
    (await import("./one_line.ts")).oneLineSpec(req.oneLine!, peekLive!);
  const warnings = specWarnings(spec);
  for (const w of warnings) note(w);
  const transports = spec.ports.map((p) => p.trtype);
  const io = dryRun ? peek : env.open(options.configfs, { prepare: true, transports, note });
  const live = dryRun && peekLive ? peekLive : readLive(io);
  refuseAuthWithoutSupport(spec, live);
  if (req.prune) {
    checkPruneByEmptySpec(spec, live, {
      source: req.oneLine ? "from the command line" : `'${file}'`,
      allowEmpty: req.allowEmpty,
    });
  }
  await hashAhead(identitiesToDerive(live, spec));
  const steps = planUp(live, spec, {
    prune: req.prune,
    readLiveSecret: io ? readSecretAttr(io) : undefined,
  });
  if (!options.force && !dryRun) {
    await refuseIfCutting(live, steps, { sources: () => env.peers(), doer: "--prune", note });
  }
  if (!dryRun && steps.length) {
    applyPlan(io!, steps, { onStep: req.verbose ? (s) => note(describeStep(s)) : undefined });
  }
  return planResult(steps, { dryRun, warnings, summary: specCounts(spec) });
}

/** What `target down` removes: everything, or a spec file's objects. */
export interface DownRequest {
  all: boolean;
  /** The spec file (default: defaultSpecFile()) unless all. */
  file?: string;
}

/** Removes the selected objects from nvmet (see `nvmeof target down --help`). */
export async function targetDown(req: DownRequest, options: TargetRunOptions): Promise<PlanResult> {
  const { dryRun, note } = options;
  const env = options.env ?? kernelTargetEnv();
  const spec = req.all
    ? undefined
    : await loadSpecFile(req.file ?? defaultSpecFile(), { checkFiles: false });
  if (!dryRun) env.requireWriter();
  using _lock = dryRun ? undefined : lockTarget(options.configfs, { note });
  const io = env.open(options.configfs, { prepare: false });
  const live = readLive(io);
  const steps = planDown(live, { all: req.all, spec });
  if (!options.force && !dryRun) {
    await refuseIfCutting(live, steps, { sources: () => env.peers(), note });
  }
  if (!dryRun && steps.length) applyPlan(io!, steps);
  return planResult(steps, { dryRun });
}
