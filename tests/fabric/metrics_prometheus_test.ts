/**
 * nvmeof's metrics read by a real Prometheus on the lab fabric: the storage server exports one
 * subsystem on both links (guest_faults.sh's two rdma ports), host1 connects both paths (`nvmeof
 * connect -a A -a B`, the HA profile, iopolicy round-robin so both carry I/O) and runs verified
 * writes (fio). `nvmeof exporter` runs on both nodes and node_exporter on host1; Prometheus runs in
 * the storage server with the alert rules' short-`for:` copy (integrations/prometheus/README.md)
 * and scrapes them across link 0. Link 1 carries the faults, so the scrape of host1 survives them.
 *
 * Checked: node_exporter's RDMA port and controller states agree with nvmeof's in one scrape; an
 * NQN with a quote and a backslash comes back from Prometheus as it was made; 5 % loss on link 1
 * moves the rxe loss counters and fires NvmeofRoceLoss; a pulled cable on link 1 shows as
 * `nvmeof_path_up` 0 within two scrape intervals and the exporter's cache, fires NvmeofPathDown,
 * and both go back when the cable does, as `nvmeof top` in tmux shows; an rxe device removed (a
 * driver unloaded) leaves the nvmet port on it linked but not listening, which fires
 * NvmeofTargetPortNotListening. That device is the step's own, on a dummy netdev: when this test
 * removed link 1's rxe under host1's connected path, the test after it once found link 1 dead.
 */
import assert from "node:assert/strict";
import { DEFAULT_CACHE_MS, DEFAULT_EXPORTER_PORT } from "../../src/metrics/defaults.ts";
import { RDMA_PHYS_STATES, RDMA_PORT_STATES } from "../../src/metrics/rdma.ts";
import { addr, keepingLinks, must, netem, type Node, NVMEOF, on, setLink } from "./fabric.ts";
import { FAULTS, HA_NQN } from "./ha.ts";

/** Seconds between scrapes and between rule evaluations. */
const SCRAPE_S = 2;
/** The `for:` of the rules' short copy (integrations/prometheus/README.md). */
const FOR_S = 10;
/** The work folder on each node. */
const WORK = "/tmp/metrics_test";
/** Where Prometheus listens, inside the storage server only. */
const PROM = "http://127.0.0.1:9090";
/** node_exporter's port on host1. */
const NODE_EXPORTER_PORT = 9100;
/** The link Prometheus scrapes over, and the one the faults hit. */
const SCRAPE_LINK = 0;
const FAULT_LINK = 1;
/** The faulted path's target address. */
const FAULT_TRADDR = addr("target", FAULT_LINK);
/** A subsystem whose NQN needs escaping in a label value: a quote and a backslash (nvmet takes
 * any name without '/', whitespace or control characters: src/target/schema.ts NQN_PATTERN). */
const ODD_NQN = 'nqn.2024-01.io.nvmeof.metrics:q"uote\\back';
/** The rxe loss and retransmission counters NvmeofRoceLoss watches (nvmeof.rules.yml). */
const LOSS_COUNTERS =
  "duplicate_request|out_of_seq_request|rcvd_seq_err|completer_retry_err|retry_exceeded_err|retry_rnr_exceeded_err";
/** The not-listening step's own port, netdev, rxe device and address: no host uses them. */
const LONE_PORT = "93";
const LONE_NETDEV = "nvmeofnl0";
const LONE_RXE = "rxenl0";
const LONE_TRADDR = "10.79.0.1";
/** The tmux session `nvmeof top` runs in on host1. */
const TMUX = "metrics_test_top";

const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));
const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
/** A PromQL string literal (its escapes are Go's, which JSON's are for these characters). */
const promString = (s: string) => JSON.stringify(s);
const instance = (node: Node) => `${addr(node, SCRAPE_LINK)}:${DEFAULT_EXPORTER_PORT}`;
const nodeInstance = `${addr("host1", SCRAPE_LINK)}:${NODE_EXPORTER_PORT}`;

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}
interface Alert {
  labels: Record<string, string>;
  state: "pending" | "firing";
  activeAt: string;
}

