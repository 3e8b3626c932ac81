import assert from "node:assert/strict";
import { KernelConfigfs } from "../../src/configfs/io.ts";
import { fileKind } from "../../src/configfs/libc_fs.ts";
import { STAT } from "../../ffi/libc.ts";
import { ENOENT } from "../../src/errno.ts";
import { NativeError } from "../../src/errors.ts";
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

Deno.test("the configfs I/O's refusals name the C call and errno, whichever API made the call", async () => {
  await using t = await tempDir();
  const io = new KernelConfigfs(t.path);
  io.mkdir("s1");
  // configfs attributes are never created: a write to a missing one fails and makes nothing.
  const missing = (() => {
    try {
      io.write("s1/attr_none", "1");
    } catch (err) {
      return err;
    }
  })();
  assert.ok(missing instanceof NativeError);
  assert.equal(missing.errno, ENOENT);
  assert.match(missing.message, /^write\('.*\/s1\/attr_none'\) failed: ENOENT \(2\)\.$/);
  assert.equal(fileKind(`${t.path}/s1/attr_none`), undefined);
  assert.throws(() => io.write("s1", "1"), /write\('.*\/s1'\) failed: EISDIR \(21\)/);
  assert.throws(() => io.mkdir("none/s2"), /mkdir\('.*\/none\/s2'\) failed: ENOENT \(2\)/);
  io.link("l1", "s1");
  assert.throws(() => io.link("l1", "s1"), /symlink\('.*\/l1'\) failed: EEXIST \(17\)/);
  // A write replaces the attribute's value (O_TRUNC, as `echo 1 >attr` opens it).
  Deno.writeTextFileSync(`${t.path}/s1/attr_model`, "longer old value\n");
  io.write("s1/attr_model", "new");
  assert.equal(io.read("s1/attr_model"), "new");
});

Deno.test("fileKind tells regular files, directories and character devices apart", () => {
  const f = Deno.makeTempFileSync();
  assert.equal(fileKind(f), "file");
  Deno.removeSync(f);
  assert.equal(fileKind("/tmp", { follow: true }), "dir");
  assert.equal(fileKind("/dev/null", { follow: true }), "other");
  assert.equal(fileKind("/nonexistent/nvmeof"), undefined);
});

Deno.test("struct stat offsets match the C headers (gcc probe)", async () => {
  const gcc = await new Deno.Command("sh", { args: ["-c", "command -v gcc"], stdout: "null" })
    .output();
  if (!gcc.success) {
    console.log("skipped: gcc is not installed, so the C layout cannot be probed here");
    return;
  }
  await using t = await tempDir();
  Deno.writeTextFileSync(
    `${t.path}/p.c`,
    `#include <stdio.h>\n#include <stddef.h>\n#include <sys/stat.h>\nint main(void){printf("%zu %zu %zu\\n", sizeof(struct stat), offsetof(struct stat, st_mode), offsetof(struct stat, st_size));return 0;}\n`,
  );
  const cc = await new Deno.Command("gcc", { args: ["-o", `${t.path}/p`, `${t.path}/p.c`] })
    .output();
  assert.ok(cc.success, new TextDecoder().decode(cc.stderr));
  const out = await new Deno.Command(`${t.path}/p`, { stdout: "piped" }).output();
  assert.equal(
    new TextDecoder().decode(out.stdout).trim(),
    `${STAT.size} ${STAT.st_mode} ${STAT.st_size}`,
  );
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
