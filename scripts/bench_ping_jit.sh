#!/usr/bin/env bash
# What the runtime does inside a warmed-up ping's timed loop: one `rdma ping --op write` client
# (scripts/bench/ping_jit.ts, the ping's own client code) run with V8's --trace-opt, --trace-deopt
# and --trace-gc, against a server run as the launcher runs it; prints, between the markers of the
# timed loop's start and end, every compile, deoptimization and GC beside every iteration over
# 2 ms and every event-loop turn, then a count of each. Meant for the lab guest:
#   scripts/lab run --timeout 900 -- scripts/bench_ping_jit.sh
# Under V8 --single-threaded a compile runs on the loop's own thread, so one inside the timed loop
# is one long iteration (its time is V8's "took a, b, c ms": b is the compile itself).
# Environment: ADDR (default 10.77.0.1), ITERS (timed iterations, default 5000), WARMUP (default
# 50000), SIZE (default 64), RUNS (default 2).
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS="${ITERS:-5000}"
WARMUP="${WARMUP:-50000}"
SIZE="${SIZE:-64}"
RUNS="${RUNS:-2}"
. scripts/bench/deno_lib.sh
command -v stdbuf >/dev/null || die "stdbuf (coreutils) is missing"
work=$(mktemp -d)
ping_server_up "$work"
flags="$NVMEOF_V8_FLAGS,--trace-opt,--trace-deopt,--trace-gc"
for run in $(seq 1 "$RUNS"); do
  # V8 prints its traces through C stdio: line-buffered, they stay in order with the markers.
  stdbuf -oL "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" --v8-flags="$flags" \
    scripts/bench/ping_jit.ts "$ADDR" "$port" "$ITERS" "$WARMUP" "$SIZE" >"$work/client.out" 2>&1 ||
    { cat "$work/client.out" >&2; exit 1; }
  echo "---- run $run: write $SIZE B × $ITERS after $WARMUP untimed, V8 flags $flags"
  inside=$(sed -n '/timed loop begins/,/timed loop ends/p' "$work/client.out")
  grep -v '^\[marking\|^\[compiling' <<<"$inside" | sed -E 's/\(sfi = [^)]*\)//; s/ 0x[0-9a-f]+//g' |
    cut -c1-200
  echo "in the timed loop: compiles $(grep -c '^\[completed compiling' <<<"$inside")," \
    "deoptimizations $(grep -c '^\[bailout' <<<"$inside"), GCs $(grep -c ' ms: \(Scavenge\|Mark-Compact\)' <<<"$inside")," \
    "event-loop turns $(grep -c 'event-loop turn' <<<"$inside"), iterations over 2 ms $(grep -c 'took .* ms$' <<<"$inside")"
  grep '^RESULT' "$work/client.out"
done
