/**
 * A work request in JS memory, built once and posted many times: ibv_send_wr or ibv_recv_wr with
 * its one scatter/gather entry right behind it, kept alive by the object that owns it.
 */
import { IBV_RECV_WR, IBV_SEND_WR, IBV_SGE } from "../../ffi/structs.ts";
import { addressOf } from "./native.ts";
import type { MemoryRegion } from "./verbs.ts";

/** One work request with its single SGE, in JS memory kept alive by this object. */
export class WorkRequest {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly address: bigint;

  constructor(kind: "send" | "recv") {
    const wrSize = kind === "send" ? IBV_SEND_WR.$size : IBV_RECV_WR.$size;
    this.bytes = new Uint8Array(wrSize + IBV_SGE.$size);
    this.view = new DataView(this.bytes.buffer);
    this.address = addressOf(this.bytes);
    this.view.setBigUint64(IBV_SEND_WR.sg_list, this.address + BigInt(wrSize), true);
    this.view.setInt32(IBV_SEND_WR.num_sge, 1, true);
    this.#sge = wrSize;
  }

  readonly #sge: number;

  /** Sets wr_id and the SGE (local address, length, lkey). */
  local(wrId: number, mr: MemoryRegion, offset: number, length: number): this {
    this.view.setBigUint64(IBV_SEND_WR.wr_id, BigInt(wrId), true);
    this.view.setBigUint64(this.#sge + IBV_SGE.addr, mr.addr + BigInt(offset), true);
    this.view.setUint32(this.#sge + IBV_SGE.length, length, true);
    this.view.setUint32(this.#sge + IBV_SGE.lkey, mr.lkey, true);
    return this;
  }

  /** Send-side fields: opcode, flags and, for RDMA ops, the remote address and rkey. */
  op(opcode: number, flags: number, remoteAddr = 0n, rkey = 0): this {
    this.view.setUint32(IBV_SEND_WR.opcode, opcode, true);
    this.view.setUint32(IBV_SEND_WR.send_flags, flags, true);
    this.view.setBigUint64(IBV_SEND_WR["wr.rdma.remote_addr"], remoteAddr, true);
    this.view.setUint32(IBV_SEND_WR["wr.rdma.rkey"], rkey, true);
    return this;
  }

  /** Changes only the SGE length. */
  setLength(length: number): void {
    this.view.setUint32(this.#sge + IBV_SGE.length, length, true);
  }

  /** Changes only the remote address. */
  setRemote(remoteAddr: bigint): void {
    this.view.setBigUint64(IBV_SEND_WR["wr.rdma.remote_addr"], remoteAddr, true);
  }

  /** Chains `next` behind this WR (one post sends both), or ends the chain here. */
  link(next: WorkRequest | undefined): void {
    this.view.setBigUint64(IBV_SEND_WR.next, next ? next.address : 0n, true);
  }
}
