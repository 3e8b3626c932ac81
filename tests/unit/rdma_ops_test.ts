/**
 * The data-path inlines reached the way src/rdma/verbs.ts reaches them: a C fake provider built
 * with the real headers sets ibv_context.ops.poll_cq / post_send; TypeScript follows
 * cq->context->ops with the offset tables and calls through NativeCall (libffi), and the C side
 * (calling the header's own inline ibv_post_send) agrees with what TypeScript encoded.
 */
import assert from "node:assert/strict";
import { IBV_CONTEXT, IBV_CQ, IBV_QP, IBV_SEND_WR, IBV_SGE, IBV_WC } from "../../ffi/structs.ts";
import { NativeCall } from "../../ffi/libffi.ts";
import { IBV_SEND, IBV_WR } from "../../ffi/enums.ts";

const C = `
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
static struct ibv_context ctx;
static struct ibv_cq cq;
static struct ibv_qp qp;
static struct ibv_send_wr seen;
static struct ibv_sge seen_sge;
static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc) {
  if (c != &cq || n < 1) return -1;
  memset(wc, 0, sizeof *wc);
  wc->wr_id = 0x1122334455667788ull; wc->status = IBV_WC_REM_ACCESS_ERR;
  wc->opcode = IBV_WC_RECV; wc->byte_len = 4096; wc->qp_num = 17;
  return 1;
}
static int fake_post_send(struct ibv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  if (q != &qp) return 22;
  seen = *wr; seen_sge = wr->sg_list[0]; *bad = NULL; return 0;
}
void *fake_cq(void) {
  ctx.ops.poll_cq = fake_poll_cq; ctx.ops.post_send = fake_post_send;
  cq.context = &ctx; qp.context = &ctx; qp.qp_num = 17; return &cq;
}
void *fake_qp(void) { return &qp; }
/* What the header's inline sees, for comparison. */
unsigned long long seen_u64(int which) {
  switch (which) {
  case 0: return seen.wr_id; case 1: return seen.opcode; case 2: return seen.send_flags;
  case 3: return seen.wr.rdma.remote_addr; case 4: return seen.wr.rdma.rkey;
  case 5: return seen_sge.addr; case 6: return seen_sge.length; case 7: return seen_sge.lkey;
  case 8: return seen.num_sge;
  }
  return 0;
}
int inline_poll(void) { struct ibv_wc wc; return ibv_poll_cq(&cq, 1, &wc) == 1 && wc.byte_len == 4096; }
`;

async function buildFake(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "nvmeof-ops-" });
  await Deno.writeTextFile(`${dir}/fake.c`, C);
  let out;
  try {
    out = await new Deno.Command("cc", {
      args: ["-shared", "-fPIC", "-o", `${dir}/libfake.so`, `${dir}/fake.c`],
      stderr: "piped",
    }).output();
  } catch (err) {
    throw new Error(
      "This test needs 'cc' and libibverbs-dev (apt-get install gcc libibverbs-dev).",
      {
        cause: err,
      },
    );
  }
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return `${dir}/libfake.so`;
}

Deno.test("poll_cq through cq->context->ops (offset table + ffi_call) decodes the C ibv_wc", async () => {
  const path = await buildFake();
  const lib = Deno.dlopen(path, {
    fake_cq: { parameters: [], result: "pointer" },
    inline_poll: { parameters: [], result: "i32" },
  });
  try {
    const cq = lib.symbols.fake_cq()!;
    assert.equal(lib.symbols.inline_poll(), 1); // the header's inline reaches the same function
    const ctx = new Deno.UnsafePointerView(cq).getPointer(IBV_CQ.context)!;
    const fn = new Deno.UnsafePointerView(ctx).getPointer(IBV_CONTEXT["ops.poll_cq"])!;
    const wc = new Uint8Array(IBV_WC.$size * 4);
    const call = new NativeCall(fn, ["pointer", "i32", "pointer"]);
    call.setPointer(0, cq);
    call.setI32(1, 4);
    call.setPointer(2, Deno.UnsafePointer.of(wc));
    assert.equal(call.invoke(), 1);
    const dv = new DataView(wc.buffer);
    assert.equal(dv.getBigUint64(IBV_WC.wr_id, true), 0x1122334455667788n);
    assert.equal(dv.getUint32(IBV_WC.status, true), 10);
    assert.equal(dv.getUint32(IBV_WC.opcode, true), 128);
    assert.equal(dv.getUint32(IBV_WC.byte_len, true), 4096);
    assert.equal(dv.getUint32(IBV_WC.qp_num, true), 17);
  } finally {
    lib.close();
    await Deno.remove(path.replace(/\/[^/]+$/, ""), { recursive: true });
  }
});

Deno.test("post_send through qp->context->ops passes a TS-built ibv_send_wr that C reads field for field", async () => {
  const path = await buildFake();
  const lib = Deno.dlopen(path, {
    fake_cq: { parameters: [], result: "pointer" },
    fake_qp: { parameters: [], result: "pointer" },
    seen_u64: { parameters: ["i32"], result: "u64" },
  });
  try {
    lib.symbols.fake_cq();
    const qp = lib.symbols.fake_qp()!;
    assert.equal(new Deno.UnsafePointerView(qp).getUint32(IBV_QP.qp_num), 17);
    const ctx = new Deno.UnsafePointerView(qp).getPointer(IBV_QP.context)!;
    const fn = new Deno.UnsafePointerView(ctx).getPointer(IBV_CONTEXT["ops.post_send"])!;
    const wr = new Uint8Array(IBV_SEND_WR.$size + IBV_SGE.$size);
    const dv = new DataView(wr.buffer);
    const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(wr)));
    dv.setBigUint64(IBV_SEND_WR.wr_id, 99n, true);
    dv.setBigUint64(IBV_SEND_WR.sg_list, base + BigInt(IBV_SEND_WR.$size), true);
    dv.setInt32(IBV_SEND_WR.num_sge, 1, true);
    dv.setUint32(IBV_SEND_WR.opcode, IBV_WR.RDMA_WRITE, true);
    dv.setUint32(IBV_SEND_WR.send_flags, IBV_SEND.SIGNALED, true);
    dv.setBigUint64(IBV_SEND_WR["wr.rdma.remote_addr"], 0xdead0000beefn, true);
    dv.setUint32(IBV_SEND_WR["wr.rdma.rkey"], 0x1234, true);
    dv.setBigUint64(IBV_SEND_WR.$size + IBV_SGE.addr, 0x7000n, true);
    dv.setUint32(IBV_SEND_WR.$size + IBV_SGE.length, 4096, true);
    dv.setUint32(IBV_SEND_WR.$size + IBV_SGE.lkey, 0x55, true);
    const bad = new BigUint64Array(1);
    const call = new NativeCall(fn, ["pointer", "pointer", "pointer"]);
    call.setPointer(0, qp);
    call.setPointer(1, base);
    call.setPointer(2, Deno.UnsafePointer.of(bad));
    assert.equal(call.invoke(), 0);
    const seen = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => lib.symbols.seen_u64(i));
    assert.deepEqual(seen, [99n, 0n, 2n, 0xdead0000beefn, 0x1234n, 0x7000n, 4096n, 0x55n, 1n]);
  } finally {
    lib.close();
    await Deno.remove(path.replace(/\/[^/]+$/, ""), { recursive: true });
  }
});
