/**
 * ABI conformance: the offset tables of ffi/structs.ts and the enum values of ffi/enums.ts against
 * the installed rdma-core headers. A C probe generated from the tables themselves is compiled
 * with `cc` against infiniband/verbs.h and rdma/rdma_cma.h; it prints sizeof/offsetof for every
 * entry, and the test compares. Without a compiler or the headers the test fails and says what to
 * install (libibverbs-dev, librdmacm-dev, gcc): a layout nobody checked is not a pass.
 */
import assert from "node:assert/strict";
import { ABI_TABLES } from "../../ffi/structs.ts";
import {
  IBV_ACCESS,
  IBV_QP_ATTR_MASK,
  IBV_QPS,
  IBV_SEND,
  IBV_WC_OPCODE,
  IBV_WC_STATUS,
  IBV_WC_STATUS_NAMES,
  IBV_WR,
  NLA_F,
  NLM_F,
  NLMSG,
  RDMA_CM_EVENT_TYPE,
  RDMA_NL_NLDEV,
  RDMA_NLDEV_ATTR,
  RDMA_NLDEV_CMD,
  RDMA_PS_TCP,
} from "../../ffi/enums.ts";

/** C expressions and the value the TypeScript side uses for them. */
function enumChecks(): [string, number][] {
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(RDMA_CM_EVENT_TYPE)) out.push([`RDMA_CM_EVENT_${k}`, v]);
  for (const [k, v] of Object.entries(IBV_QPS)) out.push([`IBV_QPS_${k}`, v]);
  for (const [k, v] of Object.entries(IBV_QP_ATTR_MASK)) out.push([`IBV_QP_${k}`, v]);
  for (const [k, v] of Object.entries(IBV_ACCESS)) out.push([`IBV_ACCESS_${k}`, v]);
  for (const [k, v] of Object.entries(IBV_WR)) out.push([`IBV_WR_${k}`, v]);
  for (const [k, v] of Object.entries(IBV_SEND)) out.push([`IBV_SEND_${k}`, v]);
  for (const [k, v] of Object.entries(IBV_WC_OPCODE)) out.push([`IBV_WC_${k}`, v]);
  IBV_WC_STATUS_NAMES.forEach((n, i) => out.push([`IBV_WC_${n}`, i]));
  for (const [k, v] of Object.entries(IBV_WC_STATUS)) out.push([`IBV_WC_${k}`, v]);
  out.push(["RDMA_PS_TCP", RDMA_PS_TCP]);
  for (const [k, v] of Object.entries(NLM_F)) out.push([`NLM_F_${k}`, v]);
  for (const [k, v] of Object.entries(NLMSG)) out.push([`NLMSG_${k}`, v]);
  for (const [k, v] of Object.entries(NLA_F)) out.push([`NLA_F_${k}`, v]);
  out.push(["RDMA_NL_NLDEV", RDMA_NL_NLDEV]);
  for (const [k, v] of Object.entries(RDMA_NLDEV_CMD)) out.push([`RDMA_NLDEV_CMD_${k}`, v]);
  for (const [k, v] of Object.entries(RDMA_NLDEV_ATTR)) out.push([`RDMA_NLDEV_ATTR_${k}`, v]);
  return out;
}

function probeSource(): string {
  const lines = [
    "#include <stddef.h>",
    "#include <stdio.h>",
    "#include <poll.h>",
    "#include <netinet/in.h>",
    "#include <sys/time.h>",
    "#include <linux/socket.h>",
    "#include <linux/netlink.h>",
    "#include <rdma/rdma_netlink.h>",
    "#include <infiniband/verbs.h>",
    "#include <rdma/rdma_cma.h>",
    "int main(void) {",
  ];
  for (const [type, table] of Object.entries(ABI_TABLES)) {
    for (const field of Object.keys(table)) {
      const expr = field === "$size" ? `sizeof(${type})` : `offsetof(${type}, ${field})`;
      lines.push(`  printf("%s|%s|%zu\\n", "${type}", "${field}", (size_t)${expr});`);
    }
  }
  for (const [name] of enumChecks()) {
    lines.push(`  printf("enum|%s|%lld\\n", "${name}", (long long)${name});`);
  }
  lines.push("  return 0;", "}");
  return lines.join("\n") + "\n";
}

let probeOutput: Map<string, number> | undefined;

/** Compiles and runs the probe once; fails with what to install when it cannot. */
async function probe(): Promise<Map<string, number>> {
  if (probeOutput) return probeOutput;
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-abi-" });
  try {
    await Deno.writeTextFile(`${dir}/probe.c`, probeSource());
    let cc;
    try {
      cc = await new Deno.Command("cc", {
        args: ["-std=gnu11", "-Wall", "-o", `${dir}/probe`, `${dir}/probe.c`],
        stdout: "piped",
        stderr: "piped",
      }).output();
    } catch (err) {
      throw new Error(
        "The ABI probe needs a C compiler: 'cc' was not found. Install gcc (apt-get install gcc " +
          "libc6-dev libibverbs-dev librdmacm-dev, or run scripts/lab/lab setup).",
        { cause: err },
      );
    }
    if (!cc.success) {
      const msg = new TextDecoder().decode(cc.stderr);
      const missing = /fatal error: (\S+): No such file/.exec(msg);
      throw new Error(
        missing
          ? `The ABI probe cannot find the header ${missing[1]}. Install libibverbs-dev and ` +
            `librdmacm-dev (rdma-core's development headers).`
          : `The ABI probe did not compile: a table names a field the headers do not have.\n${msg}`,
      );
    }
    const run = await new Deno.Command(`${dir}/probe`, { stdout: "piped" }).output();
    assert.ok(run.success, "the ABI probe exited with an error");
    const map = new Map<string, number>();
    for (const line of new TextDecoder().decode(run.stdout).trim().split("\n")) {
      const [type, field, value] = line.split("|");
      map.set(`${type}|${field}`, Number(value));
    }
    probeOutput = map;
    return map;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

for (const [type, table] of Object.entries(ABI_TABLES)) {
  Deno.test(`${type}: every size and offset in ffi/structs.ts matches the C headers`, async () => {
    const c = await probe();
    const wrong: string[] = [];
    for (const [field, value] of Object.entries(table)) {
      const actual = c.get(`${type}|${field}`);
      if (actual !== value) wrong.push(`${field}: table ${value}, C ${actual}`);
    }
    assert.deepEqual(wrong, [], `${type} differs from the headers`);
  });
}

Deno.test("enum values in ffi/enums.ts match the C headers", async () => {
  const c = await probe();
  const wrong = enumChecks().filter(([name, v]) => c.get(`enum|${name}`) !== v)
    .map(([name, v]) => `${name}: ts ${v}, C ${c.get(`enum|${name}`)}`);
  assert.deepEqual(wrong, []);
});

Deno.test("the data-path ops slots sit where the header's inline functions read them", async () => {
  // ibv_poll_cq and friends are static inline: they call cq->context->ops.poll_cq. The probe
  // checks offsetof(struct ibv_context, ops.poll_cq) etc.; here also that each slot is 8-byte
  // aligned inside the 256-byte ops table, where a misread would call a wrong function.
  const c = await probe();
  for (const op of ["poll_cq", "req_notify_cq", "post_send", "post_recv"]) {
    const off = c.get(`struct ibv_context|ops.${op}`)!;
    assert.ok(off >= 8 && off < 264 && off % 8 === 0, `ops.${op} at ${off}`);
  }
});
