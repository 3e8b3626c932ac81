/**
 * An NVMe-oF controller reached from user space: the admin queue (Fabrics Connect, Property
 * Get/Set with the CC.EN / CSTS.RDY handshake, Identify, Get Log Page, Keep Alive), I/O queues
 * connected one after another with the controller's cntlid, and a clean shutdown (CC.SHN,
 * CSTS.SHST) before the RDMA disconnect. Every step is timed.
 */
import { hostPort } from "../net/address.ts";
import { IBV_ACCESS } from "../../ffi/enums.ts";
import { FailureError } from "../errors.ts";
import {
  decodeLog,
  DISCOVERY_LOG_ID,
  type DiscoveryLog,
  ENTRY_SIZE,
  HEADER_SIZE,
} from "../fabrics/discovery_log.ts";
import type { MemoryRegion } from "../rdma/verbs.ts";
import type { Canceller } from "../wait.ts";
import {
  CONNECT_DATA_SIZE,
  connectSqe,
  encodeConnectData,
  getLogPageSqe,
  identifySqe,
  keepAliveSqe,
  PROP,
  propertyGetSqe,
  propertySetSqe,
} from "./capsule.ts";
import {
  type Capabilities,
  CC_ENABLE,
  CC_SHN_NORMAL,
  CSTS_CFS,
  CSTS_RDY,
  decodeCap,
  decodeIdentifyController,
  decodeIdentifyNamespace,
  decodeNamespaceList,
  decodeVersion,
  IDENTIFY_SIZE,
  type IdentifyController,
  type IdentifyNamespace,
  shutdownComplete,
} from "./identify.ts";
import { NvmeQueue } from "./queue.ts";
import { NvmeStatusError } from "../fabrics/nvme_status.ts";
import { sleep, type Timer, timer } from "../timer.ts";

/** The admin queue's depth, as a Linux host opens it (NVME_AQ_DEPTH). */
export const ADMIN_DEPTH = 32;
/** Keep-alive timeout asked for in the admin Connect (ms); long runs send Keep Alive within it. */
export const KATO_MS = 15000;

export interface ControllerOptions {
  host: string;
  port: number;
  subnqn: string;
  hostnqn: string;
  hostid: string;
  timeoutMs: number;
  cancel?: Canceller;
}

/**
 * Keep Alive from a timer every third of KATO_MS, off the I/O path, until stopped; the first
 * failure ends it and stays in `failure` for the run to throw.
 */
export class KeepAliveTimer {
  /** The first Keep Alive that failed (its error). */
  failure: unknown;
  #timer: Timer | undefined;
  #stopped = false;
  readonly #send: () => Promise<void>;

  constructor(send: () => Promise<void>) {
    this.#send = send;
    this.#arm();
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = timer(KATO_MS / 3);
    this.#timer.done.then(async () => {
      try {
        await this.#send();
        this.#arm();
      } catch (err) {
        this.failure ??= err;
      }
    });
  }

  /** No more Keep Alive (one already sent is not waited for, and does not re-arm). */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}

/** One timed step of the NVMe-oF bring-up (Connect, Property Get of CAP, …); the target plan's Step is a configfs operation. */
export interface TimedStep {
  step: string;
  ms: number;
}

export class Controller implements Disposable {
  readonly admin: NvmeQueue;
  /** What it was connected with. */
  readonly options: ControllerOptions;
  readonly steps: TimedStep[];
  cntlid = 0;
  cap: Capabilities | undefined;
  version = "";
  /** Connect data (REMOTE_READ) and the 4 KiB the target writes Identify/log data into. */
  readonly #connectMr: MemoryRegion;
  readonly #dataMr: MemoryRegion;
  #enabled = false;
  #closed = false;

