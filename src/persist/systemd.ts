/**
 * The systemd units that bring a target and the saved connections back after a reboot, and
 * their installation: the unit file plus the `WantedBy=` symlink `systemctl enable` would make,
 * then `systemctl daemon-reload` when the real systemd directory of a running systemd is used.
 *
 * Modelled on nvmetcli's nvmet.service (oneshot, RemainAfterExit, after configfs and the network)
 * and nvme-cli's nvmf-autoconnect.service (oneshot, after network-online, before remote-fs-pre),
 * (nvme-cli PR #651); the ports of a target are retried because their IP may appear late.
 */
import { HOST_PATH_DEFAULTS } from "../host_paths.ts";
import { FailureError } from "../errors.ts";
import type { PersistPaths } from "./etc_paths.ts";
import type { SelfPath } from "./self.ts";
import { syncDir, writeDurableSync } from "./durable.ts";

import { DEFAULT_RETRY_FOR, WANTED_BY } from "./units.ts";

const DEFAULT_SYSTEMD_DIR = "/etc/systemd/system";
const DEFAULT_ETC = HOST_PATH_DEFAULTS.etc.default;

/**
 * One ExecStart= word, quoted the way systemd.service(5) reads it: `%` is a specifier and `$` an
 * environment expansion, so both are doubled; words with anything but plain path characters are
 * double-quoted with `\` and `"` escaped.
 */
export function execWord(word: string): string {
  if (/[\n\r\0]/.test(word)) {
    throw new FailureError(
      `Cannot put '${word.replace(/\n/g, "\\n")}' in a unit: it has a newline.`,
      {
        hint: "Use a path without newlines or NUL.",
      },
    );
  }
  const escaped = word.replaceAll("%", "%%").replaceAll("$", "$$$$");
  if (/^[A-Za-z0-9_@%$+=:,./-]+$/.test(escaped)) return escaped;
  return `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/** A value of a unit setting that expands specifiers (Description=, Condition…=): `%` doubled. */
function literal(value: string): string {
  return value.replaceAll("%", "%%");
}

function execLine(self: SelfPath, args: string[]): string {
  return [self.path, ...args].map(execWord).join(" ");
}

function header(
  command: string,
  undo: string,
  self: SelfPath,
  edit = "Edit the spec or the saved connections, not this file",
): string[] {
  return [
    `# Installed by '${command}'; remove it with '${undo}'.`,
    `# It runs nvmeof's ${self.how}: ${self.path}`,
    `# ${edit}: enabling again rewrites it.`,
  ];
}

/** The text of nvmeof-target.service for the spec file `specFile` (an absolute path). */
export function targetUnitText(self: SelfPath, specFile: string): string {
  return [
    ...header("nvmeof target enable", "nvmeof target disable", self),
    "[Unit]",
    `Description=NVMe over Fabrics target from ${literal(specFile)} (nvmeof)`,
    // configfs holds nvmet; the port's IP and its RDMA device must exist before the bind.
    "Requires=sys-kernel-config.mount",
    "After=sys-kernel-config.mount local-fs.target systemd-modules-load.service",
    "After=network-online.target rdma-hw.target",
    "Wants=network-online.target",
    // A port whose address is not up yet fails (EADDRNOTAVAIL) and is rolled back: retry, bounded.
    "StartLimitIntervalSec=600",
    "StartLimitBurst=20",
    "",
    "[Service]",
    "Type=oneshot",
    "RemainAfterExit=yes",
    `ExecStart=${execLine(self, ["target", "up", "-f", specFile])}`,
    `ExecStop=${execLine(self, ["target", "down", "-f", specFile])}`,
    "Restart=on-failure",
    "RestartSec=10s",
    "SyslogIdentifier=nvmeof-target",
    "",
    "[Install]",
    `WantedBy=${WANTED_BY}`,
    "",
  ].join("\n");
}

/** The text of nvmeof-autoconnect.service: reconnect the saved connections, retrying for `retryFor` s. */
export function autoconnectUnitText(
  self: SelfPath,
  paths: Pick<PersistPaths, "etc">,
  retryFor: number = DEFAULT_RETRY_FOR,
): string {
  const env = paths.etc === DEFAULT_ETC
    ? []
    : [`Environment=${execWord(`NVMEOF_ETC=${paths.etc}`)}`];
  return [
    ...header("nvmeof enable-autoconnect", "nvmeof disable-autoconnect", self),
    "[Unit]",
    "Description=Connect the saved NVMe over Fabrics connections (nvmeof)",
    "Wants=network-online.target",
    "After=network-online.target systemd-modules-load.service rdma-hw.target",
    "Before=remote-fs-pre.target",
    `ConditionPathExists=${literal(`${paths.etc}/connections.yaml`)}`,
    "",
    "[Service]",
    "Type=oneshot",
    ...env,
    `ExecStart=${execLine(self, ["connect", "--saved", "--retry-for", String(retryFor)])}`,
    // The retries are bounded by --retry-for; leave room for the last attempt.
    `TimeoutStartSec=${retryFor + 90}`,
    "SyslogIdentifier=nvmeof-autoconnect",
    "",
    "[Install]",
    `WantedBy=${WANTED_BY}`,
    "",
  ].join("\n");
}

