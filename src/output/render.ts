import type { CommandResult } from "../cli/command.ts";

/** JSON with bigints as numbers when they fit, strings otherwise. */
export function toJson(data: unknown): string {
  return JSON.stringify(
    data,
    (_k, v) =>
      typeof v === "bigint" ? (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString()) : v,
    2,
  );
}

/** A plain `key: value` listing for results that bring no text renderer of their own. */
export function genericText(data: unknown, indent = ""): string {
  if (data === null || data === undefined) return "";
  if (typeof data !== "object") return `${indent}${String(data)}\n`;
  if (Array.isArray(data)) {
    return data.map((d) => genericText(d, indent) + (typeof d === "object" ? "\n" : "")).join("");
  }
  let out = "";
  for (const [k, v] of Object.entries(data)) {
    if (v !== null && typeof v === "object") {
      out += `${indent}${k}:\n${genericText(v, indent + "  ")}`;
    } else if (v !== undefined) {
      out += `${indent}${k}: ${String(v)}\n`;
    }
  }
  return out;
}

/** Renders a command's result for stdout in the chosen format. */
export function render(result: CommandResult, format: string): string {
  if (result.streamed) return "";
  if (format === "json") return toJson(result.data) + "\n";
  const own = format === "text" ? undefined : result.format?.(format, result.data);
  const text = own !== undefined
    ? own
    : result.text
    ? result.text(result.data)
    : genericText(result.data);
  return text === "" || text.endsWith("\n") ? text : text + "\n";
}

/** "64 MiB", "1.5 GiB": a size for text output. */
export function humanSize(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}
