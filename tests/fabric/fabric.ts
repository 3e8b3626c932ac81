/**
 * The fabric tier's harness: commands on the named machines of the lab fabric (`scripts/lab
 * fabric`, booted once per run by `scripts/test fabric`), and the faults a test causes on the
 * wire. Every call goes through `scripts/lab fabric`, the one definition of how the host reaches
 * a node.
 *
 *   target   the storage server: 10.78.0.1 (link 0), 10.78.1.1 (link 1), second disk /dev/vdb
 *   host1    a compute node: 10.78.0.2, 10.78.1.2
 *   host2    a compute node: 10.78.0.3, 10.78.1.3
 * On every node the link netdevs are fab0 and fab1 (bridges on the target), with rxe0 and rxe1.
 */
import { ROOT, type RunResult } from "../helpers.ts";

/** A machine of the fabric. */
export type Node = "target" | "host1" | "host2";

/** The compute nodes. */
export const HOSTS: readonly Node[] = ["host1", "host2"];

/** NODE's address on link 0 or 1. */
export function addr(node: Node, link: 0 | 1 = 0): string {
  const last = node === "target" ? 1 : Number(node.slice(4)) + 1;
  return `10.78.${link}.${last}`;
}

/** The launcher's path, the same on every node (they see this checkout read-only). */
export const NVMEOF = `${ROOT}/scripts/nvmeof`;

async function lab(args: string[]): Promise<RunResult> {
  const out = await new Deno.Command(`${ROOT}/scripts/lab`, {
    args,
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Options of a command on a node. */
export interface OnOptions {
  /** Seconds before the node's agent stops it (exit 124). Default 300. */
  timeout?: number;
}

/** Runs ARGV as root on NODE, in the checkout; never throws. Exit 98: the node died meanwhile. */
export function run(node: Node, argv: string[], o: OnOptions = {}): Promise<RunResult> {
  return lab(["fabric", "exec", "--timeout", String(o.timeout ?? 300), node, "--", ...argv]);
}

/** `bash -c SCRIPT` as root on NODE; never throws. */
export function on(node: Node, script: string, o: OnOptions = {}): Promise<RunResult> {
  return run(node, ["bash", "-c", script], o);
}

/** `bash -c SCRIPT` on NODE; its stdout, or an error with the exit code and stderr. */
export async function must(node: Node, script: string, o: OnOptions = {}): Promise<string> {
  const r = await on(node, script, o);
  if (r.code !== 0) throw new Error(`${node}: ${script}: exit ${r.code}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** `scripts/nvmeof ARGS…` on NODE. */
export function nvmeofOn(node: Node, args: string[], o: OnOptions = {}): Promise<RunResult> {
  return run(node, [NVMEOF, ...args], o);
}

/** `nvmeof … -o json` on NODE, parsed; throws unless it exits 0. */
export async function jsonOn<T = unknown>(node: Node, args: string[]): Promise<T> {
  const r = await nvmeofOn(node, [...args, "-o", "json"]);
  if (r.code !== 0) {
    throw new Error(`${node}: nvmeof ${args.join(" ")}: exit ${r.code}: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as T;
}

async function labMust(args: string[]): Promise<void> {
  const r = await lab(args);
  if (r.code !== 0) throw new Error(`scripts/lab ${args.join(" ")}: exit ${r.code}: ${r.stderr}`);
}

/**
 * The carrier of NODE's NIC on LINK, as a pulled cable (QEMU's set_link): the netdev reports
 * NO-CARRIER and its rxe port goes DOWN. On the target, only the NIC towards PEER when given.
 */
export function setLink(node: Node, link: 0 | 1, up: boolean, peer?: Node): Promise<void> {
  return labMust([
    "fabric",
    "link",
    node,
    String(link),
    up ? "on" : "off",
    ...(peer ? [peer] : []),
  ]);
}

/** Cuts NODE's power (its qemu is killed); its disks keep what reached them. */
export function powerCut(node: Node): Promise<void> {
  return labMust(["fabric", "power-cut", node]);
}

/** Boots NODE again from its own disks and waits for it. */
export function boot(node: Node): Promise<void> {
  return labMust(["fabric", "boot", node]);
}

/** The host NQN of NODE, made on first use (`nvmeof hostnqn --generate`). */
export async function hostnqnOf(node: Node): Promise<string> {
  const r = await jsonOn<{ hostnqn: string }>(node, ["hostnqn", "--generate"]);
  return r.hostnqn;
}

/** Runs FN, then always every cleanup in CLEANUPS (in reverse), reporting the first error. */
export async function withCleanup<T>(
  fn: (defer: (cleanup: () => Promise<unknown>) => void) => Promise<T>,
): Promise<T> {
  const stack: (() => Promise<unknown>)[] = [];
  try {
    return await fn((c) => stack.push(c));
  } finally {
    for (const c of stack.reverse()) await c().catch(() => {});
  }
}
