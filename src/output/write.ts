/**
 * Writing results and diagnostics to the process's streams. A reader that goes away early
 * (`nvmeof target show | head -c 50`) closes the pipe; like other Unix tools, nvmeof then stops
 * writing to it quietly instead of reporting the closed pipe as its own failure.
 */

const encoder = new TextEncoder();

/** Whether `err` says the reading end of a pipe or socket is gone (EPIPE). */
export function isBrokenPipe(err: unknown): boolean {
  return err instanceof Deno.errors.BrokenPipe ||
    (err as { code?: unknown } | null)?.code === "EPIPE";
}

/**
 * Writes all of `text` to `stream` (Deno.stdout or Deno.stderr). Returns false, having written
 * what the reader took, when the reader closed the pipe; other errors are thrown.
 */
export function writeAll(stream: { writeSync(p: Uint8Array): number }, text: string): boolean {
  const bytes = encoder.encode(text);
  let off = 0;
  try {
    while (off < bytes.length) off += stream.writeSync(bytes.subarray(off));
  } catch (err) {
    if (isBrokenPipe(err)) return false;
    throw err;
  }
  return true;
}
