import assert from "node:assert/strict";
import type { MetricFamily } from "../../src/metrics/family.ts";
import { type LiveTerminal, runLive, topViews } from "../../src/metrics/top_loop.ts";
import { block, HEAD } from "./metrics_top_fixtures.ts";

/** A terminal that records what is done to it; keys and signals are sent by the test. */
class FakeTerminal implements LiveTerminal {
  events: string[] = [];
  frames: string[][] = [];
  columns = 80;
  rows = 24;
  input?: (text: string) => void;
  signals = new Map<string, () => void>();
  /** Called after each draw (to type a key, send a signal…). */
  afterDraw: (t: FakeTerminal) => void = () => {};

  size() {
    return { columns: this.columns, rows: this.rows };
  }
  enter() {
    this.events.push("enter");
  }
  restore() {
    this.events.push("restore");
  }
  draw(lines: string[]) {
    this.frames.push(lines);
    this.afterDraw(this);
  }
  onInput(on: (text: string) => void) {
    this.input = on;
    return () => this.input = undefined;
  }
  onSignal(sig: Deno.Signal, on: () => void) {
    this.signals.set(sig, on);
    return () => this.signals.delete(sig);
  }
}

/** Collections whose read counter grows by 100 each time. */
function growing(): { collect(): Promise<MetricFamily[]>; calls: number } {
  const src = {
    calls: 0,
    collect() {
      const n = src.calls++;
      return Promise.resolve(
        block([[HEAD, { rios: 100 * n, rbytes: 0, rsec: 0, wios: 0, wbytes: 0, wsec: 0 }]]),
      );
    },
  };
  return src;
}

const screen = (view: { interval_seconds: number | null }, size: { columns: number }) => [
  `${size.columns} ${view.interval_seconds === null ? "first" : "rates"}`,
];

Deno.test("top live: q quits after the first redraw with rates, and restores the terminal", async () => {
  const term = new FakeTerminal();
  term.afterDraw = (t) => {
    if (t.frames.length === 2) t.input!("xq");
  };
  const end = await runLive({ ...growing(), host: "h", intervalMs: 5 }, { terminal: term, screen });
  assert.equal(end, "quit");
  assert.deepEqual(term.frames, [["80 first"], ["80 rates"]]);
  assert.deepEqual(term.events, ["enter", "restore"]);
  assert.equal(term.input, undefined, "input listener removed");
  assert.equal(term.signals.size, 0, "signal listeners removed");
});

Deno.test("top live: Ctrl-C typed in raw mode quits too", async () => {
  const term = new FakeTerminal();
  term.afterDraw = (t) => t.input!("\x03");
  assert.equal(
    await runLive({ ...growing(), host: "h", intervalMs: 5 }, { terminal: term, screen }),
    "quit",
  );
  assert.equal(term.frames.length, 1);
});

Deno.test("top live: SIGTERM ends the view and restores the terminal", async () => {
  const term = new FakeTerminal();
  term.afterDraw = (t) => t.signals.get("SIGTERM")!();
  const end = await runLive({ ...growing(), host: "h", intervalMs: 60_000 }, {
    terminal: term,
    screen,
  });
  assert.equal(end, "signal");
  assert.deepEqual(term.events, ["enter", "restore"]);
  assert.equal(term.signals.size, 0);
});

Deno.test("top live: a resize redraws at once at the new size", async () => {
  const term = new FakeTerminal();
  term.afterDraw = (t) => {
    if (t.frames.length === 1) {
      t.columns = 132;
      t.signals.get("SIGWINCH")!();
    } else t.input!("q");
  };
  await runLive({ ...growing(), host: "h", intervalMs: 60_000 }, { terminal: term, screen });
  assert.deepEqual(term.frames, [["80 first"], ["132 first"]]);
});

Deno.test("top live: a failing collection restores the terminal and is thrown", async () => {
  const term = new FakeTerminal();
  const collect = () => Promise.reject(new Error("sysfs vanished"));
  await assert.rejects(
    runLive({ collect, host: "h", intervalMs: 5 }, { terminal: term, screen }),
    /sysfs vanished/,
  );
  assert.deepEqual(term.events, ["enter", "restore"]);
  assert.equal(term.signals.size, 0);
});

Deno.test("top live: --count stops after that many refreshes", async () => {
  const term = new FakeTerminal();
  const end = await runLive({ ...growing(), host: "h", intervalMs: 1 }, {
    terminal: term,
    screen,
    count: 3,
  });
  assert.equal(end, "count");
  assert.equal(term.frames.length, 3);
});

Deno.test("top views: COUNT views, each with rates, from COUNT + 1 collections", async () => {
  const src = growing();
  let t = 0;
  const views = [];
  for await (const v of topViews({ ...src, host: "h", intervalMs: 1, now: () => t += 500 }, 2)) {
    views.push(v);
  }
  assert.equal(src.calls, 3);
  assert.deepEqual(
    views.map((v) => [v.interval_seconds, v.subsystems[0].namespaces[0].read_iops]),
    [[0.5, 200], [0.5, 200]],
  );
});
