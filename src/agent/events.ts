/**
 * Which uevents make the agent read a discovery log again (drivers/nvme/host/core.c): a
 * Discovery Log Change notice on a followed discovery controller, its `rediscover` after a
 * reconnect, its removal, and the removal of an I/O controller the agent connected.
 */
import { type Uevent, ueventName } from "../net/uevent.ts";
import type { ScanReason } from "./scheduler.ts";

/**
 * NVME_AEN of a Discovery Log Change notice: event type 2 (notice), information 0xf0 (discovery
 * log page change), log page 0x70 (the discovery log), as nvme_aen_uevent() formats it.
 */
export const DISCOVERY_LOG_CHANGE_AEN = "0x70f002";

const CONTROLLER = /^nvme\d+$/;

/** The scan a uevent asks for: which endpoint, and why; undefined for every other event. */
export function scanOf(
  e: Uevent,
  owners: { discovery(name: string): string | undefined; io(name: string): string | undefined },
): { endpoint: string; reason: ScanReason } | undefined {
  if (e.env.SUBSYSTEM !== "nvme") return undefined;
  const name = ueventName(e);
  if (!CONTROLLER.test(name)) return undefined;
  const followed = owners.discovery(name);
  if (followed !== undefined) {
    if (e.action === "remove") return { endpoint: followed, reason: "lost" };
    if (e.action !== "change") return undefined;
    if (e.env.NVME_AEN?.toLowerCase() === DISCOVERY_LOG_CHANGE_AEN) {
      return { endpoint: followed, reason: "log-changed" };
    }
    if (e.env.NVME_EVENT === "rediscover") return { endpoint: followed, reason: "rediscover" };
    return undefined;
  }
  const connected = owners.io(name);
  if (connected !== undefined && e.action === "remove") {
    return { endpoint: connected, reason: "removed" };
  }
  return undefined;
}
