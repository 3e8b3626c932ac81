/**
 * Small helpers shared by the owned RDMA objects: addresses of JS memory, views over C memory,
 * and turning a failed C call into a NativeError with its errno.
 */
import { errno } from "../../ffi/libc.ts";
import { errnoName, NativeError } from "../errors.ts";

/** The address of a JS buffer, as a bigint (the buffer must stay referenced while C uses it). */
export function addressOf(buf: Uint8Array | ArrayBufferView): bigint {
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buf as Uint8Array)));
}

/** A little-endian DataView over `size` bytes of C memory at `p`. */
export function cView(p: Deno.PointerObject, size: number, offset = 0): DataView {
  return new DataView(Deno.UnsafePointerView.getArrayBuffer(p, size, offset));
}

/** A pointer read from C memory (NULL → null). */
export function readPointer(p: Deno.PointerObject, offset: number): Deno.PointerValue {
  return new Deno.UnsafePointerView(p).getPointer(offset);
}

/**
 * Checks a librdmacm result (0, or -1 with errno): throws NativeError naming the function. Call
 * it in the same statement as the C call so errno is read before anything else runs.
 */
export function checkCm(fn: string, rc: number, what?: string): void {
  if (rc === 0) return;
  const e = errno();
  throw new NativeError(fn, e, {
    message: `${what ?? `${fn}() failed`}: ${errnoName(e)} (${e}).`,
  });
}

/** Checks a libibverbs result (0, or a positive errno value). */
export function checkVerbs(fn: string, rc: number, what?: string): void {
  if (rc === 0) return;
  const e = Math.abs(rc);
  throw new NativeError(fn, e, { message: `${what ?? `${fn}() failed`}: ${errnoName(e)} (${e}).` });
}

/** Checks a constructor's result (NULL + errno). Read errno before allocating anything. */
export function checkPointer(
  fn: string,
  p: Deno.PointerValue,
  what?: string,
): Deno.PointerObject {
  if (p !== null) return p;
  const e = errno();
  throw new NativeError(fn, e, { message: `${what ?? `${fn}() failed`}: ${errnoName(e)} (${e}).` });
}
