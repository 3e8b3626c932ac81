#!/usr/bin/env bash
# RDMA latency and bandwidth of nvmeof's FFI data path beside perftest's C, in one run on one
# machine (meant for the lab guest: scripts/lab/lab run -- scripts/bench/rdma.sh).
#
#   ib_write_lat -R -F -s S  vs  nvmeof rdma ping --op write --size S   (S = 2, 64, 4096)
#   ib_write_bw  -R -F -s 65536  vs  nvmeof rdma bw --size 65536
#
# ib_write_lat prints t_typical (the median of half round trips), t_avg and the 99% percentile;
# nvmeof prints round trips, so its median, average and p99 are halved here. The median shows the
# loop's own cost, the average and p99 its tail (iterations that waited on something else). ib_write_bw's "MB/sec" is MiB/s, compared with nvmeof's bw_mib_s.
# Ratios: latency nvmeof/perftest (goal ≤ 1.10), bandwidth nvmeof/perftest (goal ≥ 0.95).
# Each figure is the median of ROUNDS runs, the two tools alternating which goes first, so a
# burst of load on the machine hits both. Under TCG both tools' run medians move by up to 2× from
# run to run (perftest's 2 B median has been 20 µs in one run and 46 µs in the next), so every
# round's pair is printed with its own ratio, and the median of those per-round ratios is printed
# beside the ratio of the medians: a pair run back to back shares the machine's state.
# Environment: ADDR (default 10.77.0.1), ITERS (latency iterations, default 5000: the median
# must not be taken over the JIT's warm-up), SIZES (latency sizes, default "2 64 4096"), BW_ITERS
# (default 2000; 0 skips the bandwidth row), ROUNDS (default 5), NVMEOF (the launcher to measure,
# default scripts/nvmeof: another checkout's, to compare two versions in one lab run), WARMUP
# (nvmeof's untimed iterations before its timed ones, default 50000: the runtime compiles a
# function on the loop's thread when its calls cross a tier's count (NVMEOF_V8_FLAGS in
# scripts/env.sh), and the ping's completion checks run once per 16 iterations; before that count,
# those compiles land in the timed loop as iterations of 10-100 ms, traced in the lab with V8's
# --trace-opt).
set -uo pipefail
cd "$(dirname "$0")/../.."
ITERS="${ITERS:-5000}"
BW_ITERS="${BW_ITERS:-2000}"
ROUNDS="${ROUNDS:-5}"
WARMUP="${WARMUP:-50000}"
SIZES="${SIZES:-2 64 4096}"
N="${NVMEOF:-scripts/nvmeof}"
. scripts/bench/lib/rdma.sh
for t in ib_write_lat ib_write_bw python3; do
  command -v "$t" >/dev/null || { echo "bench rdma: $t is missing (apt-get install perftest python3)" >&2; exit 3; }
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
# row LABEL: one result line from the rounds in ps/ns: each side's median, their ratio, the median
# of the per-round ratios, then every round as "perftest/nvmeof (ratio)".
row() {
  python3 - "$1" "${#ps[@]}" "${ps[@]}" "${ns[@]}" <<'PY'
import statistics, sys
label, k = sys.argv[1], int(sys.argv[2])
p = [float(x) for x in sys.argv[3:3 + k]]; n = [float(x) for x in sys.argv[3 + k:]]
mp, mn = statistics.median(p), statistics.median(n)
r = [b / a for a, b in zip(p, n)]
each = "  ".join(f"{a:g}/{b:g} ({c:.2f})" for a, b, c in zip(p, n, r))
print(f"{label:<26} {mp:14.2f} {mn:14.2f} {mn / mp:8.2f} {statistics.median(r):6.2f}   {each}")
PY
}

$N rdma ping --server -a "$ADDR" -p 7180 2>/tmp/bench_rdma_server.log &
pids+=($!)
wait_listening /tmp/bench_rdma_server.log

# round ROUND PERFTEST-CMD NVMEOF-CMD: runs both (order alternating by round), appends to ps/ns.
round() {
  local r="$1" p n
  if [ $((r % 2)) = 1 ]; then p=$($2) && n=$($3); else n=$($3) && p=$($2); fi || return 1
  [ -n "$p" ] && [ -n "$n" ] || return 1
  ps+=("$p")
  ns+=("$n")
}
# Latency runs print "median average p99" (one-way µs).
lat_perftest() { perftest ib_write_lat "$size" "$ITERS" 18515 | awk '{ print $5, $6, $8 }'; }
lat_nvmeof() { nvmeof_write_stats 7180 "$size" "$ITERS"; }
bw_perftest() { perftest ib_write_bw 65536 "$BW_ITERS" 18516 | awk '{ print $4 }'; }
bw_nvmeof() {
  timeout 900 $N rdma bw -a "$ADDR" -p 7180 --size 65536 --iters "$BW_ITERS" -o json |
    json "d['bw_mib_s']"
}

printf '%-26s %14s %14s %8s %8s   %s\n' "latency (one-way)" "perftest µs" "nvmeof µs" "ratio" \
  "rnd-med" "rounds: perftest/nvmeof (ratio)"
for size in $SIZES; do
  ps=() ns=()
  for r in $(seq 1 "$ROUNDS"); do
    round "$r" lat_perftest lat_nvmeof || { echo "bench rdma: write $size B failed" >&2; exit 1; }
  done
  # One row per figure: field k of every round's "median average p99".
  lp=("${ps[@]}") ln=("${ns[@]}")
  k=0
  for figure in median average p99; do
    k=$((k + 1))
    ps=() ns=()
    for x in "${lp[@]}"; do ps+=("$(echo "$x" | cut -d' ' -f"$k")"); done
    for x in "${ln[@]}"; do ns+=("$(echo "$x" | cut -d' ' -f"$k")"); done
    row "write $size B $figure"
  done
done
[ "$BW_ITERS" = 0 ] && exit 0

ps=() ns=()
for r in $(seq 1 "$ROUNDS"); do
  round "$r" bw_perftest bw_nvmeof || { echo "bench rdma: bandwidth failed" >&2; exit 1; }
done
printf '%-26s %14s %14s %8s %8s\n' "bandwidth 64 KiB" "perftest MiB/s" "nvmeof MiB/s" "ratio" "rnd-med"
row "write 65536 B"
