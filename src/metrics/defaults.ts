/**
 * The exporter's and the collection's defaults, apart from the code that uses them so that the
 * help of `nvmeof exporter` shows them without loading it.
 */

/** The exporter's default port; docs/metrics.md says why this one. */
export const DEFAULT_EXPORTER_PORT = 9723;
/** It listens on loopback unless told otherwise. */
export const DEFAULT_EXPORTER_ADDRESS = "127.0.0.1";
/** The default --listen. */
export const DEFAULT_LISTEN = `${DEFAULT_EXPORTER_ADDRESS}:${DEFAULT_EXPORTER_PORT}`;
/** How long a collection is reused for the scrapes that follow it (ms). */
export const DEFAULT_CACHE_MS = 2000;
/** Each collector's own time limit unless told (a scrape should answer well within 10 s). */
export const DEFAULT_COLLECTOR_TIMEOUT_MS = 5000;