/**
 * The text of nvmeof-exporter.service: `nvmeof exporter`, with `--listen listen` when given,
 * restarted when it fails. It only reads the kernel's trees: /usr, /boot and /etc are read-only.
 */
export function exporterUnitText(self: SelfPath, listen?: string): string {
  return [
    ...header(
      "nvmeof exporter enable",
      "nvmeof exporter disable",
      self,
      "Give 'nvmeof exporter enable' its --listen rather than editing this file",
    ),
    "[Unit]",
    "Description=NVMe over Fabrics metrics for Prometheus (nvmeof exporter)",
    "Wants=network-online.target",
    "After=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${execLine(self, ["exporter", ...(listen ? ["--listen", listen] : [])])}`,
    "Restart=on-failure",
    "RestartSec=5s",
    "NoNewPrivileges=yes",
    "ProtectSystem=full",
    "ProtectHome=read-only",
    "PrivateTmp=yes",
    "SyslogIdentifier=nvmeof-exporter",
    "",
    "[Install]",
    `WantedBy=${WANTED_BY}`,
    "",
  ].join("\n");
}

/**
 * The text of nvmeof-agent.service: `nvmeof agent`, following the discovery controllers of
 * /etc/nvme/discovery.conf, started once the network is online and restarted when it fails.
 */
export function agentUnitText(self: SelfPath, args: readonly string[] = []): string {
  return [
    ...header(
      "nvmeof agent enable",
      "nvmeof agent disable",
      self,
      "Edit /etc/nvme/discovery.conf, not this file",
    ),
    "[Unit]",
    "Description=Follow the NVMe over Fabrics discovery controllers (nvmeof agent)",
    "Wants=network-online.target",
    "After=network-online.target systemd-modules-load.service rdma-hw.target",
    "Before=remote-fs-pre.target",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${execLine(self, ["agent", ...args])}`,
    "Restart=on-failure",
    "RestartSec=5s",
    // A usage error (a broken discovery.conf) fails the same way at every start.
    "RestartPreventExitStatus=2",
    "NoNewPrivileges=yes",
    "ProtectHome=read-only",
    "PrivateTmp=yes",
    "SyslogIdentifier=nvmeof-agent",
    "",
    "[Install]",
    `WantedBy=${WANTED_BY}`,
    "",
  ].join("\n");
}

/** What enabling or disabling did (or, with dry run, would do). */
export interface UnitChange {
  unit: string;
  unit_file: string;
  wants_link: string;
  /** systemctl invocations run (or that would run), each as its argv. */
  systemctl: string[][];
  /** Why systemctl is not run, when it is not. */
  systemctl_skipped?: string;
  dry_run: boolean;
  /** enable only: the unit text. */
  unit_text?: string;
  /** disable only: false when there was nothing installed. */
  was_installed?: boolean;
}

function systemdRunning(paths: PersistPaths): string | undefined {
  if (paths.systemd !== DEFAULT_SYSTEMD_DIR) {
    return `the unit directory is ${paths.systemd} (NVMEOF_SYSTEMD_DIR), not the system's`;
  }
  try {
    Deno.statSync("/run/systemd/system");
    return undefined;
  } catch {
    return "systemd is not running on this host (no /run/systemd/system)";
  }
}

async function systemctl(args: string[]): Promise<void> {
  let out;
  try {
    out = await new Deno.Command("systemctl", { args, stdout: "piped", stderr: "piped" }).output();
  } catch (err) {
    throw new FailureError(`Cannot run 'systemctl ${args.join(" ")}': ${(err as Error).message}`, {
      cause: err,
      hint: "Install systemd's systemctl, or run the printed command yourself.",
    });
  }
  if (out.code !== 0) {
    const msg = new TextDecoder().decode(out.stderr).trim();
    throw new FailureError(`'systemctl ${args.join(" ")}' failed (exit ${out.code}): ${msg}`, {
      hint: `See 'journalctl -u ${args[args.length - 1]}'.`,
    });
  }
}

