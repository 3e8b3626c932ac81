/**
 * What a work completion brings back: its status, turned into a CompletionError when the work
 * request failed, and the bytes that landed, compared with what was expected. The verbs layer
 * the tools (ping, rping, bw) and the NVMe queues all reap their completions through.
 */
import { IBV_WC_STATUS, wcStatusName } from "../../ffi/enums.ts";
import { FailureError } from "../errors.ts";
import type { CompletionQueue } from "./verbs.ts";

/** What each failed status usually means, from the side that saw it. */
const STATUS_HINTS: Readonly<Record<number, string>> = {
  [IBV_WC_STATUS.RETRY_EXC_ERR]:
    "Transport retries ran out: the peer stopped answering (process killed or link down).",
  [IBV_WC_STATUS.REM_ACCESS_ERR]:
    "The peer refused the access: its memory region or QP lacks the access flag.",
  [IBV_WC_STATUS.RNR_RETRY_EXC_ERR]: "The peer had no receive posted (RNR retries ran out).",
  [IBV_WC_STATUS.WR_FLUSH_ERR]: "The QP went to the error state (the connection was torn down).",
};

/** A completion with an error status. */
export class CompletionError extends FailureError {
  readonly status: number;
  constructor(status: number, opcode: number, when: string) {
    super(
      `A work request failed ${when}: ${
        wcStatusName(status)
      } (status ${status}, opcode ${opcode}).`,
      { hint: STATUS_HINTS[status] },
    );
    this.status = status;
  }
}

/** Throws CompletionError when completion `i` of the last poll of `cq` failed. */
export function checkCompletion(cq: CompletionQueue, i: number, when: string): void {
  const status = cq.status(i);
  if (status !== IBV_WC_STATUS.SUCCESS) throw new CompletionError(status, cq.opcode(i), when);
}

/** The index of the first differing byte, or -1 (0 when the lengths differ). */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = a.length;
  if (n !== b.length) return 0;
  for (let k = 0; k < n; k++) if (a[k] !== b[k]) return k;
  return -1;
}
