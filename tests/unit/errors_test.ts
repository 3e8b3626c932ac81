import assert from "node:assert/strict";
import {
  EnvironmentError,
  errnoName,
  errnoOf,
  errorRecord,
  EXIT,
  exitCodeOf,
  FailureError,
  formatError,
  NativeError,
  UsageError,
} from "../../src/errors.ts";
import { LibraryLoadError, openLibrary } from "../../ffi/loader.ts";
import * as errnoModule from "../../src/errno.ts";

Deno.test("each error class carries its exit code", () => {
  assert.equal(new FailureError("x").exitCode, EXIT.failure);
  assert.equal(new UsageError("x").exitCode, EXIT.usage);
  assert.equal(new EnvironmentError("x").exitCode, EXIT.environment);
  assert.equal(new NativeError("rdma_connect", 110).exitCode, EXIT.failure);
});

Deno.test("NativeError names the C function, errno name and number", () => {
  const e = new NativeError("rdma_resolve_addr", 19);
  assert.equal(e.message, "rdma_resolve_addr() failed: ENODEV (19)");
  assert.equal(e.function, "rdma_resolve_addr");
  assert.equal(e.errno, 19);
});

Deno.test("errnoName knows the fabrics errnos and falls back to the number", () => {
  assert.equal(errnoName(114), "EALREADY");
  assert.equal(errnoName(-104), "ECONNRESET");
  assert.equal(errnoName(4242), "errno 4242");
});

Deno.test("formatError prints the hint, and the cause chain only when verbose", () => {
  const inner = new Error("write /dev/nvme-fabrics: EIO");
  const e = new FailureError("Cannot connect to 10.0.0.2:4420.", {
    cause: inner,
    hint: "Run 'nvmeof doctor'.",
  });
  assert.equal(
    formatError(e, false),
    "error: Cannot connect to 10.0.0.2:4420.\n  Run 'nvmeof doctor'.",
  );
  assert.match(formatError(e, true), /caused by: write \/dev\/nvme-fabrics: EIO/);
});

Deno.test("errnoOf reads Deno's error codes", async () => {
  const err = await Deno.readTextFile("/nonexistent/nvmeof").catch((e) => e);
  assert.equal(errnoOf(err), 2);
  assert.equal(errnoOf("not an error"), undefined);
});

Deno.test("a library that does not load is an environment error (exit 3) naming each path tried", () => {
  const spec = {
    name: "libnothing",
    soname: "libnothing.so.9",
    env: "NVMEOF_TEST_NOLIB",
    install: "nothing",
  };
  let caught: unknown;
  try {
    openLibrary(spec, { nothing: { parameters: [], result: "void" } });
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof LibraryLoadError);
  assert.ok(caught.tried.some((t) => t.startsWith("/usr/lib/libnothing.so.9: no such file")));
  assert.equal(exitCodeOf(caught), 3);
  const text = formatError(caught, false);
  assert.match(text, /^error: Cannot load libnothing \(libnothing\.so\.9\)\./);
  assert.match(text, /Install nothing, or set NVMEOF_TEST_NOLIB/);
  assert.equal(errorRecord(caught).exit_code, 3);
});

Deno.test("errno names and numbers are written once: every named errno has its name", () => {
  for (const [name, value] of Object.entries(errnoModule)) {
    if (name === "ERRNO_NAMES") continue;
    assert.equal(errnoName(value as number), name);
  }
  assert.equal(errnoName(errnoModule.EALREADY), "EALREADY");
  assert.equal(errnoName(524), "ENOTSUPP");
});
