/**
 * nvmeof with a plain directory standing in for nvmet configfs (tests/standin/configfs.ts): the
 * entry point of the cli tier's target tests, run by tests/standin/nvmeof. The product's main.ts
 * knows nothing of it; this file puts the stand-in in through useNvmetStandin, then runs main.
 *
 * NVMEOF_CONFIGFS_FAIL injects failures (`#3=EIO;link ports/1/subsystems/x=EADDRNOTAVAIL`) to
 * prove rollback.
 */
import { main } from "../../main.ts";
import { fileKind } from "../../src/configfs/native.ts";
import { useNvmetStandin } from "../../src/target/env.ts";
import { parseFailures, StandinConfigfs } from "./configfs.ts";

useNvmetStandin({
  open(root, options) {
    if (!options.prepare && fileKind(root, { follow: true }) === undefined) return undefined;
    const failures = parseFailures(Deno.env.get("NVMEOF_CONFIGFS_FAIL") ?? "");
    return new StandinConfigfs(root, { failures });
  },
});
Deno.exit(await main(Deno.args));
