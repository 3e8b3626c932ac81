import assert from "node:assert/strict";
import { hexOf, sha256 } from "../../src/sha256.ts";
import { rng } from "../helpers.ts";

async function platform(data: Uint8Array<ArrayBuffer>): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
}

Deno.test("sha256 gives FIPS 180-4's digests of its examples", () => {
  assert.equal(
    hexOf(sha256("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    hexOf(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  assert.equal(
    hexOf(sha256("")),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
});

Deno.test("sha256 agrees with WebCrypto at every length around a block's end", async () => {
  const r = rng(36);
  // Lengths 0–200 cross the padding's edges (55, 56, 63, 64 and their next blocks); then a few
  // longer ones.
  for (const n of [...Array(201).keys(), 1000, 4096, 65537]) {
    const data = Uint8Array.from({ length: n }, () => r.int(256));
    assert.equal(hexOf(sha256(data)), await platform(data), `length ${n}`);
  }
  const text = "nqn.2014-08.org.nvmexpress:uuid:é€😀";
  assert.equal(hexOf(sha256(text)), await platform(new TextEncoder().encode(text)));
});
