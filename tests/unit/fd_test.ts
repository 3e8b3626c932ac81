/** OwnedFd: the one owned file descriptor every fd-holding class extends or holds. */
import assert from "node:assert/strict";
import { OwnedFd } from "../../src/fd.ts";
import { Canceller } from "../../src/wait.ts";
import { KmsgWatch } from "../../src/fabrics/kmsg.ts";

/** Whether `fd` is open in this process. */
function isOpenFd(fd: number): boolean {
  try {
    Deno.statSync(`/proc/self/fd/${fd}`);
    return true;
  } catch {
    return false;
  }
}

Deno.test("OwnedFd closes its fd once, by close() or using, and then reads -1", () => {
  const probe = new Canceller();
  const fd = probe.fd;
  assert.ok(isOpenFd(fd));
  {
    using owned = probe;
    assert.ok(owned.isOpen);
  }
  assert.equal(probe.fd, -1);
  assert.ok(!isOpenFd(fd));
  probe.close();
  assert.equal(probe.fd, -1);
});

Deno.test("OwnedFd of a negative fd owns nothing", () => {
  const none = new OwnedFd(-5);
  assert.equal(none.fd, -1);
  assert.ok(!none.isOpen);
  none.close();
});

Deno.test("a kernel log watch of a path that does not exist is inactive and closes cleanly", () => {
  using watch = new KmsgWatch("/nonexistent/kmsg");
  assert.ok(!watch.active);
  assert.deepEqual(watch.read(), []);
});
