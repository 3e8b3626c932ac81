/**
 * `nvmeof bench` refusals that need no target: data-destroying modes without --allow-write and
 * malformed flags are usage errors (exit 2) before anything is connected.
 */
import assert from "node:assert/strict";
import { nvmeof } from "../helpers.ts";

const BASE = ["bench", "-a", "192.0.2.1", "-n", "nqn.2024-01.io.example:disk1"];

Deno.test("bench refuses write modes without --allow-write, and bad flags, with exit 2", async () => {
  const w = await nvmeof([...BASE, "--rw", "verify"]);
  assert.equal(w.code, 2, w.stderr);
  assert.match(w.stderr, /--rw verify overwrites the namespace's data/);
  assert.match(w.stderr, /--allow-write/);
  assert.equal(w.stdout, "");
  for (
    const args of [
      ["--rw", "trim"],
      ["--bs", "1000"],
      ["--qd", "0"],
      ["--time", "1", "--ios", "9"],
      [
        "--bogus",
      ],
    ]
  ) {
    const r = await nvmeof([...BASE, ...args]);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
  }
});