/** An instant query to Prometheus, from inside the storage server; at TIME (Unix s) when given. */
async function query(q: string, time?: number): Promise<Sample[]> {
  const at = time === undefined ? "" : ` --data-urlencode time=${time}`;
  const out = await must(
    "target",
    `curl -sS --max-time 10 ${PROM}/api/v1/query --data-urlencode ${shq(`query=${q}`)}${at}`,
  );
  const j = JSON.parse(out);
  assert.equal(j.status, "success", out);
  return j.data.result as Sample[];
}

/** A range-vector query's one series, as [Unix s, value] pairs (none: []). */
async function range(q: string): Promise<[number, string][]> {
  const r = await query(q) as unknown as { values: [number, string][] }[];
  return r[0]?.values ?? [];
}

/** Prometheus' active alerts (pending or firing). */
async function alerts(): Promise<Alert[]> {
  const j = JSON.parse(await must("target", `curl -sS --max-time 10 ${PROM}/api/v1/alerts`));
  return j.data.alerts as Alert[];
}

/** Polls FN until it yields something other than undefined, at most LIMIT s; the value and when. */
async function waitFor<T>(
  what: string,
  limit: number,
  fn: () => Promise<T | undefined>,
): Promise<{ value: T; seconds: number }> {
  const start = Date.now();
  let last: unknown;
  while ((Date.now() - start) / 1000 < limit) {
    try {
      const v = await fn();
      if (v !== undefined) return { value: v, seconds: (Date.now() - start) / 1000 };
    } catch (e) {
      last = e;
    }
    await sleep(0.5);
  }
  throw new Error(`${what}: not within ${limit} s${last ? ` (last error: ${last})` : ""}`);
}

const firing =
  (name: string, match: (l: Record<string, string>) => boolean = () => true) => async () => {
    const a = (await alerts()).find((a) =>
      a.labels.alertname === name && a.state === "firing" && match(a.labels)
    );
    return a;
  };

/** Starts CMD in the background on NODE, its pid in WORK/NAME.pid, its output in WORK/NAME.log. */
function daemon(node: Node, name: string, cmd: string): Promise<string> {
  return must(
    node,
    `mkdir -p ${WORK}; (exec ${cmd}) </dev/null >${WORK}/${name}.log 2>&1 & echo $! >${WORK}/${name}.pid`,
  );
}

/** Stops what daemon started as NAME on NODE, by its pid (never throws). */
function stop(node: Node, name: string) {
  return on(
    node,
    `p=$(cat ${WORK}/${name}.pid 2>/dev/null) && kill "$p" 2>/dev/null; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done; true`,
  );
}

/** Waits until URL answers on NODE (curl from the node itself). */
function ready(node: Node, url: string, limit = 120) {
  return waitFor(`${url} on ${node}`, limit, async () => {
    const r = await on(node, `curl -sf --max-time 5 -o /dev/null ${url}`);
    return r.code === 0 ? true : undefined;
  });
}

/** The short-`for:` rules and the scrape configuration, written on the storage server. */
function prometheusConfig(): string {
  const targets = (xs: string[]) => `[${xs.map((x) => `'${x}'`).join(", ")}]`;
  return [
    "global:",
    `  scrape_interval: ${SCRAPE_S}s`,
    `  scrape_timeout: ${SCRAPE_S}s`,
    `  evaluation_interval: ${SCRAPE_S / 2}s`,
    "rule_files:",
    `  - ${WORK}/nvmeof.rules.short.yml`,
    "scrape_configs:",
    "  - job_name: nvmeof",
    "    static_configs:",
    `      - targets: ${targets([instance("target"), instance("host1")])}`,
    "  - job_name: node",
    "    static_configs:",
    `      - targets: ${targets([nodeInstance])}`,
    "",
  ].join("\n");
}

/** The faulted path's controller on host1 (nvmeN), from guest_faults.sh's list. */
async function faultCtrl(): Promise<string> {
  const out = await must("host1", `${FAULTS} ctrls`);
  const line = out.trim().split("\n").find((l) => l.endsWith(` ${FAULT_TRADDR}`));
  assert.ok(line, `no controller to ${FAULT_TRADDR}: ${out}`);
  return line.split(" ")[0];
}

