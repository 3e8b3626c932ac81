# Sourced by the RDMA benchmark (scripts/bench/rdma.sh): the runs it makes. ADDR is the address
# every peer listens on (default the lab guest's, 10.77.0.1); set N (the nvmeof launcher) first.
ADDR="${ADDR:-10.77.0.1}"

# perftest TOOL SIZE ITERS PORT: one perftest pair, the server in the background and the client
# in the foreground; prints the client's data line. The server is bounded too: when its client
# dies (ib_write_lat has segfaulted under TCG) it would wait for it forever.
perftest() {
  timeout 330 "$1" -R -F -s "$2" -n "$3" -p "$4" >/dev/null 2>&1 &
  local sp=$!
  sleep 1
  timeout 300 "$1" -R -F -s "$2" -n "$3" -p "$4" "$ADDR" 2>/dev/null | awk -v s="$2" '$1 == s { print; exit }'
  wait "$sp" 2>/dev/null
}

# nvmeof_write_stats PORT SIZE ITERS: one nvmeof write ping; prints its one-way median, average
# and 99th percentile in µs (round trips halved, as ib_write_lat reports t_typical, t_avg and its
# 99% percentile). WARMUP (default 0) untimed iterations come first: the runtime compiles the
# loop's code on its worker threads while it first runs it (docs/benchmarks.md), a C loop needs
# no such time.
nvmeof_write_stats() {
  timeout 600 $N rdma ping -a "$ADDR" -p "$1" --op write --size "$2" -c "$3" --warmup "${WARMUP:-0}" -o json |
    python3 -c "import json,sys; l=json.load(sys.stdin)['latency']; print(l['median_us']/2, l['avg_us']/2, l['p99_us']/2)"
}

# wait_listening LOG...: until every server's log says it is listening (at most 60 s).
wait_listening() {
  local log up
  for _ in $(seq 1 300); do
    up=1
    for log in "$@"; do grep -q listening "$log" 2>/dev/null || up=0; done
    [ "$up" = 1 ] && return 0
    sleep 0.2
  done
  return 1
}
