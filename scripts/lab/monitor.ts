/**
 * One command to a lab guest's QEMU human monitor over its unix socket (scripts/lab/lab fabric link):
 *   deno run --allow-net --allow-read --allow-write scripts/lab/monitor.ts MON_SOCK "set_link l0 off"
 * Prints what the monitor answered, less its banner and prompts; exits 1 when it answers an error.
 */
const [path, command] = Deno.args;
if (!path || !command) {
  console.error("usage: monitor.ts MON_SOCK COMMAND");
  Deno.exit(2);
}
const conn = await Deno.connect({ transport: "unix", path });
const dec = new TextDecoder();
const buf = new Uint8Array(4096);
let seen = "";

/** Reads until the monitor's prompt shows up `count` times in all, or 10 s pass. */
async function until(count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((seen.match(/\(qemu\) /g) ?? []).length < count) {
    if (Date.now() > deadline) throw new Error(`no answer from ${path}`);
    const n = await conn.read(buf);
    if (n === null) break;
    seen += dec.decode(buf.subarray(0, n));
  }
}

await until(1);
const before = seen.length;
await conn.write(new TextEncoder().encode(command + "\n"));
await until(2);
conn.close();
// The answer: after the echoed command line, up to the next prompt; drop terminal escapes.
// deno-lint-ignore no-control-regex -- the monitor speaks a terminal: drop its escape sequences
const answer = seen.slice(before).replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").split(/\r?\n/).slice(1)
  .join("\n").replace(/\(qemu\) $/, "").trim();
if (answer) console.log(answer);
Deno.exit(/error|not found|invalid/i.test(answer) ? 1 : 0);
