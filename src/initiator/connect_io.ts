/**
 * How a connect run (one path, several, -J, --saved, connect-all) talks while it works, and what
 * it returns to the command that called it.
 */

/** How a connect run talks while it works. */
export interface ConnectIo {
  /** A diagnostic line, to stderr. */
  note(line: string): void;
  /** Progress while a controller comes up (undefined: quiet). */
  progress?: (line: string) => void;
  /** Note each option string before it is written. */
  verbose: boolean;
}

/** What a connect run returns: the data for `-o json`, its text, and whether anything failed. */
export interface ConnectReport<T = unknown> {
  data: T;
  text(): string;
  /** True when a path, a controller or an entry failed (never exit 0 on partial failure). */
  failed?: boolean;
}
