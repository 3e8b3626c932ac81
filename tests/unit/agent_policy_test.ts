/**
 * The agent's policies without a kernel: the exclusion list (`/etc/nvme/exclusions.conf`) and
 * what it matches, what counts as a use of a block device before `--on-removal
 * disconnect-unused` takes it away (a stand-in sysfs and procfs), how the removal decisions read,
 * and what the state file keeps of the paths the agent owns.
 */
import assert from "node:assert/strict";
import { excludedBy, parseExclusions, readExclusions } from "../../src/persist/exclusions_conf.ts";
import { blockUsers } from "../../src/host/block_users.ts";
import { decisionText } from "../../src/agent/decisions.ts";
import { StatusBook } from "../../src/agent/status.ts";
import { withHaProfile } from "../../src/agent/follower.ts";
import { haProfile } from "../../src/fabrics/connect_table.ts";
import { UsageError } from "../../src/errors.ts";
import { tempDir } from "../helpers.ts";

const ENTRY = {
  subnqn: "nqn.2026-12.io.example:db",
  trtype: "rdma",
  traddr: "10.0.0.2",
  trsvcid: "4420",
};

Deno.test("exclusions: a line matches an entry when every flag it gives matches", () => {
  const list = parseExclusions(
    [
      "# scratch volumes stay out",
      "--nqn=nqn.2026-12.io.example:scratch",
      "-a 10.0.9.9   # a whole address",
      "--traddr=10.0.0.2 --trsvcid=4421",
      "",
      '--nqn "nqn.2026-12.io.example:tcp-only" --transport=tcp',
    ].join("\n"),
    "'x'",
  );
  assert.equal(list.length, 4);
  assert.equal(excludedBy(list, ENTRY), undefined);
  assert.equal(
    excludedBy(list, { ...ENTRY, subnqn: "nqn.2026-12.io.example:scratch" })?.where,
    "'x' line 2",
  );
  assert.equal(excludedBy(list, { ...ENTRY, traddr: "10.0.9.9" })?.where, "'x' line 3");
  assert.equal(excludedBy(list, { ...ENTRY, trsvcid: "4421" })?.where, "'x' line 4");
  const tcpOnly = { ...ENTRY, subnqn: "nqn.2026-12.io.example:tcp-only" };
  assert.equal(excludedBy(list, tcpOnly), undefined, "rdma is not excluded");
  assert.equal(excludedBy(list, { ...tcpOnly, trtype: "tcp" })?.where, "'x' line 6");
});

Deno.test("exclusions: an unknown flag, a missing value or a field given twice is refused with its line", () => {
  const bad: Array<[string, RegExp]> = [
    ["--host-traddr=10.0.0.9", /line 1: '--host-traddr=10.0.0.9' is not an exclusion flag/],
    ["nqn.2026-12.io.example:db", /line 1: 'nqn.2026-12.io.example:db' is not an exclusion flag/],
    ["--nqn", /line 1: --nqn has no value/],
    ["--traddr=10.0.0.1 -a 10.0.0.2", /line 1: -a is given twice/],
  ];
  for (const [text, re] of bad) {
    assert.throws(() => parseExclusions(text, "'x'"), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, re);
      return true;
    });
  }
});

Deno.test("exclusions: a missing file excludes nothing; a file is read from nvme-cli's directory", async () => {
  await using dir = await tempDir();
  assert.deepEqual(readExclusions(dir.path), {
    file: `${dir.path}/exclusions.conf`,
    list: [],
  });
  await Deno.writeTextFile(`${dir.path}/exclusions.conf`, "--nqn=nqn.2026-12.io.example:db\n");
  const r = readExclusions(dir.path);
  assert.equal(r.list.length, 1);
  assert.equal(excludedBy(r.list, ENTRY)?.where, `'${dir.path}/exclusions.conf' line 1`);
});

/** A stand-in host: nvme1n1 (259:1) with partition nvme1n1p1 (259:2), and procfs. */
async function fakeHost(root: string) {
  const sysfs = `${root}/sys`, proc = `${root}/proc`, dev = `${root}/dev`;
  const blk = `${sysfs}/class/block/nvme1n1`;
  await Deno.mkdir(`${blk}/holders`, { recursive: true });
  await Deno.mkdir(`${blk}/nvme1n1p1/holders`, { recursive: true });
  await Deno.writeTextFile(`${blk}/dev`, "259:1\n");
  await Deno.writeTextFile(`${blk}/nvme1n1p1/dev`, "259:2\n");
  await Deno.mkdir(`${proc}/self`, { recursive: true });
  await Deno.mkdir(`${proc}/100/fd`, { recursive: true });
  await Deno.writeTextFile(`${proc}/100/comm`, "bash\n");
  await Deno.symlink("/dev/null", `${proc}/100/fd/0`);
  await Deno.writeTextFile(
    `${proc}/self/mountinfo`,
    "22 1 252:1 / / rw,relatime - ext4 /dev/vda1 rw\n",
  );
  await Deno.writeTextFile(`${proc}/swaps`, "Filename Type Size Used Priority\n");
  await Deno.mkdir(dev);
  return { roots: { sysfs, proc, dev }, blk };
}

