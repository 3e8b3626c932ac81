/**
 * The fabric tier's harness: commands on the named machines of the lab fabric (`scripts/lab/lab
 * fabric`, booted once per run by `scripts/test fabric`), and the faults a test causes on the
 * wire. Every call goes through `scripts/lab/lab fabric`, the one definition of how the host reaches
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
  const out = await new Deno.Command(`${ROOT}/scripts/lab/lab`, {
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
  if (r.code !== 0) {
    throw new Error(`scripts/lab/lab ${args.join(" ")}: exit ${r.code}: ${r.stderr}`);
  }
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

/** A fault inside a guest, undone by `undo()` (idempotent). */
export interface Fault {
  undo(): Promise<void>;
}

async function fault(node: Node, make: string, undo: string): Promise<Fault> {
  await must(node, make);
  let done = false;
  return {
    async undo() {
      if (done) return;
      done = true;
      await must(node, undo);
    },
  };
}

/**
 * netem on NODE's link netdev: e.g. "loss 5%", "delay 20ms", "loss 100%" (a blackhole: the carrier
 * stays up, every packet NODE sends on that link is dropped).
 */
export function netem(node: Node, link: 0 | 1, spec: string): Promise<Fault> {
  return fault(
    node,
    `tc qdisc replace dev fab${link} root netem ${spec}`,
    `tc qdisc del dev fab${link} root 2>/dev/null; true`,
  );
}

/** An nftables rule on NODE dropping what comes in to PROTO port PORT (e.g. udp 4791: RoCEv2). */
export function dropIncoming(node: Node, proto: "udp" | "tcp", port: number): Promise<Fault> {
  const table = `fabric_drop_${proto}_${port}`;
  return fault(
    node,
    `nft add table inet ${table} && nft add chain inet ${table} in '{ type filter hook input priority 0; }' && nft add rule inet ${table} in ${proto} dport ${port} drop`,
    `nft delete table inet ${table} 2>/dev/null; true`,
  );
}

/** The MTU of NODE's link netdev (and, on the target's bridge, of every port under it). */
export async function setMtu(node: Node, link: 0 | 1, mtu: number): Promise<Fault> {
  const before = (await must(node, `cat /sys/class/net/fab${link}/mtu`)).trim();
  const set = (m: string) =>
    `for p in /sys/class/net/fab${link}/brif/*; do [ -e "$p" ] && ip link set "\${p##*/}" mtu ${m}; done; ip link set fab${link} mtu ${m}`;
  return fault(node, set(String(mtu)), set(before));
}

/**
 * What is wrong with NODE's links, a line each (link 0's first); none when both are as a boot
 * leaves them: no qdisc a fault puts there (netem, ingress), each rxe port ACTIVE, and the target
 * answering pings on each link. A test that makes faults runs it at its end (keepingLinks), so
 * both links are checked at once, and the three pings go 0.2 s apart (one answered is enough).
 */
export async function linkProblems(node: Node): Promise<string[]> {
  const checks = ([0, 1] as const).map((l) => {
    const t = addr("target", l);
    return [
      `q=$(tc qdisc show dev fab${l} | grep -E 'netem|ingress' | tr '\\n' ';')`,
      `[ -z "$q" ] || echo "fab${l} still has a fault's qdisc: $q"`,
      `rdma link show rxe${l}/1 | grep -q 'state ACTIVE' || echo "rxe${l}: $(rdma link show rxe${l}/1)"`,
      `ping -c 3 -i 0.2 -W 2 -I fab${l} ${t} >/dev/null 2>&1 || echo "no ping reply from ${t} on fab${l}"`,
    ].join("; ");
  });
  // Link 1's check runs beside link 0's, into a pipe read once link 0's has said its lines (in
  // that order), with no mktemp, cat or rm started in the guest.
  const script = `exec 3< <(${checks[1]}); ${checks[0]}; ` +
    `while IFS= read -r l; do echo "$l"; done <&3`;
  const r = await on(node, script, { timeout: 60 });
  if (r.code !== 0) return [`the link check on ${node} failed (exit ${r.code}): ${r.stderr}`];
  return r.stdout.split("\n").filter((s) => s !== "");
}

/**
 * NODE's and the target's view of the links, for an error message, and the cables' sockets on
 * this machine: a datagram left waiting in one (Recv-Q) says which end stopped taking them.
 */
