/**
 * Lazy, explained loading of the C libraries nvmeof calls through FFI.
 *
 * Libraries are opened on first use, never at import, so `--help`, `target up` and `connect` work
 * on hosts without rdma-core. The order is: an environment override, then absolute paths in the
 * usual library directories (a scoped `--allow-ffi` resolves bare names against the working
 * directory), then the bare soname for the dynamic loader. A failure names every path tried and why.
 *
 * ffi/ is the bottom room: it imports nothing from src/. A library that does not load throws
 * LibraryLoadError, which src/errors.ts reports as an environment error (exit 3).
 */

const LIB_DIRS = [
  "/usr/lib/x86_64-linux-gnu",
  "/lib/x86_64-linux-gnu",
  "/usr/lib64",
  "/lib64",
  "/usr/lib",
];

/** How to find one library. */
export interface LibrarySpec {
  /** A human name for messages ("libibverbs"). */
  name: string;
  /** The soname to look for ("libibverbs.so.1"). */
  soname: string;
  /** An environment variable that names the file to use instead. */
  env: string;
  /** What to install when it is missing ("rdma-core's libibverbs1"). */
  install: string;
}

/** A library could not be opened from any path: says which paths were tried and why each failed. */
export class LibraryLoadError extends Error {
  /** The library's human name ("libibverbs"). */
  readonly library: string;
  /** Each path tried, with the reason it failed ("/usr/lib/libx.so.1: no such file"). */
  readonly tried: string[];
  /** What to install, or which variable to set. */
  readonly hint: string;

  constructor(spec: LibrarySpec, tried: string[]) {
    super(`Cannot load ${spec.name} (${spec.soname}).`);
    this.name = "LibraryLoadError";
    this.library = spec.name;
    this.tried = tried;
    this.hint = `Install ${spec.install}, or set ${spec.env} to the library's path.\nTried:\n  ${
      tried.join("\n  ")
    }`;
  }
}

/** Every path `spec` may be loaded from, in the order they are tried. */
export function candidatePaths(spec: LibrarySpec): string[] {
  let override: string | undefined;
  try {
    override = Deno.env.get(spec.env);
  } catch {
    override = undefined;
  }
  if (override) return [override];
  return [...LIB_DIRS.map((d) => `${d}/${spec.soname}`), spec.soname];
}

/** A library's symbols as Deno binds them: one callable per name of the table. */
export type Symbols<S extends Deno.ForeignLibraryInterface> = Deno.DynamicLibrary<S>["symbols"];

/**
 * Opens the library and returns its symbols, each bound on its first use. Throws LibraryLoadError
 * that lists each path tried with its reason: file missing, or present but unusable. `check` may
 * refuse a library that opened (it throws; the next path is tried).
 *
 * Binding is per symbol because Deno makes a call stub for every symbol it binds: in the lab guest
 * about 5 ms each, 130-160 ms for libc's 31 at every start-up of a command that calls a handful
 * (docs/benchmarks.md, "Start-up of the target commands"). A symbol the library lacks is
 * reported, with the path and the symbol, when it is first called.
 */
export function openLibrary<S extends Deno.ForeignLibraryInterface>(
  spec: LibrarySpec,
  symbols: S,
  check?: (symbols: Symbols<S>) => void,
): Symbols<S> {
  const tried: string[] = [];
  for (const path of candidatePaths(spec)) {
    if (path.startsWith("/")) {
      try {
        Deno.statSync(path);
      } catch {
        tried.push(`${path}: no such file`);
        continue;
      }
    }
    try {
      // Opened once without symbols: fails here when the file is not a library for this machine.
      Deno.dlopen(path, {});
      const bound = bindOnUse(spec, path, tried, symbols);
      check?.(bound);
      return bound;
    } catch (err) {
      if (err instanceof LibraryLoadError) throw err;
      tried.push(`${path}: ${(err as Error).message}`);
    }
  }
  throw new LibraryLoadError(spec, tried);
}

/** The symbols of the library at PATH, each bound by its own Deno.dlopen on first use. */
function bindOnUse<S extends Deno.ForeignLibraryInterface>(
  spec: LibrarySpec,
  path: string,
  tried: string[],
  symbols: S,
): Symbols<S> {
  const bound = {} as Symbols<S>;
  for (const name of Object.keys(symbols)) {
    Object.defineProperty(bound, name, {
      enumerable: true,
      configurable: true,
      get() {
        let fn: unknown;
        try {
          fn = Deno.dlopen(path, { [name]: symbols[name] }).symbols[name];
        } catch (err) {
          throw new LibraryLoadError(spec, [...tried, `${path}: ${(err as Error).message}`]);
        }
        Object.defineProperty(bound, name, { value: fn, enumerable: true });
        return fn;
      },
    });
  }
  return bound;
}

/** Memoizes a loader so each library is opened once, on first use. */
export function lazy<T>(open: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= open());
}
