import assert from "node:assert/strict";
import { dirOf, syncDir, writeDurableSync } from "../../src/persist/durable.ts";
import { tempDir } from "../helpers.ts";

Deno.test("writeDurableSync replaces a file whole, with the mode asked for, and leaves no temporary file", async () => {
  await using d = await tempDir();
  const p = `${d.path}/unit.service`;
  writeDurableSync(p, "old\n", 0o644);
  writeDurableSync(p, "[Unit]\nnew\n", 0o600);
  assert.equal(Deno.readTextFileSync(p), "[Unit]\nnew\n");
  assert.equal(Deno.statSync(p).mode! & 0o777, 0o600);
  assert.deepEqual([...Deno.readDirSync(d.path)].map((e) => e.name), ["unit.service"]);
});

Deno.test("writeDurableSync into a missing directory fails and leaves nothing behind", async () => {
  await using d = await tempDir();
  assert.throws(() => writeDurableSync(`${d.path}/no/such/file`, "x", 0o644), Deno.errors.NotFound);
  assert.deepEqual([...Deno.readDirSync(d.path)], []);
});

Deno.test("dirOf and syncDir: the directory of a path, flushed", async () => {
  await using d = await tempDir();
  assert.equal(dirOf("/etc/nvmeof/connections.yaml"), "/etc/nvmeof");
  assert.equal(dirOf("/hostnqn"), "/");
  syncDir(d.path);
});
