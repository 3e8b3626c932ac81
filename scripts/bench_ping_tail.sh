#!/usr/bin/env bash
# Where the tail of `nvmeof rdma ping --op write` comes from: one ping of ITERS iterations, client
# and server both scripts/bench/ping_tail.ts (nvmeof's own loops, recorded), with V8's GC traced;
# prints a histogram of the round trips and, for those of 1 ms and 5 ms or more, whether an
# event-loop yield or a GC of either side overlapped them (meant for the lab guest:
# scripts/lab run --timeout 900 -- scripts/bench_ping_tail.sh).
# Environment: ADDR (default 10.77.0.1), ITERS (default 5000), SIZE (default 64), V8_FLAGS (more
# V8 flags for both sides, beside the launcher's own NVMEOF_V8_FLAGS, to try a variation), KEEP (a directory to keep
# the records and GC logs in), WARMUP (untimed iterations first, as `rdma ping --warmup`: what
# is left once the runtime has compiled the loop).
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS="${ITERS:-5000}"
SIZE="${SIZE:-64}"
. scripts/bench/deno_lib.sh
work="${KEEP:-$(mktemp -d)}"
mkdir -p "$work"
flags="--expose-gc,--trace-gc${V8_FLAGS:+,$V8_FLAGS}"
run() { "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" --v8-flags="$flags" scripts/bench/ping_tail.ts "$@"; }
port=$((7300 + RANDOM % 500))
run server "$ADDR" "$port" "$work/server.json" >"$work/server_gc.log" 2>"$work/server.err" &
sp=$!
trap 'kill $sp 2>/dev/null' EXIT
wait_listening "$work/server.err" || { cat "$work/server.err" >&2; exit 1; }
run client "$ADDR" "$port" "$ITERS" "$SIZE" "$work/client.json" "${WARMUP:-0}" >"$work/client_gc.log" ||
  { echo "bench_ping_tail: the client failed" >&2; exit 1; }
wait "$sp" || { cat "$work/server.err" >&2; exit 1; }
echo "write $SIZE B × $ITERS (after ${WARMUP:-0} untimed), V8 flags: $flags"
deno_run scripts/bench/ping_tail.ts report "$work/client.json" "$work/client_gc.log" \
  "$work/server.json" "$work/server_gc.log"
