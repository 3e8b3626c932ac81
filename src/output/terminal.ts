/**
 * The process's own terminal for a full-screen view (`nvmeof top`): the alternate screen, a hidden
 * cursor and raw input on enter, all undone on restore, which runs once however the view ends.
 * Escape sequences are the xterm/VT100 ones every terminal emulator and tmux understand.
 */
import type { LiveTerminal } from "../metrics/top_loop.ts";
import { writeAll } from "./write.ts";

const CSI = "\x1b[";
const ALT_SCREEN_ON = `${CSI}?1049h`;
const ALT_SCREEN_OFF = `${CSI}?1049l`;
const CURSOR_HIDE = `${CSI}?25l`;
const CURSOR_SHOW = `${CSI}?25h`;
const CURSOR_HOME = `${CSI}H`;
const CLEAR_LINE_END = `${CSI}K`;
const CLEAR_SCREEN_END = `${CSI}J`;
/** What a terminal reports when it cannot say its size (Deno.consoleSize failed). */
const FALLBACK_SIZE = { columns: 80, rows: 24 } as const;

/** Whether output may be coloured: a terminal, and NO_COLOR unset or empty (no-color.org). */
export function colorWanted(stream: { isTerminal(): boolean } = Deno.stdout): boolean {
  return stream.isTerminal() && !Deno.env.get("NO_COLOR");
}

/** The process's terminal: stdout to draw on, stdin for keys (raw only when it is a terminal). */
export function processTerminal(): LiveTerminal {
  let raw = false;
  let entered = false;
  return {
    size() {
      try {
        return Deno.consoleSize();
      } catch {
        return FALLBACK_SIZE;
      }
    },
    enter() {
      entered = true;
      if (Deno.stdin.isTerminal()) {
        Deno.stdin.setRaw(true);
        raw = true;
      }
      writeAll(Deno.stdout, ALT_SCREEN_ON + CURSOR_HIDE);
    },
    restore() {
      if (raw) {
        Deno.stdin.setRaw(false);
        raw = false;
      }
      if (entered) {
        entered = false;
        writeAll(Deno.stdout, CURSOR_SHOW + ALT_SCREEN_OFF);
      }
    },
    draw(lines) {
      const body = lines.map((l) => l + CLEAR_LINE_END).join("\r\n");
      writeAll(Deno.stdout, CURSOR_HOME + body + CLEAR_SCREEN_END);
    },
    onInput(on) {
      let open = true;
      const buf = new Uint8Array(64);
      const decoder = new TextDecoder();
      (async () => {
        while (open) {
          const n = await Deno.stdin.read(buf).catch(() => null);
          if (n === null) return; // end of input: keys can no longer quit, signals still do
          if (open) on(decoder.decode(buf.subarray(0, n)));
        }
      })();
      return () => open = false;
    },
    onSignal(sig, on) {
      Deno.addSignalListener(sig, on);
      return () => Deno.removeSignalListener(sig, on);
    },
  };
}
