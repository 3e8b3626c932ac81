/**
 * The names and the one default of the boot-time units (systemd.ts writes and installs them).
 * Apart from systemd.ts so that the help of connect, enable-autoconnect and target enable shows
 * them without loading the installer.
 */

/** The unit that runs `target up` at boot and `target down` at shutdown. */
export const TARGET_UNIT = "nvmeof-target.service";
/** The unit that runs `connect --saved` at boot. */
export const AUTOCONNECT_UNIT = "nvmeof-autoconnect.service";
/** The unit that runs `nvmeof exporter` (the metrics over HTTP). */
export const EXPORTER_UNIT = "nvmeof-exporter.service";
/** The unit that runs `nvmeof agent` (follows the discovery controllers of discovery.conf). */
export const AGENT_UNIT = "nvmeof-agent.service";
/** The target the units are wanted by. */
export const WANTED_BY = "multi-user.target";
/** The default bound on the boot-time retries of `connect --saved`, in seconds. */
export const DEFAULT_RETRY_FOR = 120;
