/**
 * Fast calls through C function pointers. The data-path verbs are header inlines that call
 * through ibv_context.ops; `Deno.UnsafeFnPointer.call` costs ~1.2–1.7 µs a call, while calling
 * the same pointer through libffi's exported `ffi_call` (bound with Deno.dlopen, so it gets
 * Deno's fast call path) costs ~0.07–0.1 µs. A `NativeCall` prepares one call site once (cif,
 * argument slots, return slot); each `invoke()` then reads the argument slots as they are.
 *
 * libffi.so.8 is looked for like the other libraries (env NVMEOF_LIBFFI); when it is absent, or
 * NVMEOF_NO_LIBFFI=1, the call site falls back to `Deno.UnsafeFnPointer` with the same interface.
 */
import { lazy, openLibrary, type Symbols } from "./loader.ts";

export const LIBFFI_SYMBOLS = {
  /**
   * ffi_status ffi_prep_cif(ffi_cif *cif, ffi_abi abi, unsigned int nargs, ffi_type *rtype,
   *                         ffi_type **atypes);
   */
  ffi_prep_cif: { parameters: ["buffer", "i32", "u32", "pointer", "buffer"], result: "i32" },
  /** void ffi_call(ffi_cif *cif, void (*fn)(void), void *rvalue, void **avalue); */
  ffi_call: { parameters: ["pointer", "pointer", "pointer", "pointer"], result: "void" },
  /** ffi_type ffi_type_pointer; (its address) */
  ffi_type_pointer: { type: "pointer" },
  /** ffi_type ffi_type_sint32; (its address) */
  ffi_type_sint32: { type: "pointer" },
} as const satisfies Deno.ForeignLibraryInterface;

/** FFI_DEFAULT_ABI on x86_64 Linux (FFI_UNIX64). */
const FFI_DEFAULT_ABI = 2;
/** sizeof(ffi_cif) on x86_64. */
const FFI_CIF_SIZE = 32;

type Libffi = Symbols<typeof LIBFFI_SYMBOLS>;

const loadLibffi: () => Libffi | null = lazy(() => {
  if (Deno.env.get("NVMEOF_NO_LIBFFI") === "1") return null;
  try {
    return openLibrary({
      name: "libffi",
      soname: "libffi.so.8",
      env: "NVMEOF_LIBFFI",
      install: "libffi8",
    }, LIBFFI_SYMBOLS);
  } catch {
    return null;
  }
});

/** Whether call sites use libffi's ffi_call (true) or Deno.UnsafeFnPointer (false). */
export function usingLibffi(): boolean {
  return loadLibffi() !== null;
}

/** The kind of each argument: a pointer-sized value or a C int. */
export type ArgKind = "pointer" | "i32";

/**
 * One prepared call site of a C function pointer returning int. Set arguments with `setPointer`
 * / `setI32` (they persist between calls), then `invoke()`.
 */
export class NativeCall {
  readonly #kinds: readonly ArgKind[];
  /** One 8-byte slot per argument (the memory libffi reads). */
  readonly #slots: BigUint64Array;
  readonly #slotsI32: Int32Array;
  readonly #invoke: () => number;
  /** Memory libffi keeps pointers into: referenced here for the call site's lifetime. */
  readonly #keep: unknown[] = [];

  constructor(fn: Deno.PointerObject, kinds: readonly ArgKind[]) {
    this.#kinds = kinds;
    const slotBuf = new ArrayBuffer(8 * Math.max(1, kinds.length));
    this.#slots = new BigUint64Array(slotBuf);
    this.#slotsI32 = new Int32Array(slotBuf);
    const ffi = loadLibffi();
    this.#invoke = ffi ? this.#viaLibffi(ffi, fn, slotBuf) : this.#viaFnPointer(fn);
  }

  #viaLibffi(ffi: Libffi, fn: Deno.PointerObject, slotBuf: ArrayBuffer): () => number {
    const n = this.#kinds.length;
    const cif = new Uint8Array(FFI_CIF_SIZE);
    const atypes = new BigUint64Array(Math.max(1, n));
    const tPtr = Deno.UnsafePointer.value(ffi.ffi_type_pointer);
    const tI32 = Deno.UnsafePointer.value(ffi.ffi_type_sint32);
    this.#kinds.forEach((k, i) => atypes[i] = BigInt(k === "pointer" ? tPtr : tI32));
    const status = ffi.ffi_prep_cif(cif, FFI_DEFAULT_ABI, n, ffi.ffi_type_sint32, atypes);
    if (status !== 0) throw new Error(`ffi_prep_cif() failed with status ${status}`);
    const slots = new Uint8Array(slotBuf);
    const avalue = new BigUint64Array(Math.max(1, n));
    const slotsAddr = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(slots)));
    for (let i = 0; i < n; i++) avalue[i] = slotsAddr + BigInt(8 * i);
    const ret = new BigInt64Array(1);
    const retI32 = new Int32Array(ret.buffer);
    this.#keep.push(cif, atypes, slots, avalue, ret);
    const cifP = Deno.UnsafePointer.of(cif);
    const retP = Deno.UnsafePointer.of(ret);
    const avalueP = Deno.UnsafePointer.of(avalue);
    const call = ffi.ffi_call;
    return () => {
      call(cifP, fn, retP, avalueP);
      return retI32[0];
    };
  }

  #viaFnPointer(fn: Deno.PointerObject): () => number {
    const params = this.#kinds.map((k) => (k === "pointer" ? "pointer" : "i32"));
    const def = { parameters: params, result: "i32" } as const;
    const f = new Deno.UnsafeFnPointer(fn as Deno.PointerObject<typeof def>, def);
    const slots = this.#slots;
    const i32 = this.#slotsI32;
    const kinds = this.#kinds;
    return () => {
      const args = kinds.map((k, i) =>
        k === "pointer" ? Deno.UnsafePointer.create(slots[i]) : i32[2 * i]
      );
      return (f.call as (...a: unknown[]) => number)(...args);
    };
  }

  /** Sets argument `i` to a pointer (its address as a bigint, or a pointer object). */
  setPointer(i: number, p: bigint | Deno.PointerValue): void {
    this.#slots[i] = typeof p === "bigint" ? p : BigInt(Deno.UnsafePointer.value(p));
  }

  /** Sets argument `i` to a C int. */
  setI32(i: number, v: number): void {
    this.#slots[i] = 0n;
    this.#slotsI32[2 * i] = v;
  }

  /** Calls the function with the current argument slots; returns its int result. */
  invoke(): number {
    return this.#invoke();
  }
}
