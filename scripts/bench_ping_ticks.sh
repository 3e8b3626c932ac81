#!/usr/bin/env bash
# What the slow round trips hold, client by client, against one server: the C peer's server
# (scripts/bench/write_peer.c) answers, in turn, its own client spinning on one page (FOOT=0), the
# same client touching 16 and 64 pages in turn while it spins (a bigger loop's footprint), and
# nvmeof's write-ping client (scripts/bench/ping_marks.ts). Each run is traced with the kernel's
# IRQ, IPI, softirq, scheduler and fault events, the client marking its slow round trips; each
# gets two lines: ping_events.ts's (median, p99, slow round trips per second) and
# tick_report.ts's (the timer tick handler's time on the client's CPU and the other, and which
# events the slow round trips held). Under the lab's emulated CPU the tick's handler, and the
# round trip it lands in, grow with the interrupted loop's footprint. Meant for the lab guest:
#   scripts/lab run --timeout 900 -- scripts/bench_ping_ticks.sh
# Environment: ADDR (default 10.77.0.1), ITERS (default 20000), ROUNDS (default 2), WARMUP
# (nvmeof's untimed iterations first, default 50000).
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS="${ITERS:-20000}"
ROUNDS="${ROUNDS:-2}"
WARMUP="${WARMUP:-50000}"
. scripts/bench/deno_lib.sh
. scripts/bench/trace_lib.sh
work=$(mktemp -d)
cs=""
# shellcheck disable=SC2064 # the directory is fixed now
trap "kill \$cs 2>/dev/null; echo 0 >$T/tracing_on; rm -rf '$work'" EXIT
port=$((7300 + RANDOM % 500))
c_peer_up "$work" "$port"
# The events that can take a CPU from a spinning loop: IRQs and IPIs, softirqs, switches, faults.
EVENTS=(irq_vectors irq/softirq_entry irq/irq_handler_entry sched/sched_switch exceptions)
report() { # LABEL FORM RECORD
  deno_run scripts/bench/ping_events.ts "$2" "$3" "$1" || exit 1
  deno_run scripts/bench/tick_report.ts "$work/trace" "$1" || exit 1
}
echo "write 64 B, $ITERS iterations a run, one C server; round trips in µs"
for r in $(seq 1 "$ROUNDS"); do
  for foot in 0 16 64; do
    trace_on 65536 "${EVENTS[@]}"
    FOOT=$foot MARK="$T/trace_marker" timeout 300 "$P" client "$ADDR" "$port" 64 "$ITERS" \
      "$work/c.out" >/dev/null || die "the C peer's client failed (FOOT=$foot)"
    trace_off "$work/trace"
    report "C foot$foot" perftest "$work/c.out"
  done
  trace_on 65536 "${EVENTS[@]}"
  timeout 300 "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" scripts/bench/ping_marks.ts \
    "$ADDR" "$port" "$ITERS" 64 "$WARMUP" "$T/trace_marker" "$work/nv.json" ||
    die "the nvmeof client failed"
  trace_off "$work/trace"
  report "nvmeof" nvmeof "$work/nv.json"
done
