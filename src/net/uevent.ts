/**
 * The kernel's uevents as they arrive on a NETLINK_KOBJECT_UEVENT socket (lib/kobject_uevent.c):
 * `ACTION@DEVPATH` then NUL-separated `KEY=VALUE` pairs, one event per datagram. A pure codec, so
 * it is tested with bytes; the socket is uevent_socket.ts.
 */

/** One uevent: what happened to which kobject, and its environment (ACTION, DEVPATH, SUBSYSTEM …). */
export interface Uevent {
  action: string;
  devpath: string;
  env: Record<string, string>;
}

/**
 * Parses one datagram. Undefined for what is not a kernel uevent: udevd's re-broadcasts (they
 * start with `libudev`), an empty or headerless buffer. A pair without `=` is skipped.
 */
export function parseUevent(buf: Uint8Array): Uevent | undefined {
  const parts = new TextDecoder().decode(buf).split("\0");
  const head = parts[0];
  const at = head.indexOf("@");
  if (at <= 0 || head.startsWith("libudev")) return undefined;
  const env: Record<string, string> = {};
  for (const p of parts.slice(1)) {
    const eq = p.indexOf("=");
    if (eq > 0) env[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return {
    action: env.ACTION ?? head.slice(0, at),
    devpath: env.DEVPATH ?? head.slice(at + 1),
    env,
  };
}

/** The kernel name of the event's device: the last part of its DEVPATH (`nvme0`). */
export function ueventName(e: Uevent): string {
  return e.devpath.slice(e.devpath.lastIndexOf("/") + 1);
}
