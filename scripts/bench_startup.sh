#!/usr/bin/env bash
# Start-up time of nvmeof against its floor: a one-line Deno program run with the same flags,
# permissions, DENO_DIR and working directory as scripts/nvmeof. Runs on any machine (no root, no
# lab guest):
#   scripts/bench_startup.sh            # RUNS=N runs of each case (default 40)
# The cases run in rounds, each round in a rotated order so a burst of load hits them all; each
# case's figure is the median of its runs, in milliseconds of wall time (fork and exec included),
# and its ratio to the hello world's median. Goal: --version, --help and list --help within 1.3×.
# "main.ts --version" is nvmeof without the launcher script, to tell the launcher's own cost apart.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
deno=$(deno_bin) || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
RUNS=${RUNS:-40}
work=$(mktemp -d /tmp/nvmeof-bench-startup-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'console.log("hello");' >"$work/hello.ts"
cd "$NVMEOF_ROOT"

labels=("hello world" "main.ts --version" "nvmeof --version" "nvmeof --help" "nvmeof list --help")
# run I: runs case I once, its output discarded.
run() {
  case "$1" in
    0) "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" "$work/hello.ts" ;;
    1) "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" main.ts --version ;;
    2) scripts/nvmeof --version ;;
    3) scripts/nvmeof --help ;;
    4) scripts/nvmeof list --help ;;
  esac >/dev/null 2>&1
}

# now: microseconds since the epoch, without a fork ($EPOCHREALTIME, bash 5) where possible.
now() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    local t=${EPOCHREALTIME/[.,]/}
    echo "$t"
  else
    echo $(($(date +%s%N) / 1000))
  fi
}

n=${#labels[@]}
# One warm-up run each: fills Deno's transpile cache, and checks every case works.
for ((c = 0; c < n; c++)); do
  run "$c" || die "bench: '${labels[c]}' failed (exit $?)"
done
for ((r = 0; r < RUNS; r++)); do
  for ((k = 0; k < n; k++)); do
    c=$(((r + k) % n))
    t0=$(now)
    run "$c"
    t1=$(now)
    echo $((t1 - t0)) >>"$work/case$c"
  done
done

# median I: the median of case I's runs, in microseconds.
median() {
  sort -n "$work/case$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}

base=$(median 0)
printf 'deno %s, %d runs each, medians of wall time\n' "$DENO_VERSION" "$RUNS"
printf '%-22s %10s %8s\n' "case" "median ms" "ratio"
for ((c = 0; c < n; c++)); do
  m=$(median "$c")
  awk -v l="${labels[c]}" -v m="$m" -v b="$base" 'BEGIN {printf "%-22s %10.1f %7.2fx\n", l, m / 1000, m / b}'
done
