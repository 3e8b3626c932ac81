/**
 * Lazy, explained loading of the C libraries nvmeof calls through FFI.
 *
 * Libraries are opened on first use, never at import, so `--help`, `target up` and `connect` work
 * on hosts without rdma-core. The order is: an environment override, then absolute paths in the
 * usual library directories (a scoped `--allow-ffi` resolves bare names against the working
 * directory), then the bare soname for the dynamic loader. A failure names every path tried and why.
 */
import { EnvironmentError } from "../src/errors.ts";

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

/**
 * Opens the library with the given symbols. Throws EnvironmentError (exit 3) that lists each
 * path tried with its reason: file missing, or present but unusable (a missing symbol, say).
 */
export function openLibrary<S extends Deno.ForeignLibraryInterface>(
  spec: LibrarySpec,
  symbols: S,
): Deno.DynamicLibrary<S> {
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
      return Deno.dlopen(path, symbols);
    } catch (err) {
      tried.push(`${path}: ${(err as Error).message}`);
    }
  }
  throw new EnvironmentError(`Cannot load ${spec.name} (${spec.soname}).`, {
    hint: `Install ${spec.install}, or set ${spec.env} to the library's path.\nTried:\n  ${
      tried.join("\n  ")
    }`,
  });
}

/** Memoizes a loader so each library is opened once, on first use. */
export function lazy<T>(open: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= open());
}
