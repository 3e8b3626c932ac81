#!/usr/bin/env bash
# Who takes the CPU from the ping's spinning loops: runs ib_write_lat and `nvmeof rdma ping --op
# write` one after the other (each client and server a spinning pair, as in bench_rdma.sh), each
# traced with the kernel's sched_switch events, and prints each one's latency and, from the trace
# (scripts/bench/sched_report.ts), how often and how long its spinning threads were preempted and
# what ran on their CPU instead. Counts and shares, not times of this machine: meant for the lab
# guest, where they hold even when the host is loaded:
#   scripts/lab run --timeout 900 -- scripts/bench_ping_sched.sh
# nvmeof runs twice: as the launcher runs it (V8 single-threaded, NVMEOF_V8_FLAGS in lib.sh), then
# with V8's defaults, its compiler and GC worker threads beside the spinners (THREADS=0 skips it).
# Environment: ADDR (default 10.77.0.1), ITERS (default 5000), SIZE (default 64), KEEP (a
# directory to keep the traces in), V8_FLAGS (more V8 flags for a third run, to try a variation;
# default none), WARMUP (nvmeof's untimed iterations first, `--warmup`; the
# report reads only the timed loop, so what the runtime does once the code is compiled shows).
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS="${ITERS:-5000}"
SIZE="${SIZE:-64}"
V8_FLAGS="${V8_FLAGS:-}"
THREADS="${THREADS:-1}"
. scripts/bench/deno_lib.sh
command -v ib_write_lat >/dev/null || die "ib_write_lat is missing (apt-get install perftest)"
. scripts/bench/trace_lib.sh
work="${KEEP:-$(mktemp -d)}"
mkdir -p "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; echo 0 >"$T/tracing_on"; }
trap cleanup EXIT

report() { "$deno" run "${NVMEOF_RUN_FLAGS[@]}" --allow-read scripts/bench/sched_report.ts "$@"; }

echo "write $SIZE B × $ITERS, one guest, client and server spinning"
# perftest: both sides are one thread each.
trace_on 16384 sched/sched_switch
ib_write_lat -R -F -s "$SIZE" -n "$ITERS" -p 18517 >/dev/null 2>&1 &
sp=$!
pids+=("$sp")
sleep 1
ib_write_lat -R -F -s "$SIZE" -n "$ITERS" -p 18517 "$ADDR" >"$work/perftest.out" 2>&1 &
cp=$!
pids+=("$cp")
# Bounded by a sleeping watchdog (a timeout(1) would put its PID where the spinner's should be):
# when a client dies (ib_write_lat has segfaulted under TCG) its server would wait forever.
{ sleep 600 && kill "$sp" "$cp"; } 2>/dev/null &
dog=$!
wait "$cp" || die "ib_write_lat failed: $(tail -3 "$work/perftest.out")"
wait "$sp"
kill "$dog" 2>/dev/null
trace_off "$work/perftest.trace"
awk -v s="$SIZE" '$1 == s { printf "ib_write_lat one-way µs: median %s, average %s, p99 %s\n", $5, $6, $8 }' "$work/perftest.out"
# Its loop: the iterations at the average round trip (twice the one-way t_avg).
loop_ms=$(awk -v s="$SIZE" -v n="$ITERS" '$1 == s { print n * $6 * 2 / 1000 }' "$work/perftest.out")
report "$work/perftest.trace" "ib_write_lat" "$sp,$cp" '^ib_write_lat' "$loop_ms"

# nvmeof_run LABEL [V8 FLAGS]: one nvmeof ping pair, traced, and its report. Deno is run as the
# launcher runs it (exec, so each side's first thread, the one that spins, has the PID $! says);
# V8 FLAGS "defaults" leaves out the launcher's own V8 flags.
port=7183
nvmeof_run() {
  local label="$1" flags=() run_flags=() f sp cp loop_ms
  port=$((port + 1))
  for f in "${NVMEOF_RUN_FLAGS[@]}"; do
    [ "${2:-}" = defaults ] && [ "$f" = "--v8-flags=$NVMEOF_V8_FLAGS" ] && continue
    run_flags+=("$f")
  done
  [ -n "${2:-}" ] && [ "$2" != defaults ] && flags=(--v8-flags="$2")
  nvmeof() { exec "$deno" run "${run_flags[@]}" "${NVMEOF_PERMS[@]}" "${flags[@]}" main.ts "$@"; }
  trace_on 16384 sched/sched_switch
  nvmeof rdma ping --server -a "$ADDR" -p "$port" 2>"$work/server.log" &
  sp=$!
  pids+=("$sp")
  wait_listening "$work/server.log" || die "the nvmeof ping server did not listen: $(cat "$work/server.log")"
  nvmeof rdma ping -a "$ADDR" -p "$port" --op write --size "$SIZE" -c "$ITERS" \
    ${WARMUP:+--warmup "$WARMUP"} -o json >"$work/nvmeof.json" &
  cp=$!
  { sleep 600 && kill "$sp" "$cp"; } 2>/dev/null &
  dog=$!
  wait "$cp" || die "nvmeof rdma ping failed"
  kill "$dog" 2>/dev/null
  trace_off "$work/$label.trace"
  kill "$sp" 2>/dev/null
  wait "$sp" 2>/dev/null
  python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['latency']; print(f\"{sys.argv[2]} one-way µs: median {l['median_us']/2:g}, average {l['avg_us']/2:g}, p99 {l['p99_us']/2:g}\")" "$work/nvmeof.json" "$label"
  loop_ms=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['latency']['avg_us'] * $ITERS / 1000)" "$work/nvmeof.json")
  report "$work/$label.trace" "$label" "$sp,$cp" '^(deno|tokio|V8 |main\.ts)' "$loop_ms"
}
nvmeof_run "nvmeof rdma ping (V8 $NVMEOF_V8_FLAGS)"
[ "$THREADS" = 1 ] && nvmeof_run "nvmeof rdma ping, V8's defaults (worker threads)" defaults
[ -n "$V8_FLAGS" ] && nvmeof_run "nvmeof rdma ping, V8 $NVMEOF_V8_FLAGS $V8_FLAGS" "$V8_FLAGS"
echo "(traces in $work)"
