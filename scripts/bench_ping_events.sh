#!/usr/bin/env bash
# How often each tool's round trips are slow, per iteration and per second: ib_write_lat (with -U,
# every iteration's time) and nvmeof's write ping (scripts/bench/ping_tail.ts, the ping's own
# client code, recording every iteration) in alternating rounds, one line each
# (scripts/bench/ping_events.ts): median, average, p99, p99.9 of the round trips, and for 100, 200,
# 300, 500 and 1000 µs the share of iterations at or over it and how many came per second of loop
# time. A stall that the platform makes at a fixed rate comes as often per second to both tools;
# its share of the iterations, and with it where the p99 falls, grows with the round trip. Meant
# for the lab guest:
#   scripts/lab run --timeout 900 -- scripts/bench_ping_events.sh
# Environment: ADDR (default 10.77.0.1), ITERS (timed iterations, default 20000), SIZE (default
# 64), ROUNDS (default 3), WARMUP (nvmeof's untimed iterations first, default 50000).
set -uo pipefail
cd "$(dirname "$0")/.."
ADDR="${ADDR:-10.77.0.1}"
ITERS="${ITERS:-20000}"
SIZE="${SIZE:-64}"
ROUNDS="${ROUNDS:-3}"
WARMUP="${WARMUP:-50000}"
. scripts/lib.sh
find_deno || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
. scripts/bench/rdma_lib.sh
command -v ib_write_lat >/dev/null || die "ib_write_lat is missing (apt-get install perftest)"
work=$(mktemp -d)
ping_server_up "$work"
deno_run() { "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" "$@"; }
echo "write $SIZE B, $ITERS iterations a run (nvmeof after $WARMUP untimed); round trips in µs"
for r in $(seq 1 "$ROUNDS"); do
  timeout 330 ib_write_lat -R -F -s "$SIZE" -n "$ITERS" -p 18620 >/dev/null 2>&1 &
  psp=$!
  sleep 1
  timeout 300 ib_write_lat -R -F -s "$SIZE" -n "$ITERS" -p 18620 -U "$ADDR" >"$work/perftest.out" 2>&1 ||
    die "ib_write_lat failed: $(tail -3 "$work/perftest.out")"
  wait "$psp"
  deno_run scripts/bench/ping_events.ts perftest "$work/perftest.out" || exit 1
  deno_run scripts/bench/ping_tail.ts client "$ADDR" "$port" "$ITERS" "$SIZE" "$work/nvmeof.json" \
    "$WARMUP" >/dev/null || die "the nvmeof ping failed"
  deno_run scripts/bench/ping_events.ts nvmeof "$work/nvmeof.json" || exit 1
done
