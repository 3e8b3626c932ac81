import assert from "node:assert/strict";
import { KernelConfigfs } from "../../src/configfs/io.ts";
import { fileKind } from "../../src/configfs/path_ops.ts";
import { tempDir } from "../helpers.ts";

Deno.test("the kernel configfs I/O makes, links, lists, reads and removes like the kernel tree needs", async () => {
  await using t = await tempDir();
  const io = new KernelConfigfs(t.path);
  io.mkdir("subsystems");
  io.mkdir("subsystems/s1");
  Deno.writeTextFileSync(`${t.path}/subsystems/s1/attr_serial`, "old\n");
  io.write("subsystems/s1/attr_serial", "abc");
  assert.equal(io.read("subsystems/s1/attr_serial").slice(0, 3), "abc");
  io.mkdir("ports");
  io.mkdir("ports/1");
  io.link("ports/1/s1", "subsystems/s1");
  assert.equal(fileKind(`${t.path}/ports/1/s1`), "link");
  assert.equal(fileKind(`${t.path}/ports/1/s1`, { follow: true }), "dir");
  assert.equal(io.readLink("ports/1/s1"), "subsystems/s1");
  assert.deepEqual(io.list("ports/1"), ["s1"]);
  assert.throws(() => io.mkdir("ports/1"), /mkdir\('.*ports\/1'\) failed: EEXIST \(17\)/);
  assert.throws(() => io.rmdir("ports"), /ENOTEMPTY \(39\)/);
  io.unlink("ports/1/s1");
  io.rmdir("ports/1");
  assert.equal(io.exists("ports/1"), false);
});

Deno.test("fileKind tells regular files, directories and character devices apart", () => {
  const f = Deno.makeTempFileSync();
  assert.equal(fileKind(f), "file");
  Deno.removeSync(f);
  assert.equal(fileKind("/tmp", { follow: true }), "dir");
  assert.equal(fileKind("/dev/null", { follow: true }), "other");
  assert.equal(fileKind("/nonexistent/nvmeof"), undefined);
});

Deno.test("links read back as the kernel writes them resolve to nvmet-relative paths", async () => {
  await using t = await tempDir();
  const { resolveLink } = await import("../../src/configfs/io.ts");
  const root = `${t.path}/nvmet`;
  assert.equal(
    resolveLink("subsystems/s1/allowed_hosts/h1", "../../../../nvmet/hosts/h1", root),
    "hosts/h1",
  );
  assert.equal(
    resolveLink("ports/1/subsystems/s1", "../../../subsystems/s1", root),
    "subsystems/s1",
  );
  assert.equal(
    resolveLink("ports/1/subsystems/s1", `${root}/subsystems/s1`, root),
    "subsystems/s1",
  );
});
