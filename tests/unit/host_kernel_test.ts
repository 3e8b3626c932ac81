/** The one mount check and tool runner the target, connect and the doctor share. */
import assert from "node:assert/strict";
import { isConfigfsMounted, runTool } from "../../src/host/kernel.ts";
import { tempDir } from "../helpers.ts";

Deno.test("isConfigfsMounted reads <proc>/mounts: configfs at that directory only", async () => {
  await using dir = await tempDir();
  Deno.writeTextFileSync(
    `${dir.path}/mounts`,
    "sysfs /sys sysfs rw 0 0\nconfigfs /sys/kernel/config configfs rw 0 0\n" +
      "tmpfs /mnt/config tmpfs rw 0 0\n",
  );
  assert.equal(isConfigfsMounted("/sys/kernel/config", dir.path), true);
  assert.equal(isConfigfsMounted("/mnt/config", dir.path), false);
  assert.equal(isConfigfsMounted("/sys/kernel/config", `${dir.path}/absent`), undefined);
});

Deno.test("runTool says how a tool ended and never throws", () => {
  assert.deepEqual(runTool("true", []), { ok: true, stderr: "" });
  assert.deepEqual(runTool("sh", ["-c", "echo no such module >&2; exit 1"]), {
    ok: false,
    stderr: "no such module",
  });
  assert.deepEqual(runTool("false", []), { ok: false, stderr: "exit 1" });
  const missing = runTool("/nonexistent/modprobe", []);
  assert.equal(missing.ok, false);
  assert.match(missing.stderr, /No such file|not found/i);
});
