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
# SPLIT=1 adds, in each round, the pairings of scripts/bench_rdma_split.sh's C peer
# (scripts/bench/write_peer.c: nvmeof's hello with ib_write_lat's loop, recording every iteration):
# "C→C" (C both sides), "C→nv" (C client, nvmeof server) and "nv→C" (nvmeof client, C server), so
# a difference between the tools' slow round trips can be put on the client's or the server's side.
# FLOOR=1 (implies SPLIT=1) adds scripts/bench/ping_floor.ts, the ping's connection with the
# smallest Deno loops that can spin a write ping through FFI: "floor→C" (its client, the C server)
# and "floor→floor" (its client and server). What nv→C costs over floor→C is the ping's client's,
# what nvmeof costs over floor→floor is the ping's, what the floor costs over C is the runtime's.
# Environment: ADDR (default 10.77.0.1), ITERS (timed iterations, default 20000), SIZE (default
# 64), ROUNDS (default 3), WARMUP (nvmeof's untimed iterations first, default 50000), SPLIT, FLOOR.
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS="${ITERS:-20000}"
SIZE="${SIZE:-64}"
ROUNDS="${ROUNDS:-3}"
WARMUP="${WARMUP:-50000}"
. scripts/bench/deno_lib.sh
command -v ib_write_lat >/dev/null || die "ib_write_lat is missing (apt-get install perftest)"
[ "${FLOOR:-0}" = 1 ] && SPLIT=1
work=$(mktemp -d)
ping_server_up "$work"
if [ "${SPLIT:-0}" = 1 ]; then
  cport=$((port + 1))
  cs=""
  # shellcheck disable=SC2064 # the PID and directory are fixed now
  trap "kill $sp \$cs 2>/dev/null; rm -rf '$work'" EXIT
  c_peer_up "$work" "$cport"
fi
if [ "${FLOOR:-0}" = 1 ]; then
  fport=$((port + 2))
  deno_run scripts/bench/ping_floor.ts server "$ADDR" "$fport" "$ROUNDS" 2>"$work/floor.log" &
  fs=$!
  # shellcheck disable=SC2064 # the PIDs and directory are fixed now
  trap "kill $sp $fs \$cs 2>/dev/null; rm -rf '$work'" EXIT
  wait_listening "$work/floor.log" || die "the floor server did not listen: $(cat "$work/floor.log")"
fi
# floor_client LABEL PORT: the floor's client against PORT; its line.
floor_client() {
  deno_run scripts/bench/ping_floor.ts client "$ADDR" "$2" "$ITERS" "$SIZE" "$WARMUP" \
    "$work/floor.json" || die "the floor's client failed ($1)"
  deno_run scripts/bench/ping_events.ts nvmeof "$work/floor.json" "$1" || exit 1
}
# c_client LABEL PORT: the C peer's client against PORT, every iteration recorded; its line.
c_client() {
  timeout 300 "$P" client "$ADDR" "$2" "$SIZE" "$ITERS" "$work/c.out" >/dev/null ||
    die "the C peer's client failed ($1)"
  deno_run scripts/bench/ping_events.ts perftest "$work/c.out" "$1" || exit 1
}
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
  [ "${SPLIT:-0}" = 1 ] || continue
  c_client "C→C" "$cport"
  c_client "C→nv" "$port"
  deno_run scripts/bench/ping_tail.ts client "$ADDR" "$cport" "$ITERS" "$SIZE" "$work/nv_c.json" \
    "$WARMUP" >/dev/null || die "the nvmeof ping against the C peer failed"
  deno_run scripts/bench/ping_events.ts nvmeof "$work/nv_c.json" "nv→C" || exit 1
  [ "${FLOOR:-0}" = 1 ] || continue
  floor_client "floor→C" "$cport"
  floor_client "floor→floor" "$fport"
done
