/**
 * The exporter: `GET /metrics` (text format 0.0.4) and `GET /healthz` over HTTP, with bounded
 * work per request. One collection runs at a time: scrapes that arrive meanwhile await the same
 * one, and its result is reused for a short interval, so a burst of scrapes costs one collection.
 * At every collection it compares each path's state with the last one seen and counts the changes
 * (nvmeof_path_state_changes_total): the kernel keeps no such counter.
 */
import { EnvironmentError } from "../errors.ts";
import { hostPort, type SocketAddress } from "../net/address.ts";
import { DEFAULT_CACHE_MS } from "./defaults.ts";
import { EXPOSITION_CONTENT_TYPE, renderExposition } from "./exposition.ts";
import type { MetricFamily } from "./family.ts";
import { FamilySet } from "./family_set.ts";

/** Requests handled at once; more get 503 at once rather than queueing without end. */
export const MAX_CONCURRENT_REQUESTS = 64;

const HTTP_OK = 200;
const HTTP_NOT_FOUND = 404;
const HTTP_METHOD_NOT_ALLOWED = 405;
const HTTP_UNAVAILABLE = 503;

/** What the exporter is given. */
export interface ExporterOptions {
  listen: SocketAddress;
  /** One collection (collectFamilies with its roots and time limits). */
  collect: () => Promise<MetricFamily[]>;
  /** Reuse a collection for this long (ms). */
  cacheMs?: number;
  /** Called with the address it listens on (the port chosen when 0 was asked). */
  onListen?: (address: SocketAddress) => void;
}

/** What the exporter did, when it has stopped. */
export interface ExporterSummary {
  listen: string;
  collections: number;
  requests: number;
}

/** A collection, rendered. */
interface Scrape {
  at: number;
  text: string;
}

/** The shared collection and the counts the exporter adds to it. */
export class SharedCollection {
  #collect: () => Promise<MetricFamily[]>;
  #cacheMs: number;
  #last?: Scrape;
  #running?: Promise<Scrape>;
  #collections = 0;
  #states = new Map<string, string>();
  #changes = new Map<string, number>();

  constructor(collect: () => Promise<MetricFamily[]>, cacheMs: number) {
    this.#collect = collect;
    this.#cacheMs = cacheMs;
  }

  /** Collections run so far. */
  get collections(): number {
    return this.#collections;
  }

  /** The exposition: the last collection if recent, the running one, or a new one. */
  scrape(): Promise<string> {
    const last = this.#last;
    if (last && performance.now() - last.at < this.#cacheMs) return Promise.resolve(last.text);
    this.#running ??= this.#run().finally(() => this.#running = undefined);
    return this.#running.then((s) => s.text);
  }

  async #run(): Promise<Scrape> {
    const families = await this.#collect();
    this.#collections++;
    this.#observe(families);
    const text = renderExposition([...families, ...this.#families()]);
    this.#last = { at: performance.now(), text };
    return this.#last;
  }

  /** Counts each path whose state differs from the one seen at the collection before. */
  #observe(families: MetricFamily[]): void {
    const state = families.find((f) => f.name === "nvmeof_path_state");
    for (const s of state?.samples ?? []) {
      if (s.value !== 1) continue;
      const controller = s.labels.controller;
      const before = this.#states.get(controller);
      if (before !== undefined && before !== s.labels.state) {
        this.#changes.set(controller, (this.#changes.get(controller) ?? 0) + 1);
      }
      this.#changes.set(controller, this.#changes.get(controller) ?? 0);
      this.#states.set(controller, s.labels.state);
    }
  }

  #families(): MetricFamily[] {
    const set = new FamilySet();
    const changes = set.family(
      "nvmeof_path_state_changes_total",
      "counter",
      "Changes of the path's controller state, counted since the exporter started (at each " +
        "collection; the kernel keeps no such counter).",
    );
    for (const [controller, n] of [...this.#changes].sort()) changes({ controller }, n);
    set.family(
      "nvmeof_scrape_collections_total",
      "counter",
      "Collections the exporter ran since it started (scrapes share and reuse them).",
    )({}, this.#collections);
    return set.families();
  }
}

/** The error for a listen that failed: in use, not this host's address, or not permitted. */
function listenError(listen: SocketAddress, err: unknown): EnvironmentError {
  const where = hostPort(listen.address, listen.port);
  const hint = err instanceof Deno.errors.AddrInUse
    ? `Another process listens there (ss -ltnp 'sport = :${listen.port}'): stop it or give ` +
      "--listen another port."
    : err instanceof Deno.errors.AddrNotAvailable
    ? `'${listen.address}' is not an address of this host (ip -br addr): give one of its own.`
    : err instanceof Deno.errors.PermissionDenied
    ? "Ports below 1024 need root or CAP_NET_BIND_SERVICE: give --listen a higher port."
    : "Check the address given to --listen.";
  return new EnvironmentError(`Cannot listen on ${where}: ${(err as Error).message}.`, {
    hint,
    cause: err,
  });
}

/**
 * Serves until `signal` aborts; resolves when the server has shut down. Throws EnvironmentError
 * (exit 3) when it cannot listen.
 */
export async function serveMetrics(
  o: ExporterOptions,
  signal: AbortSignal,
): Promise<ExporterSummary> {
  const shared = new SharedCollection(o.collect, o.cacheMs ?? DEFAULT_CACHE_MS);
  let active = 0;
  let requests = 0;
  let bound = o.listen;
  const handler = async (req: Request): Promise<Response> => {
    requests++;
    const path = new URL(req.url).pathname;
    if (path !== "/metrics" && path !== "/healthz") {
      return new Response("Not found: this exporter serves /metrics and /healthz.\n", {
        status: HTTP_NOT_FOUND,
      });
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response("Method not allowed: use GET.\n", {
        status: HTTP_METHOD_NOT_ALLOWED,
        headers: { allow: "GET, HEAD" },
      });
    }
    if (path === "/healthz") return new Response("ok\n", { status: HTTP_OK });
    if (active >= MAX_CONCURRENT_REQUESTS) {
      return new Response("Too many scrapes at once; try again.\n", {
        status: HTTP_UNAVAILABLE,
        headers: { "retry-after": "1" },
      });
    }
    active++;
    try {
      const text = await shared.scrape();
      return new Response(req.method === "HEAD" ? null : text, {
        status: HTTP_OK,
        headers: { "content-type": EXPOSITION_CONTENT_TYPE },
      });
    } finally {
      active--;
    }
  };
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: o.listen.address,
      port: o.listen.port,
      signal,
      onListen: (addr) => {
        bound = { address: addr.hostname, port: addr.port };
        o.onListen?.(bound);
      },
      onError: () => new Response("Internal error.\n", { status: 500 }),
    }, handler);
  } catch (err) {
    throw listenError(o.listen, err);
  }
  await server.finished;
  return {
    listen: hostPort(bound.address, bound.port),
    collections: shared.collections,
    requests,
  };
}
