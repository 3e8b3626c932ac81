# Sourced by the RDMA benchmarks (bench_rdma.sh, bench_rdma_split.sh, and through deno_lib.sh the
# bench_ping_*.sh): the runs they make. ADDR is the address every peer listens on (default the lab
# guest's, 10.77.0.1); the scripts that use the nvmeof runs set N (the nvmeof launcher) first.
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
# loop's code on its worker threads while it first runs it (bench_ping_sched.sh), a C loop needs
# no such time.
nvmeof_write_stats() {
  timeout 600 $N rdma ping -a "$ADDR" -p "$1" --op write --size "$2" -c "$3" --warmup "${WARMUP:-0}" -o json |
    python3 -c "import json,sys; l=json.load(sys.stdin)['latency']; print(l['median_us']/2, l['avg_us']/2, l['p99_us']/2)"
}

# nvmeof_write_us PORT SIZE ITERS: the one-way median of one nvmeof write ping, in µs.
nvmeof_write_us() { nvmeof_write_stats "$@" | awk '{ print $1 }'; }

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

# ping_server_up WORK: starts `scripts/nvmeof rdma ping --server` on ADDR and a random port in the
# background (its log in WORK/server.err), sets port and sp (its PID), stops it and removes WORK on
# exit, and waits until it listens (else dies with its log). Needs scripts/lib.sh (die).
ping_server_up() {
  port=$((7300 + RANDOM % 500))
  scripts/nvmeof rdma ping --server -a "$ADDR" -p "$port" 2>"$1/server.err" &
  sp=$!
  # shellcheck disable=SC2064 # the PID and directory are fixed now
  trap "kill $sp 2>/dev/null; rm -rf '$1'" EXIT
  wait_listening "$1/server.err" || die "the nvmeof ping server did not listen: $(cat "$1/server.err")"
}

# c_peer_build WORK: builds the C peer (scripts/bench/write_peer.c) into WORK/write_peer and sets P
# to it; its status is gcc's.
c_peer_build() {
  P="$1/write_peer"
  gcc -O2 -o "$P" scripts/bench/write_peer.c -lrdmacm -libverbs
}

# c_peer_up WORK PORT: builds the C peer and starts its server on ADDR and PORT in the background
# (its log in WORK/c_server.log), sets P and cs (its PID), and waits until it listens; else dies.
# Needs scripts/lib.sh (die); the caller stops it.
c_peer_up() {
  c_peer_build "$1" || die "cannot build the C peer (apt-get install gcc libibverbs-dev librdmacm-dev)"
  "$P" server "$ADDR" "$2" 2>"$1/c_server.log" &
  cs=$!
  wait_listening "$1/c_server.log" || die "the C peer did not listen: $(cat "$1/c_server.log")"
}
