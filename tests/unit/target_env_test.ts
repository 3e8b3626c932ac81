import assert from "node:assert/strict";
import { kernelTargetEnv, openNvmet } from "../../src/target/env.ts";
import { tempDir } from "../helpers.ts";

Deno.test("no environment variable switches the product to a configfs stand-in", async () => {
  await using t = await tempDir();
  Deno.mkdirSync(`${t.path}/nvmet/hosts`, { recursive: true });
  Deno.env.set("NVMEOF_CONFIGFS_STANDIN", "1");
  try {
    const io = openNvmet(t.path, { prepare: false });
    assert.equal(io?.constructor.name, "KernelConfigfs");
    const env = kernelTargetEnv().open(t.path, { prepare: false });
    assert.equal(env?.constructor.name, "KernelConfigfs");
  } finally {
    Deno.env.delete("NVMEOF_CONFIGFS_STANDIN");
  }
});