Deno.test("blockUsers: an unused device has no users; a mount, a holder, a swap area or an open fd each count", async () => {
  await using dir = await tempDir();
  const { roots, blk } = await fakeHost(dir.path);
  assert.deepEqual(blockUsers(roots, "nvme1n1"), []);
  assert.deepEqual(blockUsers(roots, "nvme9n9"), [], "a device that is gone");

  await Deno.writeTextFile(
    `${roots.proc}/self/mountinfo`,
    "22 1 252:1 / / rw - ext4 /dev/vda1 rw\n40 22 259:2 / /mnt/my\\040data rw - xfs /dev/nvme1n1p1 rw\n",
    { append: false },
  );
  assert.deepEqual(blockUsers(roots, "nvme1n1"), ["nvme1n1p1 mounted at /mnt/my data"]);
  await Deno.writeTextFile(`${roots.proc}/self/mountinfo`, "");

  await Deno.writeTextFile(`${blk}/holders/dm-0`, "");
  assert.deepEqual(blockUsers(roots, "nvme1n1"), ["nvme1n1 held by dm-0"]);
  await Deno.remove(`${blk}/holders/dm-0`);

  await Deno.writeTextFile(
    `${roots.proc}/swaps`,
    `Filename Type Size Used Priority\n${roots.dev}/nvme1n1 partition 1024 0 -2\n`,
  );
  assert.deepEqual(blockUsers(roots, "nvme1n1"), ["nvme1n1 is a swap area"]);
  await Deno.writeTextFile(`${roots.proc}/swaps`, "Filename Type Size Used Priority\n");

  await Deno.mkdir(`${roots.proc}/4242/fd`, { recursive: true });
  await Deno.writeTextFile(`${roots.proc}/4242/comm`, "fio\n");
  await Deno.symlink(`${roots.dev}/nvme1n1`, `${roots.proc}/4242/fd/5`);
  await Deno.symlink(`${roots.dev}/nvme1n1`, `${roots.proc}/4242/fd/6`);
  assert.deepEqual(blockUsers(roots, "nvme1n1"), ["nvme1n1 open by pid 4242 (fio)"]);
});

Deno.test("blockUsers: mounts that cannot be read count as a use", async () => {
  await using dir = await tempDir();
  const { roots } = await fakeHost(dir.path);
  await Deno.remove(`${roots.proc}/self/mountinfo`);
  assert.match(blockUsers(roots, "nvme1n1").join(), /its mounts cannot be read/);
});

Deno.test("decisionText: what left the log is said as left, kept (with its users) or disconnected", () => {
  const d = {
    time: "2026-12-04T10:00:00.000Z",
    endpoint: "rdma 10.0.0.2:4420",
    reason: "log-changed" as const,
    genctr: 9,
    ...ENTRY,
    device: "nvme3",
  };
  assert.equal(
    decisionText({ ...d, action: "left" }),
    "left nqn.2026-12.io.example:db via rdma 10.0.0.2:4420 as nvme3: it is no longer in the log " +
      "(--on-removal leave) because the log changed (generation 9)",
  );
  assert.equal(
    decisionText({ ...d, action: "kept", users: ["nvme3n1 mounted at /mnt"] }),
    "kept nqn.2026-12.io.example:db via rdma 10.0.0.2:4420 as nvme3: it is no longer in the log, " +
      "but nvme3n1 mounted at /mnt because the log changed (generation 9)",
  );
  assert.equal(
    decisionText({ ...d, action: "disconnected" }),
    "disconnected nqn.2026-12.io.example:db via rdma 10.0.0.2:4420 (nvme3): it is no longer in " +
      "the log and nothing uses it because the log changed (generation 9)",
  );
});

Deno.test("status: what an earlier run connected is carried over until it is released", () => {
  const earlier = {
    time: "2026-12-04T09:00:00.000Z",
    endpoint: "rdma 10.0.0.2:4420",
    ...ENTRY,
    device: "nvme3",
  };
  const book = new StatusBook(["rdma 10.0.0.2:4420"], new Date(), [earlier]);
  book.decided({
    time: "t",
    action: "connected",
    endpoint: earlier.endpoint,
    ...ENTRY,
    device: "nvme4",
  });
  const devices = () => book.snapshot({ scans: 1, uevents: 0 }).connected.map((c) => c.device);
  assert.deepEqual(devices(), ["nvme3", "nvme4"]);
  book.released("nvme3");
  assert.deepEqual(devices(), ["nvme4"]);
  // A referral's endpoint, learnt while running: what an earlier run connected there, once.
  const referred = { ...earlier, endpoint: "rdma 10.0.0.3:4420", device: "nvme7" };
  book.inherit([referred, { ...earlier, device: "nvme4" }]);
  book.inherit([referred]);
  assert.deepEqual(devices(), ["nvme4", "nvme7"]);
});

Deno.test("withHaProfile: connect's HA profile for what the endpoint leaves unset, what it sets wins", () => {
  const base = {
    transport: "rdma" as const,
    traddr: "10.0.0.2",
    trsvcid: "4420",
    nqn: "",
    keepAliveTmo: 7,
  };
  const ha = withHaProfile(base);
  const profile = haProfile();
  assert.ok(Object.keys(profile).length >= 4);
  for (const [f, v] of Object.entries(profile)) {
    assert.equal(ha[f as keyof typeof ha], f === "keepAliveTmo" ? 7 : v, f);
  }
  assert.equal(ha.traddr, "10.0.0.2");
  assert.equal(base.keepAliveTmo, 7, "the base is left as it was");
  assert.equal((base as Record<string, unknown>).reconnectDelay, undefined);
});
