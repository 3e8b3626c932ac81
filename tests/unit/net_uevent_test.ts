import assert from "node:assert/strict";
import { parseUevent, ueventName } from "../../src/net/uevent.ts";

const enc = (parts: string[]) => new TextEncoder().encode(parts.join("\0") + "\0");

Deno.test("parseUevent reads a Discovery Log Change uevent as the kernel sends it", () => {
  const e = parseUevent(enc([
    "change@/devices/virtual/nvme-fabrics/ctl/nvme0",
    "ACTION=change",
    "DEVPATH=/devices/virtual/nvme-fabrics/ctl/nvme0",
    "SUBSYSTEM=nvme",
    "NVME_AEN=0x70f002",
    "NVME_TRTYPE=rdma",
    "NVME_TRADDR=10.77.0.1",
    "NVME_TRSVCID=4420",
    "NVME_HOST_TRADDR=none",
    "NVME_HOST_IFACE=none",
    "MAJOR=242",
    "MINOR=0",
    "DEVNAME=nvme0",
    "SEQNUM=2411",
  ]));
  assert.ok(e);
  assert.equal(e.action, "change");
  assert.equal(e.devpath, "/devices/virtual/nvme-fabrics/ctl/nvme0");
  assert.equal(e.env.NVME_AEN, "0x70f002");
  assert.equal(e.env.NVME_TRADDR, "10.77.0.1");
  assert.equal(ueventName(e), "nvme0");
});

Deno.test("parseUevent takes the header when the environment lacks ACTION and DEVPATH", () => {
  const e = parseUevent(enc(["remove@/devices/virtual/nvme-fabrics/ctl/nvme4", "SUBSYSTEM=nvme"]));
  assert.equal(e?.action, "remove");
  assert.equal(e && ueventName(e), "nvme4");
});

Deno.test("parseUevent skips udevd's re-broadcasts, headerless buffers and pairs without '='", () => {
  assert.equal(parseUevent(enc(["libudev", "ACTION=add"])), undefined);
  assert.equal(parseUevent(new Uint8Array(0)), undefined);
  assert.equal(parseUevent(enc(["no header here"])), undefined);
  const e = parseUevent(enc(["add@/x/nvme1", "JUNK", "=v", "A=b=c"]));
  assert.deepEqual(e?.env, { A: "b=c" });
});
