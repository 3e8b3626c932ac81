#!/usr/bin/env bash
# RDMA latency and bandwidth of nvmeof's FFI data path beside perftest's C, in one run on one
# machine (meant for the lab guest: scripts/lab run -- scripts/bench_rdma.sh).
#
#   ib_write_lat -R -F -s S  vs  nvmeof rdma ping --op write --size S   (S = 2, 64, 4096)
#   ib_write_bw  -R -F -s 65536  vs  nvmeof rdma bw --size 65536
#
# ib_write_lat prints t_typical, the median of half round trips; nvmeof prints round trips, so
# its median is halved here. ib_write_bw's "MB/sec" is MiB/s, compared with nvmeof's bw_mib_s.
# Ratios: latency nvmeof/perftest (goal ≤ 1.10), bandwidth nvmeof/perftest (goal ≥ 0.95).
# Environment: ADDR (default 10.77.0.1), ITERS (latency iterations, default 1000),
# BW_ITERS (default 5000, perftest's default).
set -uo pipefail
cd "$(dirname "$0")/.."
ADDR="${ADDR:-10.77.0.1}"
ITERS="${ITERS:-1000}"
BW_ITERS="${BW_ITERS:-5000}"
N=scripts/nvmeof
for t in ib_write_lat ib_write_bw python3; do
  command -v "$t" >/dev/null || { echo "bench_rdma: $t is missing (apt-get install perftest python3)" >&2; exit 3; }
done

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }

# perftest: server in the background, client in the foreground, one pair per size.
perftest() { # TOOL SIZE ITERS PORT → the data line
  "$1" -R -F -s "$2" -n "$3" -p "$4" >/dev/null 2>&1 &
  local sp=$!
  sleep 1
  timeout 300 "$1" -R -F -s "$2" -n "$3" -p "$4" "$ADDR" 2>/dev/null | awk -v s="$2" '$1 == s { print; exit }'
  wait "$sp" 2>/dev/null
}

$N rdma ping --server -a "$ADDR" -p 7180 2>/tmp/bench_rdma_server.log &
pids+=($!)
for _ in $(seq 1 300); do grep -q listening /tmp/bench_rdma_server.log 2>/dev/null && break; sleep 0.2; done

printf '%-26s %14s %14s %8s\n' "latency (median one-way)" "perftest µs" "nvmeof µs" "ratio"
for size in 2 64 4096; do
  line=$(perftest ib_write_lat "$size" "$ITERS" 18515)
  p=$(awk '{ print $5 }' <<<"$line")
  out=$(timeout 600 $N rdma ping -a "$ADDR" -p 7180 --op write --size "$size" -c "$ITERS" -o json) || {
    echo "bench_rdma: nvmeof rdma ping failed at $size B" >&2; exit 1; }
  n=$(json "d['latency']['median_us']/2" <<<"$out")
  printf '%-26s %14.2f %14.2f %8s\n' "write $size B" "$p" "$n" "$(ratio "$n" "$p")"
done

line=$(perftest ib_write_bw 65536 "$BW_ITERS" 18516)
p=$(awk '{ print $4 }' <<<"$line")
out=$(timeout 900 $N rdma bw -a "$ADDR" -p 7180 --size 65536 --iters "$BW_ITERS" -o json) || {
  echo "bench_rdma: nvmeof rdma bw failed" >&2; exit 1; }
n=$(json "d['bw_mib_s']" <<<"$out")
printf '%-26s %14s %14s %8s\n' "bandwidth 64 KiB" "perftest MiB/s" "nvmeof MiB/s" "ratio"
printf '%-26s %14.2f %14.2f %8s\n' "write 65536 B" "$p" "$n" "$(ratio "$n" "$p")"
