/**
 * `nvmeof` against what a hostile or careless environment does: a reader that closes the pipe
 * early, a truncated spec with --prune, a lock taken through another spelling of the tree, a lock
 * held too long. Spawned as a user runs it, against a stand-in configfs in a temporary directory.
 */
import assert from "node:assert/strict";
import { bash, ROOT, tempDir } from "../helpers.ts";

/** A stand-in configfs under `dir` with what `modprobe nvmet` makes. */
function nvmetRoot(dir: string): string {
  const configfs = `${dir}/config`;
  for (const d of ["hosts", "subsystems", "ports"]) {
    Deno.mkdirSync(`${configfs}/nvmet/${d}`, { recursive: true });
  }
  return configfs;
}

Deno.test("target show into a pipe closed early ends quietly with exit 0", async () => {
  await using t = await tempDir();
  const configfs = nvmetRoot(t.path);
  // ~2000 hosts: far more YAML than a pipe holds, so the write meets the closed pipe.
  for (let i = 0; i < 2000; i++) {
    Deno.mkdirSync(
      `${configfs}/nvmet/hosts/nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-${
        String(i).padStart(12, "0")
      }`,
    );
  }
  const r = await bash(
    `NVMEOF_CONFIGFS_STANDIN=1 NVMEOF_LOCK_DIR='${t.path}' '${ROOT}/scripts/nvmeof' ` +
      `target show --configfs '${configfs}' 2>'${t.path}/err' | head -c 50 >/dev/null; ` +
      `echo "\${PIPESTATUS[0]}"`,
  );
  assert.equal(r.stdout.trim(), "0", "exit code of nvmeof");
  assert.equal(Deno.readTextFileSync(`${t.path}/err`), "", "nothing on stderr");
});
