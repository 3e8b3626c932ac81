/**
 * The screen of `nvmeof top`: a view (src/metrics/top_view.ts) as lines that fit a terminal of a
 * given width and height. Lines are cut, never wrapped; what does not fit in height is counted in
 * the last line. Colour (bold headers, a path's state) only when asked for: the command asks when
 * stdout is a terminal and NO_COLOR is unset.
 */
import type { IoRow, TopView } from "../metrics/top_view.ts";

/** The terminal the screen is drawn for. */
export interface ScreenOptions {
  /** Columns; every line is cut to this. */
  width: number;
  /** Rows; Infinity for a listing with no height limit (`top --once`). */
  height: number;
  color: boolean;
}

/** Width of each number column (r/s, w/s, rMB/s, wMB/s, lat ms, qd). */
const NUM = 8;
const NUM_HEADS = ["r/s", "w/s", "rMB/s", "wMB/s", "lat ms", "inflt"];
/** The label column never gets narrower than this (the numbers are cut instead). */
const MIN_LABEL = 24;
/** Nor wider: numbers stay near the names on a wide terminal. */
const MAX_LABEL = 64;
const BYTES_PER_MB = 1e6;
const MS_PER_SECOND = 1000;

const SGR = { bold: "\x1b[1m", inverse: "\x1b[7m", green: "\x1b[32m", red: "\x1b[31m" } as const;
const SGR_RESET = "\x1b[0m";

/** The screen's lines for VIEW. */
export function topScreen(view: TopView, o: ScreenOptions): string[] {
  const label = Math.max(MIN_LABEL, Math.min(MAX_LABEL, o.width - NUM * NUM_HEADS.length));
  const paint = (text: string, ...codes: string[]) =>
    o.color && codes.length ? codes.join("") + text + SGR_RESET : text;
  // Each line is [text, colour codes]: cut to width first, then painted, so escapes never count.
  const lines: Array<[string, string[]]> = [];
  const add = (text: string, ...codes: string[]) => lines.push([text, codes]);
  const ioLine = (name: string, r: IoRow) => add(pad(name, label) + ioColumns(r));

  const time = view.time.slice(11, 19);
  const every = view.interval_seconds === null
    ? "first sample"
    : `interval ${view.interval_seconds.toFixed(1)} s`;
  add(`nvmeof top  ${view.host}  ${time} UTC  ${every}  (q quits)`, SGR.inverse);
  if (view.failed_collectors.length) {
    add(`collectors failed: ${view.failed_collectors.join(", ")}`, SGR.red);
  }

  if (view.subsystems.length) {
    add("");
    add(pad("SUBSYSTEMS, PATHS, DEVICES", label) + numHeads(), SGR.bold);
    for (const s of view.subsystems) {
      const policy = s.iopolicy ? `  iopolicy ${s.iopolicy}` : "";
      add(`${s.subsystem_nqn}  paths ${s.paths_live}/${s.paths_total} live${policy}`, SGR.bold);
      for (const n of s.namespaces) ioLine(`  ${n.device} nsid ${n.nsid}`, n);
      for (const p of s.paths) {
        const ana = p.ana.map((a) => `ns${a.nsid} ${a.state}`).join(" ");
        const at = [p.transport, p.address].filter(Boolean).join(" ");
        add(
          `  ${p.controller} ${at} ${p.state}${ana ? "  " + ana : ""}`,
          p.state === "live" ? SGR.green : SGR.red,
        );
        for (const d of p.devices) ioLine(`    ${d.device}`, d);
      }
    }
  }

  if (view.rdma_errors.length) {
    add("");
    add(pad("RDMA ERRORS  device/port counter", label) + right("+n") + right("/s"), SGR.bold);
    for (const e of view.rdma_errors) {
      add(
        pad(`  ${e.device}/${e.port} ${e.counter}`, label) + right(`+${e.increase}`) +
          right(num(e.per_second)),
        SGR.red,
      );
    }
  }

  const t = view.target;
  if (t.ports.length) {
    add("");
    add("TARGET PORTS  port trtype address  hosts", SGR.bold);
    for (const p of t.ports) {
      const listening = p.listening === null ? "" : p.listening ? "  listening" : "  NOT listening";
      const conns = p.connections === null ? "" : `  ${p.connections} connections`;
      add(
        `  ${p.port} ${p.trtype} ${p.address}${listening}${conns}`,
        p.listening === false ? SGR.red : "",
      );
      for (const h of p.hosts) add(`    host ${h.remote_address}  ${h.connections} connections`);
    }
  }
  if (t.namespaces.length) {
    add("");
    add(pad("TARGET NAMESPACES", label) + numHeads(), SGR.bold);
    for (const n of t.namespaces) {
      const off = n.enabled === false ? " (disabled)" : "";
      add(`  ${n.subsystem_nqn} nsid ${n.nsid}${off}`);
      ioLine(`    ${n.device}`, n);
    }
  }

  if (lines.length === 1) {
    add("");
    add("nothing to show: no fabrics paths, RDMA errors, nvmet ports or namespaces");
  }

  const shown = lines.length > o.height ? lines.slice(0, Math.max(0, o.height - 1)) : lines;
  const out = shown.map(([text, codes]) => paint(cut(text, o.width), ...codes.filter(Boolean)));
  if (shown.length < lines.length && o.height > 0) {
    out.push(
      cut(`… ${lines.length - shown.length} more lines (a taller terminal shows them)`, o.width),
    );
  }
  return out;
}

function numHeads(): string {
  return NUM_HEADS.map(right).join("");
}

function ioColumns(r: IoRow): string {
  const mb = (v: number | null) => v === null ? null : v / BYTES_PER_MB;
  const ms = r.latency_seconds === null ? null : r.latency_seconds * MS_PER_SECOND;
  return [
    num(r.read_iops),
    num(r.write_iops),
    num(mb(r.read_bytes_per_second)),
    num(mb(r.write_bytes_per_second)),
    num(ms),
    r.in_flight === null ? "-" : String(r.in_flight),
  ].map(right).join("");
}

/** A rate for a column: "-" unknown, 3 significant digits, k and M past 10 000. */
function num(v: number | null): string {
  if (v === null) return "-";
  if (v === 0) return "0";
  if (v >= 1e7) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e4) return `${(v / 1e3).toFixed(1)}k`;
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function right(text: string): string {
  return text.padStart(NUM);
}

/** TEXT padded to WIDTH, or cut to leave one space before the numbers. */
function pad(text: string, width: number): string {
  const chars = [...text];
  return chars.length >= width ? chars.slice(0, width - 1).join("") + " " : text.padEnd(width);
}

/** TEXT cut to WIDTH characters (code points), "…" marking the cut. */
function cut(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  return width <= 0 ? "" : chars.slice(0, width - 1).join("") + "…";
}