function writeAtomic(path: string, text: string): void {
  writeDurableSync(path, text, 0o644);
}

function fsError(what: string, path: string, err: unknown): FailureError {
  const perm = err instanceof Deno.errors.PermissionDenied;
  return new FailureError(`Cannot ${what} '${path}': ${(err as Error).message}`, {
    cause: err,
    hint: perm
      ? "Run as root (units live in /etc/systemd/system)."
      : "Check that the directory exists and is writable (NVMEOF_SYSTEMD_DIR overrides it).",
  });
}

/** Installs `unit` with `text` and enables it; `now` also starts (restarts) it. */
export async function installUnit(
  paths: PersistPaths,
  unit: string,
  options: { text: string; now?: boolean; dryRun?: boolean },
): Promise<UnitChange> {
  const unitFile = `${paths.systemd}/${unit}`;
  const wantsDir = `${paths.systemd}/${WANTED_BY}.wants`;
  const wantsLink = `${wantsDir}/${unit}`;
  const skipped = systemdRunning(paths);
  const calls = [["daemon-reload"], ...(options.now ? [["restart", unit]] : [])];
  const change: UnitChange = {
    unit,
    unit_file: unitFile,
    wants_link: wantsLink,
    systemctl: skipped ? [] : calls,
    ...(skipped ? { systemctl_skipped: skipped } : {}),
    dry_run: options.dryRun === true,
    unit_text: options.text,
  };
  if (options.dryRun) return change;
  try {
    writeAtomic(unitFile, options.text);
  } catch (err) {
    throw fsError("write the unit", unitFile, err);
  }
  try {
    Deno.mkdirSync(wantsDir, { recursive: true });
    try {
      Deno.removeSync(wantsLink);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    Deno.symlinkSync(unitFile, wantsLink);
    syncDir(wantsDir);
  } catch (err) {
    throw fsError("enable the unit with the link", wantsLink, err);
  }
  for (const c of change.systemctl) await systemctl(c);
  return change;
}

/** Disables and removes `unit`; `now` stops it first. Removing what is not there is not an error. */
export async function removeUnit(
  paths: PersistPaths,
  unit: string,
  options: { now?: boolean; dryRun?: boolean },
): Promise<UnitChange> {
  const unitFile = `${paths.systemd}/${unit}`;
  const wantsLink = `${paths.systemd}/${WANTED_BY}.wants/${unit}`;
  const skipped = systemdRunning(paths);
  let installed = false;
  for (const p of [unitFile, wantsLink]) {
    try {
      Deno.lstatSync(p);
      installed = true;
    } catch { /* absent */ }
  }
  const calls = [...(options.now ? [["stop", unit]] : []), ["daemon-reload"]];
  const change: UnitChange = {
    unit,
    unit_file: unitFile,
    wants_link: wantsLink,
    systemctl: skipped || !installed ? [] : calls,
    ...(skipped ? { systemctl_skipped: skipped } : {}),
    dry_run: options.dryRun === true,
    was_installed: installed,
  };
  if (options.dryRun || !installed) return change;
  if (options.now && !skipped) await systemctl(["stop", unit]);
  for (const p of [wantsLink, unitFile]) {
    try {
      Deno.removeSync(p);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw fsError("remove", p, err);
    }
  }
  if (!skipped) await systemctl(["daemon-reload"]);
  return change;
}

/** Text output of enable/disable. */
export function unitChangeText(c: UnitChange, verb: "enable" | "disable"): string {
  if (c.dry_run && verb === "enable") {
    return [
      `# would write ${c.unit_file} and link ${c.wants_link}`,
      ...c.systemctl.map((a) => `# would run: systemctl ${a.join(" ")}`),
      c.unit_text ?? "",
    ].join("\n");
  }
  if (verb === "disable" && !c.was_installed) return `${c.unit} is not installed; nothing to do`;
  const lines = c.dry_run
    ? [`would remove ${c.wants_link} and ${c.unit_file}`]
    : verb === "enable"
    ? [`installed ${c.unit_file}`, `enabled: ${c.wants_link} -> ${c.unit_file}`]
    : [`removed ${c.wants_link} and ${c.unit_file}`];
  for (const a of c.systemctl) {
    lines.push(`${c.dry_run ? "would run" : "ran"}: systemctl ${a.join(" ")}`);
  }
  if (c.systemctl_skipped) lines.push(`systemctl not run: ${c.systemctl_skipped}`);
  return lines.join("\n");
}
