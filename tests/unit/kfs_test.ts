import assert from "node:assert/strict";
import { ATTRIBUTE_PAGE, readAttribute, readText } from "../../src/host/kfs.ts";
import { tempDir } from "../helpers.ts";

Deno.test("readText: a file past its first buffer is read whole; at most max bytes; no bytes of an earlier file", async () => {
  await using d = await tempDir();
  const big = "0123456789abcdef".repeat(1024); // 16 KiB: past the first 4 KiB buffer
  Deno.writeTextFileSync(`${d.path}/big`, big);
  Deno.writeTextFileSync(`${d.path}/small`, "live\n");
  Deno.writeTextFileSync(`${d.path}/empty`, "");
  assert.equal(readText(`${d.path}/big`), big);
  assert.equal(readText(`${d.path}/small`), "live\n");
  assert.equal(readText(`${d.path}/empty`), "");
  assert.equal(readText(`${d.path}/big`, 100), big.slice(0, 100));
  assert.equal(readText(`${d.path}/big`, 5000), big.slice(0, 5000));
  assert.equal(readText(`${d.path}/big`), big);
  assert.throws(() => readText(`${d.path}/none`), /open\('.*\/none'\) failed: ENOENT/);
});

Deno.test("readAttribute: an attribute whole in one read, at most a page; no bytes of an earlier file", async () => {
  await using d = await tempDir();
  const page = "x".repeat(ATTRIBUTE_PAGE);
  Deno.writeTextFileSync(`${d.path}/page`, page);
  Deno.writeTextFileSync(`${d.path}/big`, `${page}tail`);
  Deno.writeTextFileSync(`${d.path}/small`, "1\n");
  Deno.writeTextFileSync(`${d.path}/empty`, "");
  assert.equal(readAttribute(`${d.path}/page`), page);
  assert.equal(readAttribute(`${d.path}/small`), "1\n");
  assert.equal(readAttribute(`${d.path}/empty`), "");
  assert.equal(readAttribute(`${d.path}/big`), page);
  assert.equal(readAttribute(`${d.path}/small`), "1\n");
  assert.throws(() => readAttribute(`${d.path}/none`), /open\('.*\/none'\) failed: ENOENT/);
});