async function linkState(node: Node): Promise<string> {
  const script = [
    "for l in 0 1; do tc qdisc show dev fab$l; done",
    "ip neigh show",
    "rdma link",
    'for d in /sys/class/net/*/statistics; do n=${d%/statistics}; echo "${n##*/} rx $(<$d/rx_packets) tx $(<$d/tx_packets)"; done',
    "grep MemAvailable /proc/meminfo",
    "dmesg | tail -15",
  ].join("; ");
  const parts = [];
  for (const n of new Set<Node>([node, "target"])) {
    const r = await on(n, script, { timeout: 60 });
    parts.push(`--- ${n}\n${r.stdout}${r.stderr}`);
  }
  const dir = (await lab(["fabric", "dir"])).stdout.trim();
  const ss = await new Deno.Command("ss", { args: ["-xan"], stdout: "piped", stderr: "null" })
    .output().catch(() => undefined);
  const cables = ss
    ? new TextDecoder().decode(ss.stdout).split("\n").filter((l) => l.includes(`${dir}/s/`))
    : ["(ss did not run)"];
  parts.push(`--- cables (Recv-Q Send-Q of each end's socket)\n${cables.join("\n")}`);
  return parts.join("\n");
}

/**
 * Puts NODE's links back when a test left them other than a boot does, so the tests after it run
 * on a sound fabric: clears the fault's qdiscs and both ends' neighbour caches, then, if that is
 * not enough, pulls and restores the cable at both ends, and last cycles the power of NODE, then
 * of the storage server. Resolves to undefined when nothing was wrong; otherwise to an error
 * naming what was found, what put it back (or that nothing did), and the state as found.
 */
export async function restoreLinks(node: Node): Promise<Error | undefined> {
  const found = await linkProblems(node);
  if (found.length === 0) return undefined;
  const state = await linkState(node);
  const flush = "for l in 0 1; do ip neigh flush dev fab$l; done";
  // guest_faults.sh's own off switch for its faults (netem and ingress qdiscs on either link).
  await on(
    node,
    `for l in 0 1; do tests/fabric/guest_faults.sh blackhole $l off; done >/dev/null 2>&1; ${flush}`,
  );
  await on("target", flush);
  let left = await linkProblems(node);
  for (let k = 0; k < 2 && left.length > 0; k++) {
    for (const l of [0, 1] as const) {
      await setLink("target", l, false, node).catch(() => {});
      await setLink(node, l, false).catch(() => {});
      await setLink("target", l, true, node).catch(() => {});
      await setLink(node, l, true).catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 10_000));
    left = await linkProblems(node);
  }
  // Still dead after the carrier: a virtual NIC stuck below the guest (in two CI runs the storage
  // server's log said "NETDEV WATCHDOG ... transmit queue 0 timed out" for its NIC towards NODE).
  // A power cycle gives a node new NICs and its ends of the cables new sockets: NODE first, then
  // the storage server. A node boots as the tests expect to find it.
  const cycled: Node[] = [];
  for (const n of [node, "target"] as const) {
    if (left.length === 0) break;
    await powerCut(n).catch(() => {});
    await boot(n).catch(() => {});
    cycled.push(n);
    left = await linkProblems(node);
  }
  const how = ["qdiscs, neighbour caches, carrier", ...cycled.map((n) => `${n}'s power`)];
  const outcome = left.length === 0
    ? `Put back (${how.join(", ")}); the tests after this one run on a sound fabric.`
    : `Still wrong after every repair (${how.join(", ")}): ${left.join("; ")}.`;
  return new Error(
    `${node}'s links were not as a boot leaves them after the test: ${
      found.join("; ")
    }. ${outcome}\n${state}`,
  );
}

/**
 * Runs BODY, then puts NODE's links back (restoreLinks): a fault that outlived BODY fails it, with
 * what was found, instead of failing every test after it. When BODY itself threw, its error goes
 * on and the links' report is printed beside it.
 */
export async function keepingLinks<T>(node: Node, body: () => Promise<T>): Promise<T> {
  let value: T;
  try {
    value = await body();
  } catch (e) {
    const links = await restoreLinks(node);
    if (links) console.error(links.message);
    throw e;
  }
  const links = await restoreLinks(node);
  if (links) throw links;
  return value;
}