/** The faulted path's nvmeof_path_up as Prometheus holds it (undefined: no sample). */
async function pathUp(ctrl: string): Promise<number | undefined> {
  const r = await query(
    `nvmeof_path_up{instance="${instance("host1")}",controller="${ctrl}"}`,
  );
  return r.length ? Number(r[0].value[1]) : undefined;
}

/** The screen of `nvmeof top` in tmux on host1. */
function topScreen(): Promise<string> {
  return must("host1", `tmux capture-pane -p -t ${TMUX}`);
}

/** The state top shows for the path to TRADDR, and whether its path device's line has I/O. */
function topPath(screen: string, traddr: string): { state: string; io: boolean } | undefined {
  const lines = screen.split("\n");
  const i = lines.findIndex((l) => l.includes(` ${traddr}:4420 `));
  if (i < 0) return undefined;
  const state = lines[i].split(`${traddr}:4420 `)[1].trim().split(/\s+/)[0];
  // The path device's line: its name, then the columns (r/s, w/s, MB/s…); any above 0 is I/O.
  const dev = lines[i + 1] ?? "";
  const io = /^\s+nvme\d+c\d+n\d+/.test(dev) &&
    dev.trim().split(/\s+/).slice(1).some((c) => Number(c) > 0);
  return { state, io };
}

