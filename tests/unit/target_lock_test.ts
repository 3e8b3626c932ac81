/**
 * The lock that keeps two `nvmeof target` runs on one tree apart: one lock per tree however it is
 * spelled, in a directory only its owner can write, and a bounded wait that names the holder.
 */
import assert from "node:assert/strict";
import { EnvironmentError } from "../../src/errors.ts";
import { canonicalTree, lockTarget } from "../../src/target/lock.ts";
import { tempDir } from "../helpers.ts";

async function withLockDir(fn: (dir: string, tree: string) => void | Promise<void>) {
  await using t = await tempDir();
  const dir = `${t.path}/locks`;
  const tree = `${t.path}/config`;
  Deno.mkdirSync(`${tree}/nvmet`, { recursive: true });
  const before = Deno.env.get("NVMEOF_LOCK_DIR");
  Deno.env.set("NVMEOF_LOCK_DIR", dir);
  try {
    await fn(dir, tree);
  } finally {
    if (before === undefined) Deno.env.delete("NVMEOF_LOCK_DIR");
    else Deno.env.set("NVMEOF_LOCK_DIR", before);
  }
}

Deno.test("one tree named four ways takes one lock", async () => {
  await withLockDir((_dir, tree) => {
    using held = lockTarget(tree);
    for (const spelling of [`${tree}/`, `${tree}//`, `${tree}/./`, `${tree}/nvmet/..`]) {
      assert.equal(canonicalTree(spelling), canonicalTree(tree), spelling);
      assert.throws(
        () => lockTarget(spelling, { timeoutMs: 0 }),
        EnvironmentError,
        `${spelling} took a second lock`,
      );
    }
    assert.ok(held.path);
  });
});

Deno.test("a held lock is waited for at most the timeout, and the message names the holder", async () => {
  await withLockDir((_dir, tree) => {
    using _held = lockTarget(tree);
    const notes: string[] = [];
    const t0 = Date.now();
    assert.throws(
      () => lockTarget(tree, { timeoutMs: 300, note: (l) => notes.push(l) }),
      (e: Error) => {
        assert.ok(e instanceof EnvironmentError);
        assert.match(e.message, new RegExp(`\\(pid ${Deno.pid}: nvmeof`));
        assert.match(e.message, /still holds the lock .* after 0\.3 s; nothing was changed/);
        assert.match(e.hint ?? "", new RegExp(`kill ${Deno.pid}`));
        return true;
      },
    );
    const waited = Date.now() - t0;
    assert.ok(waited >= 300 && waited < 3000, `waited ${waited} ms`);
    assert.match(notes[0], /Waiting up to 0\.3 s for another 'nvmeof target' run/);
  });
});

Deno.test("the lock is free again once its holder lets go", async () => {
  await withLockDir((_dir, tree) => {
    lockTarget(tree)[Symbol.dispose]();
    using again = lockTarget(tree, { timeoutMs: 0 });
    assert.match(Deno.readTextFileSync(again.path), new RegExp(`^pid ${Deno.pid}: nvmeof`));
  });
});

Deno.test("the lock directory is made 0700 and refused when others may write it or it is a symlink", async () => {
  await withLockDir((dir, tree) => {
    lockTarget(tree)[Symbol.dispose]();
    assert.equal((Deno.statSync(dir).mode ?? 0) & 0o777, 0o700);
    Deno.chmodSync(dir, 0o1777);
    assert.throws(
      () => lockTarget(tree),
      /Refusing the lock directory .*group or others may write/,
    );
    Deno.chmodSync(dir, 0o700);
    Deno.renameSync(dir, `${dir}.real`);
    Deno.symlinkSync(`${dir}.real`, dir);
    assert.throws(() => lockTarget(tree), /Refusing the lock directory .*not a directory/);
  });
});

Deno.test("a lock directory owned by another user is refused", {
  ignore: Deno.uid() !== 0, // only root can give a directory away
}, async () => {
  await withLockDir((dir, tree) => {
    Deno.mkdirSync(dir, { mode: 0o700 });
    Deno.chownSync(dir, 65534, 65534);
    assert.throws(() => lockTarget(tree), /Refusing the lock directory .*belongs to uid 65534/);
  });
});