  private constructor(admin: NvmeQueue, o: ControllerOptions, steps: TimedStep[]) {
    this.admin = admin;
    this.options = o;
    this.steps = steps;
    this.#connectMr = admin.register(CONNECT_DATA_SIZE, IBV_ACCESS.REMOTE_READ);
    this.#dataMr = admin.register(
      IDENTIFY_SIZE,
      IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE,
    );
  }

  static async #timed<T>(steps: TimedStep[], step: string, f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const r = await f();
    steps.push({ step, ms: Math.round((performance.now() - t0) * 1000) / 1000 });
    return r;
  }

  #time<T>(step: string, f: () => Promise<T>): Promise<T> {
    return Controller.#timed(this.steps, step, f);
  }

  /** Connects the admin queue and sends Fabrics Connect; reads CAP and VS. */
  static async connect(o: ControllerOptions): Promise<Controller> {
    const steps: TimedStep[] = [];
    const admin = await Controller.#timed(
      steps,
      "rdma connect (admin queue)",
      () =>
        NvmeQueue.open({
          host: o.host,
          port: o.port,
          qid: 0,
          depth: ADMIN_DEPTH,
          timeoutMs: o.timeoutMs,
          cancel: o.cancel,
        }),
    );
    const ctrl = new Controller(admin, o, steps);
    try {
      ctrl.cntlid = await ctrl.#time("fabrics connect", () => ctrl.#fabricsConnect(admin, 0xffff));
      ctrl.cap = decodeCap(await ctrl.#time("property get CAP", () => ctrl.getProperty(PROP.CAP)));
      ctrl.version = decodeVersion(
        Number(await ctrl.#time("property get VS", () => ctrl.getProperty(PROP.VS))),
      );
      return ctrl;
    } catch (err) {
      ctrl.#closed = true;
      admin.close();
      throw err;
    }
  }

  async #fabricsConnect(q: NvmeQueue, cntlid: number): Promise<number> {
    const mr = q === this.admin
      ? this.#connectMr
      : q.register(CONNECT_DATA_SIZE, IBV_ACCESS.REMOTE_READ);
    const { hostid, subnqn, hostnqn, host, port } = this.options;
    try {
      encodeConnectData({ hostid, cntlid, subnqn, hostnqn }, mr.bytes);
      connectSqe(
        q.sqes[0],
        0,
        { qid: q.qid, sqsize: q.depth - 1, kato: q.qid ? 0 : KATO_MS },
        NvmeQueue.sgl(mr, 0, CONNECT_DATA_SIZE),
      );
      const d = await q.execute(0, `Fabrics Connect of queue ${q.qid}`);
      if (d.status !== 0) {
        throw new NvmeStatusError(
          `Connect to '${subnqn}' at ${hostPort(host, port)} as '${hostnqn}'` +
            (q.qid ? ` (I/O queue ${q.qid})` : ""),
          d.status,
          { fabrics: true, subnqn, hostnqn },
        );
      }
      return Number(d.result & 0xffffn);
    } finally {
      if (q !== this.admin) mr.close();
    }
  }

  async getProperty(p: { offset: number; size: number }): Promise<bigint> {
    propertyGetSqe(this.admin.sqes[1], 1, p);
    const d = await this.admin.execute(1, `Property Get 0x${p.offset.toString(16)}`);
    if (d.status !== 0) {
      throw new NvmeStatusError(`Property Get 0x${p.offset.toString(16)}`, d.status, {
        fabrics: true,
      });
    }
    return p.size === 4 ? d.result & 0xffffffffn : d.result;
  }

  async setProperty(p: { offset: number; size: number }, value: number): Promise<void> {
    propertySetSqe(this.admin.sqes[1], 1, p, BigInt(value >>> 0));
    const d = await this.admin.execute(1, `Property Set 0x${p.offset.toString(16)}`);
    if (d.status !== 0) {
      throw new NvmeStatusError(`Property Set 0x${p.offset.toString(16)}`, d.status, {
        fabrics: true,
      });
    }
  }

  /** Waits until `ok(CSTS)` or CAP.TO passes (polling CSTS every few ms). */
  async #waitCsts(ok: (csts: number) => boolean, what: string, limitMs: number): Promise<number> {
    const deadline = performance.now() + limitMs;
    for (;;) {
      const csts = Number(await this.getProperty(PROP.CSTS));
      if (ok(csts)) return csts;
      if (csts & CSTS_CFS) {
        throw new FailureError(
          `The controller reports a fatal status (CSTS 0x${csts.toString(16)}) while ${what}.`,
        );
      }
      if (performance.now() > deadline) {
        throw new FailureError(
          `The controller was not ${what} after ${limitMs} ms (CSTS 0x${csts.toString(16)}).`,
        );
      }
      this.options.cancel?.check();
      await sleep(2);
    }
  }

  /** CC.EN = 1 with 64-byte SQEs, 16-byte CQEs, 4 KiB pages; waits for CSTS.RDY. */
  async enable(): Promise<void> {
    await this.#time("property set CC.EN", () => this.setProperty(PROP.CC, CC_ENABLE));
    this.#enabled = true;
    const limit = Math.max(this.cap?.timeoutMs ?? 0, 1000);
    await this.#time(
      "wait CSTS.RDY",
      () => this.#waitCsts((c) => (c & CSTS_RDY) !== 0, "ready", limit),
    );
  }

  async identifyController(): Promise<IdentifyController> {
    const buf = await this.#time("identify controller", () => this.#identify(1, 0));
    return decodeIdentifyController(buf);
  }

  async activeNamespaces(): Promise<number[]> {
    return decodeNamespaceList(
      await this.#time("identify active ns list", () => this.#identify(2, 0)),
    );
  }

  async identifyNamespace(nsid: number): Promise<IdentifyNamespace> {
    return decodeIdentifyNamespace(
      await this.#time(`identify namespace ${nsid}`, () => this.#identify(0, nsid)),
    );
  }

  async #identify(cns: number, nsid: number): Promise<Uint8Array> {
    const mr = this.#dataMr;
    mr.bytes.fill(0);
    identifySqe(this.admin.sqes[2], 2, cns, nsid, NvmeQueue.sgl(mr, 0, IDENTIFY_SIZE));
    const d = await this.admin.execute(2, `Identify CNS ${cns}`);
    if (d.status !== 0) {
      throw new NvmeStatusError(`Identify (CNS ${cns}, nsid ${nsid})`, d.status);
    }
    return mr.bytes.slice(0, IDENTIFY_SIZE);
  }

  /** Keep Alive (the admin Connect asks for KATO_MS). */
  async keepAlive(): Promise<void> {
    keepAliveSqe(this.admin.sqes[3], 3);
    const d = await this.#time("keep alive", () => this.admin.execute(3, "Keep Alive"));
    if (d.status !== 0) throw new NvmeStatusError("Keep Alive", d.status);
  }

  /** Sends Keep Alive every third of KATO_MS until the timer is stopped. */
  startKeepAlive(): KeepAliveTimer {
    return new KeepAliveTimer(() => this.keepAlive());
  }

  /** `length` bytes of log `lid` at `offset`, into `mr` (registered for remote write). */
  async getLogPage(
    lid: number,
    offset: number,
    mr: MemoryRegion,
    length: number,
  ): Promise<Uint8Array> {
    getLogPageSqe(this.admin.sqes[4], 4, lid, offset, NvmeQueue.sgl(mr, 0, length));
    const d = await this.admin.execute(4, `Get Log Page 0x${lid.toString(16)}`);
    if (d.status !== 0) {
      throw new NvmeStatusError(`Get Log Page 0x${lid.toString(16)}`, d.status);
    }
    return mr.bytes.slice(0, length);
  }

  /**
   * The discovery log as libnvme reads it: header, then all entries, then the header again,
   * retrying while the generation counter moves (up to 10 times).
   */
  async discoveryLog(): Promise<DiscoveryLog> {
    return await this.#time("get log page 0x70", async () => {
      let mr = this.#dataMr;
      let own: MemoryRegion | undefined;
      try {
        for (let attempt = 0; attempt < 10; attempt++) {
          const head = await this.getLogPage(DISCOVERY_LOG_ID, 0, mr, HEADER_SIZE);
          const dv = new DataView(head.buffer);
          const genctr = dv.getBigUint64(0, true);
          const numrec = Number(dv.getBigUint64(8, true));
          const total = HEADER_SIZE + numrec * ENTRY_SIZE;
          if (total > mr.bytes.length) {
            own?.close();
            own = this.admin.register(total, IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE);
            mr = own;
          }
          const all = await this.getLogPage(DISCOVERY_LOG_ID, 0, mr, total);
          const again = await this.getLogPage(DISCOVERY_LOG_ID, 0, this.#dataMr, 16);
          if (new DataView(again.buffer).getBigUint64(0, true) !== genctr) continue;
          const log = decodeLog(all);
          if (log.genctr !== genctr) continue;
          return log;
        }
        throw new FailureError("The discovery log kept changing while it was read (10 tries).");
      } finally {
        own?.close();
      }
    });
  }

  /** Connects I/O queue `qid` of `depth` entries (Fabrics Connect with this cntlid). */
  async connectIoQueue(qid: number, depth: number): Promise<NvmeQueue> {
    if (this.cap && depth > this.cap.mqes) {
      throw new FailureError(
        `Queue depth ${depth} exceeds the controller's maximum of ${this.cap.mqes} (CAP.MQES).`,
      );
    }
    const q = await NvmeQueue.open({
      host: this.options.host,
      port: this.options.port,
      qid,
      depth,
      timeoutMs: this.options.timeoutMs,
      cancel: this.options.cancel,
    });
    try {
      await this.#fabricsConnect(q, this.cntlid);
      return q;
    } catch (err) {
      q.close();
      throw err;
    }
  }

  /** CC.SHN = normal and wait for CSTS.SHST = complete (when enabled), then disconnect. */
  async shutdown(): Promise<void> {
    if (this.#closed) return;
    try {
      if (this.#enabled) {
        await this.#time(
          "property set CC.SHN",
          () => this.setProperty(PROP.CC, CC_ENABLE | CC_SHN_NORMAL),
        );
        await this.#time(
          "wait CSTS.SHST",
          () => this.#waitCsts(shutdownComplete, "shut down", 5000),
        );
      }
    } finally {
      const t0 = performance.now();
      this.close();
      this.steps.push({
        step: "rdma disconnect",
        ms: Math.round((performance.now() - t0) * 1000) / 1000,
      });
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.admin.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
