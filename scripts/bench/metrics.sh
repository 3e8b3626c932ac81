#!/usr/bin/env bash
# The cost of a scrape of `nvmeof exporter` beside node_exporter's full default scrape
# (Debian's prometheus-node-exporter, every default collector), in one lab fabric node:
#   scripts/lab/lab fabric exec --timeout 1500 target -- scripts/bench/metrics.sh [SUBSYSTEMS] [NAMESPACES]
# Each case: SCRAPES (default 100) scrapes of each exporter, one at a time from curl on the node
# (time_total): median and p99 in ms, each exporter's RSS after, its series, and the ratios
# nvmeof / node_exporter. nvmeof's exporter runs with --cache-ms 0, so each scrape is a collection.
# Case "as booted": the node as it is. Case "storage server", where nvmet is available:
# SUBSYSTEMS (64) × NAMESPACES (4) null_blk namespaces (configfs, 16 MiB each, not memory-backed)
# linked to two rdma ports on the node's fab0 and fab1 addresses (trsvcid 4430); all removed after.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
S=${1:-64}
N=${2:-4}
SCRAPES=${SCRAPES:-100}
NVMET=/sys/kernel/config/nvmet
NULLB=/sys/kernel/config/nullb
NVMEOF_PORT=9724
NODE_PORT=9110
PORT_IDS=(81 82)
TRSVCID=4430
work=$(mktemp -d /tmp/nvmeof-bench-metrics-XXXXXX)
pids=()
say() { printf 'bench: %s %s\n' "$(date +%T)" "$*" >&2; }

# nqn I sets $q to subsystem I's NQN.
nqn() { printf -v q 'nqn.2026-12.io.nvmeof.bench:metrics-%03d' "$1"; }

storage_down() {
  local s n id
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    for id in "${PORT_IDS[@]}"; do rm -f "$NVMET/ports/$id/subsystems/$q"; done
    for ((n = 1; n <= N; n++)); do
      [ -d "$NVMET/subsystems/$q/namespaces/$n" ] || continue
      echo 0 >"$NVMET/subsystems/$q/namespaces/$n/enable"
      rmdir "$NVMET/subsystems/$q/namespaces/$n"
    done
    [ -d "$NVMET/subsystems/$q" ] && rmdir "$NVMET/subsystems/$q"
    for ((n = 1; n <= N; n++)); do
      [ -d "$NULLB/mb${s}n$n" ] || continue
      echo 0 >"$NULLB/mb${s}n$n/power"
      rmdir "$NULLB/mb${s}n$n"
    done
  done
  for id in "${PORT_IDS[@]}"; do [ -d "$NVMET/ports/$id" ] && rmdir "$NVMET/ports/$id"; done
  true
} 2>/dev/null

stop_all() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; storage_down; rm -rf "$work"' EXIT

storage_up() {
  local s n id l addr
  modprobe -a null_blk nvmet-rdma
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    mkdir "$NVMET/subsystems/$q"
    echo 1 >"$NVMET/subsystems/$q/attr_allow_any_host"
    for ((n = 1; n <= N; n++)); do
      mkdir "$NULLB/mb${s}n$n"
      echo 16 >"$NULLB/mb${s}n$n/size"
      echo 1 >"$NULLB/mb${s}n$n/power"
      mkdir "$NVMET/subsystems/$q/namespaces/$n"
      echo "/dev/mb${s}n$n" >"$NVMET/subsystems/$q/namespaces/$n/device_path"
      echo 1 >"$NVMET/subsystems/$q/namespaces/$n/enable"
    done
  done
  for l in 0 1; do
    id=${PORT_IDS[$l]}
    addr=$(ip -4 -o addr show dev "fab$l" | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
    [ -n "$addr" ] || die "bench: fab$l has no IPv4 address: run in a lab fabric node"
    mkdir "$NVMET/ports/$id"
    echo rdma >"$NVMET/ports/$id/addr_trtype"
    echo ipv4 >"$NVMET/ports/$id/addr_adrfam"
    echo "$addr" >"$NVMET/ports/$id/addr_traddr"
    echo "$TRSVCID" >"$NVMET/ports/$id/addr_trsvcid"
    for ((s = 1; s <= S; s++)); do
      nqn "$s"
      ln -s "$NVMET/subsystems/$q" "$NVMET/ports/$id/subsystems/$q"
    done
  done
}

# wait_http URL: until it answers (60 s).
wait_http() {
  local _
  for _ in $(seq 120); do curl -sf -o /dev/null "$1" && return; sleep 0.5; done
  die "bench: $1 did not answer"
}

# scrape NAME URL: SCRAPES scrapes (3 first, not counted); prints "median p99" in ms.
scrape() {
  local _ i
  for _ in 1 2 3; do curl -sf -o /dev/null "$2"; done
  for ((i = 0; i < SCRAPES; i++)); do
    curl -sf -o /dev/null -w '%{time_total}\n' "$2"
  done | sort -n | awk '{ t[NR] = $1 * 1000 } END {
    p = int(NR * 0.99 + 0.999); if (p < 1) p = 1
    printf "%.1f %.1f\n", t[int((NR + 1) / 2)], t[p] }'
}

rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
series() { curl -sf "$1" | grep -vc '^#'; }

# one_case LABEL: both exporters started, scraped and stopped; one line each and the ratios.
one_case() {
  local label=$1 a b na nb ra rb sa sb
  (exec "$NVMEOF_ROOT/scripts/nvmeof" exporter --listen "127.0.0.1:$NVMEOF_PORT" --cache-ms 0) \
    </dev/null >"$work/nvmeof.log" 2>&1 &
  pids+=($!)
  local nv=$!
  (exec prometheus-node-exporter --web.listen-address="127.0.0.1:$NODE_PORT") \
    </dev/null >"$work/node.log" 2>&1 &
  pids+=($!)
  local ne=$!
  wait_http "http://127.0.0.1:$NVMEOF_PORT/metrics"
  wait_http "http://127.0.0.1:$NODE_PORT/metrics"
  say "$label: $SCRAPES scrapes of each"
  read -r a b < <(scrape nvmeof "http://127.0.0.1:$NVMEOF_PORT/metrics")
  read -r na nb < <(scrape node "http://127.0.0.1:$NODE_PORT/metrics")
  ra=$(rss "$nv")
  rb=$(rss "$ne")
  sa=$(series "http://127.0.0.1:$NVMEOF_PORT/metrics")
  sb=$(series "http://127.0.0.1:$NODE_PORT/metrics")
  # Where nvmeof's time goes: each collector's seconds in one more scrape.
  local took
  took=$(curl -sf "http://127.0.0.1:$NVMEOF_PORT/metrics" |
    sed -nE 's/^nvmeof_scrape_duration_seconds\{collector="([a-z]+)"\} (.*)/\1 \2 s/p' | paste -sd' ')
  stop_all
  printf '%-16s %-14s median %7.1f ms  p99 %7.1f ms  RSS %6.1f MiB  series %5d\n' \
    "$label" "nvmeof" "$a" "$b" "$ra" "$sa" "$label" "node_exporter" "$na" "$nb" "$rb" "$sb"
  awk -v a="$a" -v b="$b" -v na="$na" -v nb="$nb" -v ra="$ra" -v rb="$rb" -v l="$label" \
    'BEGIN { printf "%-16s ratio nvmeof/node_exporter: median %.2f  p99 %.2f  RSS %.2f\n", l, a / na, b / nb, ra / rb }'
  printf '%-16s nvmeof collectors: %s\n' "$label" "$took"
}

command -v prometheus-node-exporter >/dev/null ||
  die "bench: prometheus-node-exporter is missing (apt-get install prometheus-node-exporter)"
one_case "as booted"
if [ -d "$NVMET" ] || modprobe nvmet 2>/dev/null; then
  say "storage server: $S subsystems x $N null_blk namespaces, 2 rdma ports"
  storage_up
  one_case "storage server"
  storage_down
else
  say "no nvmet on this node: the storage server case is left out"
fi
