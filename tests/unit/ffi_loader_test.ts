/**
 * The loader binds a library's symbols one by one on first use (Deno makes a call stub for each
 * symbol it binds, which the lab guest pays for at every start-up), and still names the path and
 * the symbol when one is missing.
 */
import assert from "node:assert/strict";
import { LibraryLoadError, openLibrary } from "../../ffi/loader.ts";

const LIBC = { name: "libc", soname: "libc.so.6", env: "NVMEOF_TEST_LIBC", install: "glibc" };
const TABLE = {
  getpid: { parameters: [], result: "i32" },
  getppid: { parameters: [], result: "i32" },
  nvmeof_no_such_symbol: { parameters: [], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Deno.dlopen counted until disposed: the names of the symbols each call bound. */
function countingDlopen(): { calls: string[][] } & Disposable {
  const real = Deno.dlopen;
  const calls: string[][] = [];
  // deno-lint-ignore no-explicit-any
  (Deno as any).dlopen = (path: string, symbols: Deno.ForeignLibraryInterface) => {
    calls.push(Object.keys(symbols));
    return real(path, symbols);
  };
  // deno-lint-ignore no-explicit-any
  return { calls, [Symbol.dispose]: () => (Deno as any).dlopen = real };
}

Deno.test("a library's symbols are bound on first use, each once", () => {
  using spy = countingDlopen();
  const libc = openLibrary(LIBC, TABLE);
  assert.deepEqual(spy.calls, [[]], "opening binds nothing");
  assert.equal(libc.getpid(), Deno.pid);
  assert.equal(libc.getpid(), Deno.pid);
  assert.equal(libc.getppid(), Deno.ppid);
  assert.deepEqual(spy.calls, [[], ["getpid"], ["getppid"]]);
  assert.deepEqual(Object.keys(libc), Object.keys(TABLE));
});

Deno.test("a symbol the library lacks names the path and the symbol when first called", () => {
  const libc = openLibrary(LIBC, TABLE);
  let caught: unknown;
  try {
    libc.nvmeof_no_such_symbol();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof LibraryLoadError, String(caught));
  assert.match(caught.tried.at(-1)!, /libc\.so\.6: .*nvmeof_no_such_symbol/);
  assert.equal(libc.getpid(), Deno.pid, "the other symbols still work");
});

Deno.test("a library that check refuses is passed over for the next path", () => {
  const refused: string[] = [];
  assert.throws(
    () =>
      openLibrary(LIBC, TABLE, () => {
        refused.push("x");
        throw new Error("refused by check");
      }),
    (e: unknown) =>
      e instanceof LibraryLoadError && e.tried.filter((t) => /refused by check/.test(t)).length ===
        refused.length &&
      refused.length >= 1,
  );
});
