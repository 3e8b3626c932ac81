/**
 * The `/dev/nvme-fabrics` option string, in the token order nvme-cli uses (libnvme's
 * build_options in src/nvme/fabrics.c; the kernel's opt_tokens in drivers/nvme/host/fabrics.c),
 * its printable form, and the namespace queue settings connect writes after it.
 */
import { CONNECT_OPTIONS } from "./connect_table.ts";
import { type ConnectOptions, isSet } from "./connect_options.ts";

/** The option-string token and value of each table option set in `o`, in table order. */
function tableTokens(o: ConnectOptions): Array<[string, string | undefined]> {
  const out: Array<[string, string | undefined]> = [];
  for (const r of CONNECT_OPTIONS) {
    const v = o[r.field];
    if (!isSet(r, v) || r.queueAttr) continue;
    out.push([r.token, v === true ? undefined : String(v)]);
  }
  return out;
}

/** The option string written to /dev/nvme-fabrics. */
export function buildOptionString(o: ConnectOptions): string {
  const t: string[] = [`nqn=${o.nqn}`, `transport=${o.transport}`, `traddr=${o.traddr}`];
  t.push(`trsvcid=${o.trsvcid}`);
  if (o.hostTraddr !== undefined) t.push(`host_traddr=${o.hostTraddr}`);
  if (o.hostnqn !== undefined) t.push(`hostnqn=${o.hostnqn}`);
  if (o.hostid !== undefined) t.push(`hostid=${o.hostid}`);
  for (const [k, v] of tableTokens(o)) t.push(v === undefined ? k : `${k}=${v}`);
  return t.join(",");
}

/**
 * What connect writes to each namespace queue of the new controller once it is ready (the table's
 * `queueAttr` rows set in `o`): attribute → value in ms, as sysfs takes it. Empty when none.
 */
export function namespaceQueueSettings(o: ConnectOptions): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of CONNECT_OPTIONS) {
    if (r.queueAttr && isSet(r, o[r.field])) out[r.queueAttr] = Number(o[r.field]) * 1000;
  }
  return out;
}

/** `namespace_queues` (what connect sets on each namespace queue) for a result, if any. */
export function namespaceQueuesData(
  o: ConnectOptions,
): { namespace_queues?: Record<string, number> } {
  const q = namespaceQueueSettings(o);
  return Object.keys(q).length ? { namespace_queues: q } : {};
}

/** "io_timeout=2000 ms": namespace queue settings as the text output says them. */
export function queueSettingsText(settings: Record<string, number>): string {
  return Object.entries(settings).map(([k, v]) => `${k}=${v} ms`).join(" ");
}

/** "then on each path's namespace queues: io_timeout=2000 ms", or "" when connect writes none. */
export function namespaceQueueText(o: ConnectOptions): string {
  const s = namespaceQueueSettings(o);
  return Object.keys(s).length
    ? `then on each path's namespace queues: ${queueSettingsText(s)}`
    : "";
}

/** The option string with secrets replaced, safe to print. */
export function redactedOptionString(o: ConnectOptions): string {
  return buildOptionString({
    ...o,
    ...(o.dhchapSecret !== undefined ? { dhchapSecret: "<secret from file>" } : {}),
    ...(o.dhchapCtrlSecret !== undefined ? { dhchapCtrlSecret: "<secret from file>" } : {}),
  });
}
