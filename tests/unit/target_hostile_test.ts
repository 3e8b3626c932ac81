/**
 * Hostile input to the target side: what a truncated, malicious or hand-mangled spec or nvmetcli
 * file does. Each must end in the project's own typed error naming the place, quickly, with a
 * message of bounded size.
 */
import assert from "node:assert/strict";
import { quote } from "../../src/errors.ts";
import { firstInvalidUtf8, INPUT_MAX_BYTES, InputError, readInputText } from "../../src/input.ts";
import { loadNvmetcliFile, nvmetcliToSpec } from "../../src/target/nvmetcli.ts";
import {
  loadSpecFile,
  parseSpecText,
  PROBLEMS_SHOWN,
  SpecError,
  validateSpec,
} from "../../src/target/spec.ts";
import { devices, HOST1, SUB1, twoSubsystemSpec } from "./target_fixtures.ts";

async function specProblems(text: string): Promise<SpecError> {
  try {
    validateSpec(await parseSpecText(text, "'t.yaml'"), { checkFiles: false });
  } catch (err) {
    assert.ok(err instanceof SpecError, `${(err as Error)?.constructor?.name}: ${err}`);
    return err;
  }
  assert.fail("expected a SpecError");
}

function tempFile(bytes: Uint8Array): string & Disposable {
  const p = Deno.makeTempFileSync({ prefix: "nvmeof-hostile-" });
  Deno.writeFileSync(p, bytes);
  return Object.assign(Object(p), { [Symbol.dispose]: () => Deno.removeSync(p) });
}

Deno.test("an alias to no anchor is a spec error naming the alias, not a crash", async () => {
  const e = await specProblems("hosts: *nope\n");
  assert.match(e.message, /Unresolved alias.*nope/);
  assert.equal(e.problems[0].path, "document");
});

Deno.test("an alias bomb is refused as a spec error before it expands", async () => {
  const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (const [p, c] of [["a", "b"], ["b", "c"], ["c", "d"], ["d", "e"], ["e", "f"], ["f", "g"]]) {
    lines.push(`${c}: &${c} [${Array(9).fill(`*${p}`).join(",")}]`);
  }
  const t0 = performance.now();
  const e = await specProblems(lines.join("\n") + "\n");
  assert.ok(performance.now() - t0 < 5000);
  assert.match(e.message, /alias/i);
});

Deno.test("a value with its own toString key is named as a mapping, never converted", async () => {
  const e = await specProblems(
    `subsystems:\n  - nqn: ${SUB1}\nports:\n  - id: {toString: x}\n    trtype: {toString: x}\n` +
      "    adrfam: {toString: x}\n    traddr: 10.0.0.1\n    subsystems: [{toString: x}]\n",
  );
  assert.ok(e.problems.some((p) => p.path === "ports[0].trtype" && /a mapping/.test(p.message)));
  assert.ok(e.problems.some((p) => p.path === "ports[0].id" && /a mapping/.test(p.message)));
});

Deno.test("nvmetcli JSON with null entries converts into spec errors naming each", () => {
  for (
    const [doc, path] of [
      [{ hosts: [null] }, "hosts[0]"],
      [{ subsystems: [{ nqn: SUB1, namespaces: [null] }] }, "subsystems[0].namespaces[0]"],
      [{ ports: [{ addr: null }] }, "ports[0].id"],
      [{ ports: [null] }, "ports[0]"],
      [{ subsystems: [null] }, "subsystems[0]"],
      [
        { ports: [{ portid: { toString: "x" }, addr: { trtype: { toString: 1 } } }] },
        "ports[0].id",
      ],
      [{
        subsystems: [{ nqn: SUB1, namespaces: [{ nsid: 1, device: { uuid: { toString: 1 } } }] }],
      }, "subsystems[0].namespaces[0].device"],
    ] as const
  ) {
    const { spec } = nvmetcliToSpec(doc, { keyDir: "/k" });
    try {
      validateSpec(spec, { checkFiles: false });
      assert.fail(`accepted ${JSON.stringify(doc)}`);
    } catch (err) {
      assert.ok(err instanceof SpecError, `${JSON.stringify(doc)}: ${err}`);
      assert.ok(err.problems.some((p) => p.path === path), `${path} in ${err.message}`);
    }
  }
});

