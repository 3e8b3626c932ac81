import assert from "node:assert/strict";
import {
  EnvironmentError,
  errnoName,
  errnoOf,
  EXIT,
  FailureError,
  formatError,
  NativeError,
  UsageError,
} from "../../src/errors.ts";

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