Deno.test("prometheus on the fabric: node_exporter agrees, odd NQN, RoCE loss, path down, port not listening, top", async (t) => {
  await keepingLinks("host1", async () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    try {
      // The storage server's subsystem on both links, host1's two paths, verified writes.
      cleanups.push(() => on("target", `${FAULTS} target_down`));
      await must("target", `${FAULTS} target_up`);
      cleanups.push(() => on("host1", `${FAULTS} host_disconnect`));
      const dev = (await must("host1", `${FAULTS} host_connect nvmeof round-robin`)).trim();
      assert.match(dev, /^\/dev\/nvme\d+n1$/);
      cleanups.push(() => on("host1", `p=$(cat ${WORK}/io/fio.pid 2>/dev/null) && kill -INT "$p"`));
      await must("host1", `rm -rf ${WORK}/io; ${FAULTS} io_start ${dev} ${WORK}/io 600`);

      // The odd NQN: a subsystem any host may use, with no namespace and no port.
      const oddDir = shq(`/sys/kernel/config/nvmet/subsystems/${ODD_NQN}`);
      cleanups.push(() => on("target", `rmdir ${oddDir}`));
      await must("target", `mkdir ${oddDir} && echo 1 > ${oddDir}/attr_allow_any_host`);

      // Exporters on both nodes, node_exporter on host1, Prometheus on the storage server.
      for (const node of ["target", "host1"] as const) {
        cleanups.push(() => stop(node, "exporter"));
        await daemon(node, "exporter", `${NVMEOF} exporter --listen ${instance(node)}`);
      }
      cleanups.push(() => stop("host1", "node_exporter"));
      await daemon(
        "host1",
        "node_exporter",
        `prometheus-node-exporter --collector.disable-defaults --collector.infiniband --collector.nvme --collector.time --web.listen-address=${nodeInstance}`,
      );
      cleanups.push(() => stop("target", "prometheus"));
      await must(
        "target",
        `mkdir -p ${WORK} && sed -E 's/^( *for:) .*/\\1 ${FOR_S}s/' integrations/prometheus/nvmeof.rules.yml >${WORK}/nvmeof.rules.short.yml && cat >${WORK}/prometheus.yml <<'EOF'\n${prometheusConfig()}EOF\npromtool check config ${WORK}/prometheus.yml >/dev/null`,
      );
      await daemon(
        "target",
        "prometheus",
        `prometheus --config.file=${WORK}/prometheus.yml --storage.tsdb.path=${WORK}/tsdb --web.listen-address=127.0.0.1:9090`,
      );
      for (const node of ["target", "host1"] as const) {
        await ready(node, `http://${instance(node)}/metrics`);
      }
      await ready("host1", `http://${nodeInstance}/metrics`);
      await ready("target", `${PROM}/-/ready`);
      // Every scrape target up.
      const up = await waitFor("all three scrape targets up", 90, async () => {
        const r = await query("up == 1");
        return r.length === 3 ? r : undefined;
      });
      console.log(`scrape targets up after ${up.seconds.toFixed(1)} s more`);

      // nvmeof top on host1, in a terminal of 160 × 40.
      cleanups.push(() => on("host1", `tmux kill-session -t ${TMUX} 2>/dev/null; true`));
      await must(
        "host1",
        `tmux new-session -d -s ${TMUX} -x 160 -y 40 ${shq(`${NVMEOF} top --interval 1`)}`,
      );

      await t.step(
        "node_exporter agrees with nvmeof on the RDMA ports and the controllers",
        async () => {
          // The instant of the later of host1's two exporters' newest scrapes, when both were
          // good, as Prometheus stamped them: nothing newer (a failed scrape's stale marker) is
          // seen at it, and this machine's clock plays no part. A collection slower than the scrape
          // timeout leaves no such instant.
          const both = `instance=~"${instance("host1")}|${nodeInstance}"`;
          const { value: at } = await waitFor("host1's exporters scraped", 60, async () => {
            const r = await query(`timestamp(up{${both}}) and on (instance) (up{${both}} == 1)`);
            return r.length === 2 ? Math.max(...r.map((s) => Number(s.value[1]))) : undefined;
          });
          const pick = async (q: string, key: (m: Record<string, string>) => string) =>
            new Map((await query(q, at)).map((s) => [key(s.metric), s]));
          const port = (m: Record<string, string>) => `${m.device}/${m.port}`;
          const mine = `instance="${instance("host1")}"`;
          const theirs = `instance="${nodeInstance}"`;
          const compared: string[] = [];
          // RDMA ports: node_exporter 1.5's infiniband collector reads each port's counters/ (the
          // PMA counters), which rxe does not have: on Soft-RoCE it fails whole and exports nothing.
          const ib = await query(
            `node_scrape_collector_success{collector="infiniband",${theirs}}`,
            at,
          );
          const ibPorts = await query(`node_infiniband_state_id{${theirs}}`, at);
          if (ib[0]?.value[1] !== "1" || ibPorts.length === 0) {
            const hw = await query(`count(nvmeof_rdma_hw_stats_total{${mine}})`, at);
            const rdmaOk = await query(
              `nvmeof_scrape_collector_success{collector="rdma",${mine}}`,
              at,
            );
            const took = await query(`scrape_duration_seconds{${mine}}`, at);
            const seen = `node_exporter's infiniband collector: success ${
              ib[0]?.value[1]
            }, ${ibPorts.length} ports (rxe has no counters/); nvmeof: ${
              hw[0]?.value[1]
            } hw counters, rdma collector success ${rdmaOk[0]?.value[1]}, scrape ${
              took[0]?.value[1]
            } s (limit ${SCRAPE_S} s)`;
            console.log(seen);
            if (!(Number(hw[0]?.value[1]) > 0)) {
              const log = await on("host1", `tail -n 5 ${WORK}/exporter.log`);
              assert.fail(
                `nvmeof exports no rxe hw counters at ${at}: ${seen}; the exporter's log ends:\n${log.stdout}`,
              );
            }
          } else {
            // Port state and physical state: node_exporter's numbers, nvmeof's one-hot names.
            for (
              const [ne, nv, names] of [
                ["node_infiniband_state_id", "nvmeof_rdma_port_state", RDMA_PORT_STATES],
                [
                  "node_infiniband_physical_state_id",
                  "nvmeof_rdma_port_phys_state",
                  RDMA_PHYS_STATES,
                ],
              ] as const
            ) {
              const a = await pick(`${ne}{${theirs}}`, port);
              const b = await pick(`${nv}{${mine}} == 1`, port);
              assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort(), `${ne} vs ${nv}: ports`);
              for (const [k, s] of a) {
                // node_exporter's number is the sysfs number; nvmeof's names count from 1.
                assert.equal(names[Number(s.value[1]) - 1], b.get(k)!.metric.state, `${k}: ${ne}`);
              }
              compared.push(`${nv} = ${ne} (${[...a.keys()].join(", ")})`);
            }
            const rate = await pick(`node_infiniband_rate_bytes_per_second{${theirs}}`, port);
            const rate2 = await pick(`nvmeof_rdma_port_rate_bytes_per_second{${mine}}`, port);
            for (const [k, s] of rate) {
              assert.equal(s.value[1], rate2.get(k)?.value[1], `rate of ${k}`);
            }
            compared.push(
              "nvmeof_rdma_port_rate_bytes_per_second = node_infiniband_rate_bytes_per_second",
            );
          }
          // Controllers: node_nvme_info{device, state} against nvmeof_path_state{controller, state}.
          const info = await pick(`node_nvme_info{${theirs}}`, (m) => m.device);
          const st = await pick(`nvmeof_path_state{${mine}} == 1`, (m) => m.controller);
          assert.ok(info.size >= 2, `node_nvme_info: ${[...info.keys()]}`);
          for (const [c, s] of info) {
            assert.equal(
              s.metric.state,
              st.get(c)?.metric.state,
              `${c}: node_nvme_info vs path_state`,
            );
          }
          compared.push(
            `nvmeof_path_state = node_nvme_info{state} (${[...info.keys()].join(", ")})`,
          );
          console.log(`agree: ${compared.join("; ")}`);
          // What nvmeof exports that node_exporter (infiniband, nvme) does not.
          const equivalents = new Set([
            "nvmeof_rdma_port_state",
            "nvmeof_rdma_port_phys_state",
            "nvmeof_rdma_port_rate_bytes_per_second",
            "nvmeof_path_state",
          ]);
          const names = (await query(`count by (__name__) ({job="nvmeof"})`, at))
            .map((s) => s.metric.__name__)
            .filter((n) => n.startsWith("nvmeof_") && !equivalents.has(n)).sort();
          console.log(`nvmeof only (${names.length}): ${names.join(" ")}`);
          assert.ok(names.includes("nvmeof_rdma_hw_stats_total"));
        },
      );

      await t.step(
        "an NQN with a quote and a backslash parses and comes back as made",
        async () => {
          const raw = await must(
            "target",
            `curl -sS --max-time 10 http://${instance("target")}/metrics`,
          );
          const line = raw.split("\n").find((l) =>
            l.startsWith("nvmeof_target_subsystem_allow_any_host{") && l.includes('q\\"uote')
          );
          console.log(`exposition: ${line}`);
          assert.ok(line?.includes('q\\"uote\\\\back'), "escaped in the exposition");
          const r = await waitFor("the odd NQN in Prometheus", 30, async () => {
            const r = await query(
              `nvmeof_target_subsystem_allow_any_host{subsystem_nqn=${promString(ODD_NQN)}}`,
            );
            return r.length ? r : undefined;
          });
          assert.equal(r.value[0].metric.subsystem_nqn, ODD_NQN);
          assert.equal(r.value[0].value[1], "1");
        },
      );

      await t.step(
        "5 % loss on link 1 under I/O: rxe's loss counters rise, NvmeofRoceLoss fires",
        async () => {
          const loss = async () =>
            new Map(
              (await query(
                `sum by (instance, device, counter) (nvmeof_rdma_hw_stats_total{counter=~"${LOSS_COUNTERS}"})`,
              )).map((s) => [
                `${s.metric.instance} ${s.metric.device} ${s.metric.counter}`,
                Number(s.value[1]),
              ]),
            );
          const before = await loss();
          const already = (await alerts()).filter((a) => a.labels.alertname === "NvmeofRoceLoss");
          // Not asserted quiet before: on a starved guest rxe retransmits with no loss at all
          // (completer_retry_err rises), which the alert rightly reports; the count is printed.
          const fault = await netem("host1", FAULT_LINK, "loss 5%");
          cleanups.push(() => fault.undo());
          let rose: string[] = [];
          try {
            const fired = await waitFor("NvmeofRoceLoss firing", 90, async () => {
              const now = await loss();
              rose = [...now].filter(([k, v]) => v > (before.get(k) ?? 0)).map(([k, v]) =>
                `${k} ${before.get(k) ?? 0}→${v}`
              );
              if (rose.length === 0) return undefined;
              return await firing("NvmeofRoceLoss")();
            });
            console.log(
              `loss 5%: rose: ${rose.join("; ")}; NvmeofRoceLoss firing after ${
                fired.seconds.toFixed(1)
              } s (${fired.value.labels.instance} ${fired.value.labels.device} ${fired.value.labels.counter}); pending or firing before: ${already.length}`,
            );
          } finally {
            console.log(`loss counters seen rising: ${rose.join("; ") || "none"}`);
            await fault.undo();
            const paths = await must(
              "host1",
              `${FAULTS} ctrls | while read n a; do echo "$a $(cat /sys/class/nvme/$n/state)"; done`,
            );
            console.log(`paths after the loss: ${paths.trim().replaceAll("\n", "; ")}`);
          }
        },
      );

      await t.step(
        "link 1 cut: path_up 0 within two scrapes, NvmeofPathDown fires, both go back; top shows it",
        async () => {
          const ctrl = await faultCtrl();
          // The loss before may have sent the path through a reconnect: it starts live.
          const live = await waitFor(
            "the link 1 path live before the cut",
            90,
            async () => (await pathUp(ctrl)) === 1 ? true : undefined,
          ).catch(async (e) => {
            // Whether the kernel's path or the scrape of host1 (over link 0) is what did not come.
            const kernel = await on("host1", `cat /sys/class/nvme/${ctrl}/state`);
            const up = await query(`up{instance="${instance("host1")}"}`).then(
              (r) => r.map((x) => x.value[1]).join(", ") || "no sample",
              (q) => `the query failed: ${q}`,
            );
            const ping = await on("target", `ping -c 2 -W 2 ${addr("host1", SCRAPE_LINK)}`);
            throw new Error(
              `${e.message}; the kernel's state of ${ctrl}: ${
                kernel.stdout.trim() || kernel.stderr.trim()
              }; Prometheus' up for host1: ${up}; ping from the target to ${
                addr("host1", SCRAPE_LINK)
              }: exit ${ping.code}`,
            );
          });
          console.log(`link 1 path live in Prometheus ${live.seconds.toFixed(1)} s into the step`);
          const calm = await waitFor("top showing both paths with I/O", 30, async () => {
            const s = await topScreen();
            const a = topPath(s, addr("target", 0)), b = topPath(s, FAULT_TRADDR);
            return a?.state === "live" && b?.state === "live" && a.io && b.io ? s : undefined;
          });
          console.log(`top before the cut:\n${calm.value}`);
          const cutAt = Date.now();
          await setLink("target", FAULT_LINK, false, "host1");
          await setLink("host1", FAULT_LINK, false);
          let restored = false;
          const restore = async () => {
            if (restored) return;
            restored = true;
            await setLink("target", FAULT_LINK, true, "host1");
            await setLink("host1", FAULT_LINK, true);
          };
          cleanups.push(restore);
          try {
            const since = () => ((Date.now() - cutAt) / 1000).toFixed(1);
            const kernel = await waitFor("the kernel's state leaving live", 60, async () => {
              const s = (await must("host1", `cat /sys/class/nvme/${ctrl}/state`)).trim();
              return s === "live" ? undefined : s;
            });
            const kernelAt = since();
            await waitFor(
              "nvmeof_path_up 0",
              60,
              async () => (await pathUp(ctrl)) === 0 ? true : undefined,
            );
            const downAt = since();
            const fired = await waitFor(
              "NvmeofPathDown firing",
              120,
              firing("NvmeofPathDown", (l) => l.controller === ctrl && l.traddr === FAULT_TRADDR),
            );
            const firedAt = since();
            const topCut = await waitFor("top showing the cut path not live", 20, async () => {
              const s = await topScreen();
              const p = topPath(s, FAULT_TRADDR);
              return p && p.state !== "live" ? s : undefined;
            });
            // The same moments on one clock: host1's poller (guest_faults.sh io_start) logs its
            // carrier and each path's state every 100 ms on host1's clock; Prometheus stamps each
            // sample with its own (the storage server's), and node_time_seconds gives host1's
            // clock at each scrape, so their offset.
            const [carrierAt, leftAt] = (await must(
              "host1",
              `awk -v a=${FAULT_TRADDR} '/carrier${FAULT_LINK}=0/ && !c { c = $1 } c && !k { for (i = 2; i <= NF; i++) { split($i, f, ":"); if (f[2] == a && f[3] != "live") k = $1 } } END { print c, k }' ${WORK}/io/paths.log`,
            )).trim().split(" ").map(Number);
            const clock = await range(`node_time_seconds{instance="${nodeInstance}"}[20s]`);
            const offsets = clock.map(([t, v]) => Number(v) - t).sort((a, b) => a - b);
            const offset = offsets[offsets.length >> 1];
            const ups = await range(
              `nvmeof_path_up{instance="${instance("host1")}",controller="${ctrl}"}[3m]`,
            );
            // The first sample of the run of zeros the series ends with.
            let zeroAt = NaN;
            for (let i = ups.length - 1; i >= 0 && ups[i][1] === "0"; i--) zeroAt = ups[i][0];
            const stale = zeroAt + offset - leftAt;
            const failed = await query(
              `count_over_time(up{instance="${
                instance("host1")
              }"}[1m]) - sum_over_time(up{instance="${instance("host1")}"}[1m])`,
            );
            const slowest = (await query(
              `max by (collector) (max_over_time(nvmeof_scrape_duration_seconds{instance="${
                instance("host1")
              }"}[1m]))`,
            )).map((r) => `${r.metric.collector} ${Number(r.value[1]).toFixed(2)} s`).join(", ");
            console.log(
              `cut, on host1's clock: the kernel left live ${
                (leftAt - carrierAt).toFixed(1)
              } s after carrier loss (${kernel.value}); the first path_up 0 sample ${
                stale.toFixed(1)
              } s after that (clock offset ${offset.toFixed(2)} s); NvmeofPathDown pending since ${
                (Date.parse(fired.value.activeAt) / 1000 - zeroAt).toFixed(1)
              } s after that sample; failed scrapes of host1 in the last minute: ${
                failed[0]?.value[1]
              } (slowest collectors: ${slowest}). Polled from this machine: kernel at ${kernelAt}, path_up 0 at ${downAt}, firing at ${firedAt}, top not live at ${since()} s after the cut\ntop during the cut:\n${topCut.value}`,
            );
            // Two scrapes and the exporter's cache after the kernel's change, and 1 s for the
            // collection itself on the guest's emulated CPU.
            assert.ok(
              stale <= 2 * SCRAPE_S + DEFAULT_CACHE_MS / 1000 + 1,
              `the first path_up 0 sample came ${stale.toFixed(1)} s after the kernel's change`,
            );
            assert.equal(fired.value.labels.severity, "warning");
            await restore();
            const backAt = Date.now();
            const back = await waitFor(
              "nvmeof_path_up 1 again",
              90,
              async () => (await pathUp(ctrl)) === 1 ? true : undefined,
            );
            const resolved = await waitFor("NvmeofPathDown resolved", 30, async () => {
              const a = await firing("NvmeofPathDown", (l) => l.controller === ctrl)();
              return a ? undefined : true;
            });
            const topBack = await waitFor("top showing the path live again", 20, async () => {
              const s = await topScreen();
              return topPath(s, FAULT_TRADDR)?.state === "live" ? s : undefined;
            });
            console.log(
              `restored: path_up 1 after ${back.seconds.toFixed(1)} s, alert resolved ${
                resolved.seconds.toFixed(1)
              } s later (${
                ((Date.now() - backAt) / 1000).toFixed(1)
              } s in all)\ntop after:\n${topBack.value}`,
            );
          } finally {
            await restore();
          }
          // The writes went on through the cut, verified.
          await must("host1", `${FAULTS} io_finish ${WORK}/io ${FAULT_TRADDR} 60`, {
            timeout: 200,
          });
          const fio = JSON.parse(
            await must(
              "host1",
              `python3 -c 'import json,sys; t=open(sys.argv[1]).read(); j=json.loads(t[t.index("{"):])["jobs"][0]; print(json.dumps([j["error"], j["write"]["total_ios"], j["read"]["total_ios"]]))' ${WORK}/io/fio.json`,
            ),
          ) as [number, number, number];
          console.log(`fio: error ${fio[0]}, writes ${fio[1]}, verified reads ${fio[2]}`);
          assert.equal(fio[0], 0, "fio saw an error");
          assert.ok(fio[1] > 0 && fio[2] > 0);
        },
      );

      await t.step(
        "an rxe device removed under a linked port: not listening, the alert fires",
        async () => {
          // A port of its own, on a dummy netdev with its own rxe device, so that removing the
          // device (a driver unloaded) touches no link a host uses.
          const port = LONE_PORT;
          const dir = `/sys/kernel/config/nvmet/ports/${port}`;
          const listening = async () => {
            const r = await query(
              `nvmeof_target_port_listening{instance="${instance("target")}",port="${port}"}`,
            );
            return r.length ? Number(r[0].value[1]) : undefined;
          };
          cleanups.push(() =>
            on(
              "target",
              `rm -f ${dir}/subsystems/${HA_NQN}; rmdir ${dir} 2>/dev/null; rdma link delete ${LONE_RXE} 2>/dev/null; ip link del ${LONE_NETDEV} 2>/dev/null; true`,
            )
          );
          await must(
            "target",
            [
              `modprobe dummy numdummies=0`,
              `ip link add ${LONE_NETDEV} type dummy`,
              `ip addr add ${LONE_TRADDR}/24 dev ${LONE_NETDEV}`,
              `ip link set ${LONE_NETDEV} up`,
              `rdma link add ${LONE_RXE} type rxe netdev ${LONE_NETDEV}`,
              `mkdir ${dir}`,
              `echo rdma >${dir}/addr_trtype`,
              `echo ipv4 >${dir}/addr_adrfam`,
              `echo ${LONE_TRADDR} >${dir}/addr_traddr`,
              `echo 4420 >${dir}/addr_trsvcid`,
              `ln -s /sys/kernel/config/nvmet/subsystems/${HA_NQN} ${dir}/subsystems/${HA_NQN}`,
            ].join(" && "),
          );
          await waitFor(
            `port ${port} listening 1`,
            60,
            async () => (await listening()) === 1 ? true : undefined,
          );
          const goneAt = Date.now();
          await must("target", `rdma link delete ${LONE_RXE}`);
          const notListening = await waitFor(
            `port ${port} listening 0`,
            60,
            async () => (await listening()) === 0 ? true : undefined,
          );
          const subs = await query(
            `nvmeof_target_port_subsystems{instance="${instance("target")}",port="${port}"}`,
          );
          assert.equal(subs[0]?.value[1], "1", "the subsystem is still linked");
          const fired = await waitFor(
            "NvmeofTargetPortNotListening firing",
            60,
            firing("NvmeofTargetPortNotListening", (l) => l.port === port),
          );
          console.log(
            `${LONE_RXE} removed: listening 0 after ${
              notListening.seconds.toFixed(1)
            } s, alert firing ${
              ((Date.now() - goneAt) / 1000).toFixed(1)
            } s after the removal (${fired.value.labels.traddr}:${fired.value.labels.trsvcid}, ${fired.value.labels.severity})`,
          );
          assert.equal(fired.value.labels.traddr, LONE_TRADDR);
          assert.equal(fired.value.labels.severity, "critical");
        },
      );
    } finally {
      for (const c of cleanups.reverse()) await c().catch(() => {});
      await on("target", `rm -rf ${WORK}`);
      await on("host1", `rm -rf ${WORK}`);
    }
  });
});