Deno.test("quote cuts long values, escapes control characters and never calls toString", () => {
  assert.equal(quote("a\0b\n"), "'a\\0b\\n'");
  assert.equal(quote({ toString: "x" }), "a mapping");
  assert.equal(quote([1]), "a list");
  const long = quote("x".repeat(1_000_000));
  assert.ok(long.length < 120, long);
  assert.match(long, /\(1000000 characters\)$/);
});

Deno.test("a NUL byte in a device path is refused", async () => {
  using dev = devices(3);
  const spec = twoSubsystemSpec(dev);
  spec.subsystems[0].namespaces[0].device = `${dev[0]}\0junk`;
  assert.throws(
    () => validateSpec(spec),
    (e: Error) =>
      e instanceof SpecError &&
      e.problems.some((p) =>
        p.path === "subsystems[0].namespaces[0].device" && /control character/.test(p.message)
      ),
  );
  const e = await specProblems(
    `subsystems:\n  - nqn: ${SUB1}\n    namespaces:\n      - nsid: 1\n        device: "/dev/x\\0y"\n`,
  );
  assert.match(e.message, /'\/dev\/x\\0y' contains a control character/);
});

Deno.test("a spec that is not UTF-8 is refused with the line, not read as U+FFFD", () => {
  const bytes = new TextEncoder().encode(`hosts:\n  - nqn: nqn.2026-10.a:x`);
  using f = tempFile(new Uint8Array([...bytes, 0xff, 0x0a]));
  assert.throws(
    () => readInputText(String(f)),
    /not UTF-8 text: line 2 has an invalid byte \(0xff/,
  );
  assert.equal(firstInvalidUtf8(new TextEncoder().encode("ok ü €")), -1);
  assert.equal(firstInvalidUtf8(new Uint8Array([0x41, 0xed, 0xa0, 0x80])), 1); // a surrogate
  assert.equal(firstInvalidUtf8(new Uint8Array([0xc0, 0x80])), 0); // overlong NUL
});

Deno.test("content after a document end marker is refused", async () => {
  const e = await specProblems(`hosts: [${HOST1}]\n...\n%YAML 1.2\n`);
  assert.match(e.message, /follows the end of the document/);
  await parseSpecText(`hosts: [${HOST1}]\n...\n# a comment\n`, "t"); // comments may follow
});

Deno.test("a loop port with an address family, address or service id is refused", async () => {
  const e = await specProblems(
    `subsystems:\n  - nqn: ${SUB1}\nports:\n  - id: 1\n    trtype: loop\n    adrfam: garbage\n` +
      `    subsystems: [${SUB1}]\n`,
  );
  assert.deepEqual(e.problems.map((p) => p.path), ["ports[0].adrfam"]);
});

Deno.test("a spec larger than the limit is refused after reading only the limit", async () => {
  const t0 = performance.now();
  await assert.rejects(() => loadSpecFile("/dev/zero"), (e: Error) => {
    assert.ok(e instanceof SpecError);
    assert.match(e.message, new RegExp(`larger than ${INPUT_MAX_BYTES} bytes`));
    return true;
  });
  await assert.rejects(() => loadNvmetcliFile("/dev/zero"), InputError);
  assert.ok(performance.now() - t0 < 10_000);
});

Deno.test("a 10 MB NQN and 20 000 bad hosts give a message of a few kilobytes", () => {
  const big = `nqn.2026-10.a:${"x".repeat(10_000_000)}`;
  const hosts = [big, ...Array.from({ length: 20_000 }, (_, i) => `bad/${i}`)];
  try {
    validateSpec({ hosts }, { checkFiles: false });
    assert.fail("accepted");
  } catch (err) {
    assert.ok(err instanceof SpecError);
    assert.equal(err.problems.length, 20_001);
    assert.ok(err.message.length < 8000, `message is ${err.message.length} characters`);
    assert.match(err.message, new RegExp(`and ${20_001 - PROBLEMS_SHOWN} more problems`));
    assert.match(err.message, /\(10000014 characters\)/);
  }
});
