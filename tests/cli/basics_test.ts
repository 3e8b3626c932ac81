import assert from "node:assert/strict";
import { nvmeof } from "../helpers.ts";

Deno.test("--version prints the product and runtime versions, exit 0", async () => {
  const r = await nvmeof(["--version"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^nvmeof \d+\.\d+\.\d+ \(deno 2\.9\.6, /);
  assert.equal(r.stderr, "");
});

Deno.test("--version -o json gives the versions as JSON", async () => {
  const r = await nvmeof(["-o", "json", "--version"]);
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout);
  assert.equal(v.deno, "2.9.6");
  assert.match(v.nvmeof, /^\d+\.\d+\.\d+$/);
});

Deno.test("--help lists every command on stdout, exit 0", async () => {
  const r = await nvmeof(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /Usage: nvmeof <command>/);
  assert.match(r.stdout, /^ {2}version /m);
  assert.match(r.stdout, /^ {2}help /m);
});

Deno.test("no command is a usage error (exit 2) with help on stderr", async () => {
  const r = await nvmeof([]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /error: No command given/);
});

Deno.test("an unknown command is a usage error naming it", async () => {
  const r = await nvmeof(["frobnicate"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^error: Unknown command 'frobnicate'\./m);
  assert.match(r.stderr, /nvmeof help/);
});

Deno.test("an unknown flag is a usage error (exit 2) that points at the command's help", async () => {
  const r = await nvmeof(["version", "--bogus"]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^error: Unknown option '--bogus'\./m);
  assert.match(r.stderr, /nvmeof version --help/);
});

Deno.test("a flag missing its value is a usage error", async () => {
  const r = await nvmeof(["version", "-o"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /argument missing/);
});

Deno.test("an invalid output format is a usage error", async () => {
  const r = await nvmeof(["version", "-o", "yaml"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Invalid output format 'yaml'/);
});

Deno.test("help <command> and <command> --help print the same text", async () => {
  const a = await nvmeof(["help", "version"]);
  const b = await nvmeof(["version", "--help"]);
  assert.equal(a.code, 0);
  assert.equal(b.code, 0);
  assert.equal(a.stdout, b.stdout);
  assert.match(a.stdout, /Examples:\n {2}nvmeof version/);
});

Deno.test("help for an unknown command is a usage error", async () => {
  const r = await nvmeof(["help", "nope"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /No command 'nope'/);
});

Deno.test("a stray positional argument is a usage error", async () => {
  const r = await nvmeof(["version", "extra"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Unexpected argument 'extra'/);
});

Deno.test("with -o json an error also comes on stdout as JSON, with the same exit code", async () => {
  for (
    const [args, code, message] of [
      [["version", "--bogus", "-o", "json"], 2, /^Unknown option '--bogus'\./],
      [["--output=json", "frobnicate"], 2, /^Unknown command 'frobnicate'\./],
      [
        ["bench", "-a", "192.0.2.1", "-n", "nqn.2024-01.io.example:d", "--rw", "trim", "-ojson"],
        2,
        /^--rw must be one of randread, /,
      ],
    ] as const
  ) {
    const r = await nvmeof([...args]);
    assert.equal(r.code, code, r.stderr);
    const e = JSON.parse(r.stdout).error;
    assert.match(e.message, message);
    assert.equal(e.exit_code, code);
    // The hint, when the error has one, is the indented line under it on stderr.
    const hint = r.stderr.match(/^error: .*\n {2}(.*)$/m)?.[1];
    assert.equal(e.hint, hint);
    // The text stays on stderr for whoever reads it.
    assert.match(r.stderr, /^error: /m);
  }
  const t = await nvmeof(["version", "--bogus"]);
  assert.equal(t.stdout, "");
});
