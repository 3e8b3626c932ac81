import assert from "node:assert/strict";
import { type ConfigfsIo, DirectoryConfigfs } from "../../src/configfs/io.ts";
import { readTree } from "../../src/configfs/nvmet.ts";
import { tempDir } from "../helpers.ts";
import { metricsTree } from "../metrics_standin.ts";

/** `io` with the paths it read, in order. */
function counting(io: ConfigfsIo): ConfigfsIo & { reads: string[] } {
  const spy = Object.create(io) as ConfigfsIo & { reads: string[] };
  spy.reads = [];
  spy.read = (path: string) => {
    spy.reads.push(path);
    return io.read(path);
  };
  spy.readIf = (path: string) => {
    spy.reads.push(path);
    return io.readIf(path);
  };
  return spy;
}

Deno.test("readTree outline: what the metrics read, the same as the whole tree's, from fewer reads", async () => {
  await using d = await tempDir();
  const { nvmet } = await metricsTree(d.path);
  // The attributes Linux 6.1 has beside those the stand-in writes.
  for (const s of Deno.readDirSync(`${nvmet}/subsystems`)) {
    const dir = `${nvmet}/subsystems/${s.name}`;
    for (const a of ["serial", "model", "version", "cntlid_min", "cntlid_max", "qid_max"]) {
      Deno.writeTextFileSync(`${dir}/attr_${a}`, "1\n");
    }
    for (const n of Deno.readDirSync(`${dir}/namespaces`)) {
      for (const a of ["device_uuid", "device_nguid", "buffered_io", "ana_grpid"]) {
        Deno.writeTextFileSync(`${dir}/namespaces/${n.name}/${a}`, "1\n");
      }
    }
  }
  const wholeIo = counting(new DirectoryConfigfs(nvmet));
  const outlineIo = counting(new DirectoryConfigfs(nvmet));
  const whole = readTree(wholeIo);
  const outline = readTree(outlineIo, "outline");
  assert.ok(whole.subsystems.length >= 2 && whole.ports.length >= 1);
  assert.deepEqual(outline.ports, whole.ports);
  assert.deepEqual(outline.hosts, []);
  assert.deepEqual(
    outline.subsystems.map((s) => ({
      nqn: s.nqn,
      allow_any_host: s.attr.allow_any_host,
      allowed_hosts: s.allowed_hosts,
      namespaces: s.namespaces.map((n) => [n.nsid, n.device_path, n.enable]),
    })),
    whole.subsystems.map((s) => ({
      nqn: s.nqn,
      allow_any_host: s.attr.allow_any_host,
      allowed_hosts: s.allowed_hosts,
      namespaces: s.namespaces.map((n) => [n.nsid, n.device_path, n.enable]),
    })),
  );
  // Of a subsystem, only allow_any_host; of a namespace, only device_path and enable.
  const beyondOutline = (reads: string[]) =>
    reads.filter((p) =>
      /^subsystems\/[^/]+\/attr_(?!allow_any_host$)/.test(p) ||
      /\/namespaces\/[^/]+\/(?!device_path$|enable$)[^/]+$/.test(p) || p.startsWith("hosts/")
    );
  assert.deepEqual(beyondOutline(outlineIo.reads), []);
  // The whole tree reads the rest when it is looked at (it defers them).
  JSON.stringify(whole);
  assert.ok(beyondOutline(wholeIo.reads).length >= 10, wholeIo.reads.join(" "));
  assert.ok(outlineIo.reads.length < wholeIo.reads.length);
});
