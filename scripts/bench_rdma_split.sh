#!/usr/bin/env bash
# Which half of an nvmeof write ping costs what: each half is swapped for a C peer that speaks the
# same hello and moves the same bytes with ib_write_lat's loop (scripts/bench/write_peer.c), in one
# run beside perftest (meant for the lab guest: scripts/lab run -- scripts/bench_rdma_split.sh).
#
#   perftest   ib_write_lat -R -F            (C client, C server, perftest's own protocol)
#   C → C      write_peer → write_peer       (C both sides, nvmeof's protocol)
#   C → nv     write_peer → nvmeof server    (the nvmeof server's cost, beside C → C)
#   nv → C     nvmeof client → write_peer    (the nvmeof client's cost, beside C → C)
#   nv → nv    nvmeof client → nvmeof server (what bench_rdma.sh measures)
#
# Figures are one-way medians (µs), the median over ROUNDS runs, the order reversing each round;
# ratios are against perftest. The C server also prints, for each client it served, the medians of
# its own iteration: period (one round trip), post (its ibv_post_send, in which the software RDMA
# device does the whole exchange) and wait (from its completion to the client's next write). Last,
# `write_peer footprint` prints what a system call costs after the caller touched N pages: under
# QEMU TCG that cost grows with the caller's footprint (run it on the host too, to compare).
# Environment: ADDR (default 10.77.0.1), SIZE (default 2), ITERS (default 10000), ROUNDS (default 6).
set -uo pipefail
cd "$(dirname "$0")/.."
SIZE="${SIZE:-2}"
ITERS="${ITERS:-10000}"
ROUNDS="${ROUNDS:-6}"
N=scripts/nvmeof
. scripts/bench/rdma_lib.sh
for t in ib_write_lat python3 gcc; do
  command -v "$t" >/dev/null || { echo "bench_rdma_split: $t is missing (apt-get install perftest python3 gcc)" >&2; exit 3; }
done
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
c_peer_build "$work" || {
  echo "bench_rdma_split: cannot build the C peer (apt-get install libibverbs-dev librdmacm-dev)" >&2
  exit 3
}

$N rdma ping --server -a "$ADDR" -p 7180 2>"$work/nvmeof_server.log" &
pids+=($!)
"$P" server "$ADDR" 7182 2>"$work/c_server.log" &
pids+=($!)
wait_listening "$work/nvmeof_server.log" "$work/c_server.log"

c_client() { timeout 300 "$P" client "$ADDR" "$1" "$SIZE" "$ITERS" | awk '{ print $1 }'; }
# The C server's line for the client that just ended (it prints after the last echo).
c_server_stats() { sleep 0.5; tail -1 "$work/c_server.log"; }

names=("perftest" "C → C" "C → nv" "nv → C" "nv → nv")
declare -a figs=() cstats=()
run() { # INDEX → appends the figure for that pairing to figs[INDEX]
  local v
  case $1 in
    0) v=$(perftest ib_write_lat "$SIZE" "$ITERS" 18515 | awk '{ print $5 }') ;;
    1) v=$(c_client 7182) && cstats+=("C → C   $(c_server_stats)") ;;
    2) v=$(c_client 7180) ;;
    3) v=$(nvmeof_write_us 7182 "$SIZE" "$ITERS") && cstats+=("nv → C  $(c_server_stats)") ;;
    4) v=$(nvmeof_write_us 7180 "$SIZE" "$ITERS") ;;
  esac
  [ -n "$v" ] || { echo "bench_rdma_split: ${names[$1]} failed" >&2; exit 1; }
  figs[$1]="${figs[$1]:-} $v"
}
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="0 1 2 3 4"; else order="4 3 2 1 0"; fi
  for k in $order; do run "$k"; done
done

echo "write $SIZE B, $ITERS iterations, $ROUNDS rounds: one-way median µs"
python3 - "${names[@]}" "${figs[@]}" <<'PY'
import statistics, sys
k = (len(sys.argv) - 1) // 2
names = sys.argv[1:1 + k]
runs = [[float(x) for x in s.split()] for s in sys.argv[1 + k:]]
med = [statistics.median(r) for r in runs]
print(f"{'pairing':<10} {'median':>8} {'÷ perftest':>11}   rounds")
for n, m, r in zip(names, med, runs):
    print(f"{n:<10} {m:8.2f} {m / med[0]:11.2f}   {' '.join(f'{x:g}' for x in r)}")
print(f"nvmeof server's share (C → nv − C → C): {med[2] - med[1]:+.2f} µs one-way")
print(f"nvmeof client's share (nv → C − C → C): {med[3] - med[1]:+.2f} µs one-way")
PY
echo "C server, per client (µs medians of its iterations):"
printf '  %s\n' "${cstats[@]}"
echo "a system call after touching N pages (this machine):"
"$P" footprint | sed 's/^/  /'
