/**
 * The loops of `nvmeof top`: collect the exported families every interval and turn each pair of
 * collections into a view (top_view.ts). `topViews` yields views for a listing or JSON lines;
 * `runLive` redraws a terminal until `q`, Ctrl-C, SIGINT or SIGTERM, and always gives the
 * terminal back as it found it (main screen, cursor shown, raw mode off), on error too.
 *
 * The terminal and the drawing are parameters: the command passes the process's terminal
 * (src/output/terminal.ts) and the screen (src/output/top_screen.ts); tests pass their own.
 */
import type { MetricFamily } from "./family.ts";
import { type TopView, topView } from "./top_view.ts";
import { timer } from "../timer.ts";

/** Where the families come from and what the views say of the host. */
export interface TopSource {
  /** One collection of every family (collectFamilies). */
  collect(): Promise<MetricFamily[]>;
  host: string;
  /** Milliseconds between collections. */
  intervalMs: number;
  /** Monotonic milliseconds (default performance.now). */
  now?: () => number;
}

const MS_PER_SECOND = 1000;

/** Collections, each with the view it makes with the one before. */
class Sampler {
  #source: TopSource;
  #previous?: { families: MetricFamily[]; at: number };

  constructor(source: TopSource) {
    this.#source = source;
  }

  /** A collection kept for the next view's rates, without a view of its own (none is shown). */
  async prime(): Promise<void> {
    await this.#collect();
  }

  async next(): Promise<TopView> {
    const prev = this.#previous;
    const { families, at } = await this.#collect();
    return topView(prev?.families, families, {
      seconds: prev ? (at - prev.at) / MS_PER_SECOND : 0,
      host: this.#source.host,
      time: new Date(),
    });
  }

  async #collect(): Promise<{ families: MetricFamily[]; at: number }> {
    const families = await this.#source.collect();
    const at = (this.#source.now ?? (() => performance.now()))();
    return this.#previous = { families, at };
  }
}

/** A wait of MS that ends early when `wake` is called. */
function sleep(ms: number, signal?: { onWake(cb: () => void): void }): Promise<void> {
  return new Promise((resolve) => {
    const t = timer(ms);
    t.done.then(resolve);
    signal?.onWake(() => {
      t.cancel();
      resolve();
    });
  });
}

/**
 * COUNT views, each with rates: a first collection, then one every interval, each view made
 * from it and the one before (so COUNT + 1 collections).
 */
export async function* topViews(source: TopSource, count: number): AsyncGenerator<TopView> {
  const sampler = new Sampler(source);
  await sampler.prime();
  for (let i = 0; i < count; i++) {
    await sleep(source.intervalMs);
    yield await sampler.next();
  }
}

/** The terminal `runLive` draws on: the process's (src/output/terminal.ts) or a test's. */
export interface LiveTerminal {
  /** Columns and rows now. */
  size(): { columns: number; rows: number };
  /** Alternate screen, cursor hidden, raw input (keys arrive one by one, unechoed). */
  enter(): void;
  /** Undoes `enter` exactly; safe to call twice. */
  restore(): void;
  /** Replaces the screen with LINES. */
  draw(lines: string[]): void;
  /** Calls ON with each chunk typed, until the returned function is called. */
  onInput(on: (text: string) => void): () => void;
  /** Calls ON for each signal SIG, until the returned function is called. */
  onSignal(sig: Deno.Signal, on: () => void): () => void;
}

/** Why the live view ended. */
export type LiveEnd = "quit" | "signal" | "count";

/** What `runLive` needs besides the source. */
export interface LiveOptions {
  terminal: LiveTerminal;
  /** The screen's lines for a view at a size (src/output/top_screen.ts). */
  screen(view: TopView, size: { columns: number; rows: number }): string[];
  /** Stop after this many refreshes (default: until quit). */
  count?: number;
}

/** Keys that quit: q, Q, Ctrl-C (raw mode delivers it as a byte, not SIGINT). */
const QUIT_KEYS = new Set(["q", "Q", "\x03"]);
/** Signals that end the view: the terminal is restored before nvmeof exits. */
const STOP_SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/**
 * Redraws the terminal with a new view every interval and at once when it is resized, until a
 * quit key, a stop signal or `count` refreshes. The first view has no rates yet; the next ones do.
 */
export async function runLive(source: TopSource, o: LiveOptions): Promise<LiveEnd> {
  const term = o.terminal;
  const sampler = new Sampler(source);
  let end: LiveEnd | undefined;
  let wake = () => {};
  const stop = (why: LiveEnd) => {
    end ??= why;
    wake();
  };
  let view: TopView | undefined;
  const redraw = () => {
    if (view && end === undefined) term.draw(o.screen(view, term.size()));
  };
  const undo: Array<() => void> = [];
  try {
    term.enter();
    undo.push(term.onInput((text) => {
      if ([...text].some((c) => QUIT_KEYS.has(c))) stop("quit");
    }));
    for (const sig of STOP_SIGNALS) undo.push(term.onSignal(sig, () => stop("signal")));
    undo.push(term.onSignal("SIGWINCH", redraw));
    for (let n = 0; end === undefined; n++) {
      view = await sampler.next();
      redraw();
      if (o.count !== undefined && n + 1 >= o.count) stop("count");
      if (end !== undefined) break;
      await sleep(source.intervalMs, { onWake: (cb) => wake = cb });
    }
    return end!;
  } finally {
    for (const u of undo.reverse()) u();
    term.restore();
  }
}
