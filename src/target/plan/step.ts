/** A configfs step of a plan, and how it is shown to people and in JSON (secrets masked). */

/** One configfs operation. Paths are relative to the nvmet root. */
export type Step =
  | { op: "mkdir"; path: string }
  | { op: "rmdir"; path: string }
  | {
    op: "write";
    path: string;
    value: string;
    /** The value before, written back on rollback (absent: nothing to restore). */
    old?: string;
    /** The value is a secret: never shown. */
    secret?: boolean;
  }
  | { op: "link"; path: string; target: string }
  | { op: "unlink"; path: string; target: string };

/** A write of VALUE to PATH, with the OLD value to put back on rollback when there is one. */
export function writeStep(path: string, value: string, old: string | undefined): Step {
  const step: Step = { op: "write", path, value };
  if (old !== undefined) step.old = old;
  return step;
}

/** Whether a step takes something away (a directory or a link): only these can cut a host off. */
export function removes(s: Step): boolean {
  return s.op === "rmdir" || s.op === "unlink";
}

/** A step as one line for people (secrets masked). */
export function describeStep(s: Step): string {
  switch (s.op) {
    case "mkdir":
      return `mkdir  ${s.path}`;
    case "rmdir":
      return `rmdir  ${s.path}`;
    case "write": {
      const v = s.secret ? "(secret)" : `'${s.value}'`;
      const was = s.secret || s.old === undefined ? "" : `  (was '${s.old}')`;
      return `write  ${s.path} = ${v}${was}`;
    }
    case "link":
      return `link   ${s.path} -> ${s.target}`;
    case "unlink":
      return `unlink ${s.path}`;
  }
}

/**
 * A step as JSON-safe data (secrets masked): a secret's write as a new object, any other step as
 * itself. The plan makes each step with only its fields, in the order JSON shows them (op, path,
 * then value and old, or target), and JSON leaves out an `old` that is undefined, so a step is
 * already its data (tests/unit/target_plan_test.ts holds every plan's steps to that). Copying each
 * took 13 of the report's 35 ms at 16x in the lab guest (docs/benchmarks.md, pass 24).
 */
export function stepData(s: Step): Record<string, unknown> {
  return s.op === "write" && s.secret
    ? { op: s.op, path: s.path, value: "(secret)", secret: true }
    : s;
}
