#!/usr/bin/env bash
# Start-up time of nvmeof against its floor: a one-line Deno program run with the same flags,
# permissions, DENO_DIR and working directory as scripts/nvmeof. Runs on any machine (no root, no
# lab guest):
#   scripts/bench/startup.sh            # RUNS=N runs of each case (default 40)
# The cases run in rounds, each round in a rotated order so a burst of load hits them all; each
# case's figures are the medians of its runs, in milliseconds: wall time (fork and exec included)
# and CPU time (user + sys, which a busy machine disturbs less), each with its ratio to the hello
# world's median. Goal: --version, --help and the --help of every command and subcommand within
# 1.3× of the hello world's wall time; the list of commands comes from the command table
# (src/commands/mod.ts), so a new command is measured too. Each row ends with its verdict against
# that goal, and notes a CPU ratio over it too. "main.ts --version" is nvmeof without the launcher
# script, to tell the launcher's own cost apart.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
deno=$(deno_bin) || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
RUNS=${RUNS:-40}
work=$(mktemp -d /tmp/nvmeof-bench-startup-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo 'console.log("hello");' >"$work/hello.ts"
cd "$NVMEOF_ROOT"

GOAL=1.3
# Every command path of the table ("list", "target up"), one a line, read from the table itself.
mapfile -t commands < <("$deno" eval --quiet --cached-only --frozen '
  import { COMMANDS } from "./src/commands/mod.ts";
  for (const c of COMMANDS) {
    console.log(c.name);
    for (const s of c.subcommands ?? []) console.log(`${c.name} ${s.name}`);
  }')
[ "${#commands[@]}" -gt 0 ] || die "bench: no command read from src/commands/mod.ts"
labels=("hello world" "main.ts --version" "nvmeof --version" "nvmeof --help")
for c in "${commands[@]}"; do labels+=("nvmeof $c --help"); done
# run I: runs case I once, its output discarded.
run() {
  case "$1" in
    0) "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" "$work/hello.ts" ;;
    1) "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" main.ts --version ;;
    2) scripts/nvmeof --version ;;
    3) scripts/nvmeof --help ;;
    # shellcheck disable=SC2086 # a command path is words: "target up"
    *) scripts/nvmeof ${commands[$1 - 4]} --help ;;
  esac >/dev/null 2>&1
}

# Each run appends its wall time in microseconds to $work/wallI (bash's EPOCHREALTIME: the time
# keyword's %R has millisecond steps, 0.07x of a 14 ms hello world) and "user sys" in seconds to
# $work/cpuI (the time keyword: no tool needed; CPU time has millisecond steps).
TIMEFORMAT='%3U %3S'
n=${#labels[@]}
# One warm-up run each: fills Deno's transpile cache, and checks every case works.
for ((c = 0; c < n; c++)); do
  run "$c" || die "bench: '${labels[c]}' failed (exit $?)"
done
for ((r = 0; r < RUNS; r++)); do
  for ((k = 0; k < n; k++)); do
    c=$(((r + k) % n))
    t0=${EPOCHREALTIME/./}
    { time run "$c"; } 2>>"$work/cpu$c"
    t1=${EPOCHREALTIME/./}
    echo $((t1 - t0)) >>"$work/wall$c"
  done
done

# median I FIELD: the median of case I's runs, in microseconds: FIELD 1 wall, 2 user + sys CPU.
median() {
  if [ "$2" = 1 ]; then cat "$work/wall$1"; else
    awk '{printf "%d\n", ($1 + $2) * 1000000 + 0.5}' "$work/cpu$1"
  fi | sort -n |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'
}

wall0=$(median 0 1)
cpu0=$(median 0 2)
printf 'deno %s, %d runs each, medians; ratio: to the hello world\n' "$DENO_VERSION" "$RUNS"
printf "verdict: ok when the wall time is at most %s× the hello world's (CPU noted when over)\n" "$GOAL"
printf '%-36s %9s %7s %9s %7s  %s\n' "case" "wall ms" "ratio" "cpu ms" "ratio" "verdict"
over=0
cpu_over=0
for ((c = 0; c < n; c++)); do
  line=$(awk -v l="${labels[c]}" -v w="$(median "$c" 1)" -v w0="$wall0" -v u="$(median "$c" 2)" \
    -v u0="$cpu0" -v g="$GOAL" 'BEGIN {
      rw = w / w0; ru = u / u0
      v = (rw <= g ? "ok" : "OVER") (ru > g ? " (cpu over)" : "")
      printf "%-36s %9.1f %6.2fx %9.1f %6.2fx  %s\n", l, w / 1000, rw, u / 1000, ru, v
    }')
  printf '%s\n' "$line"
  if [[ $line == *OVER* ]]; then over=$((over + 1)); fi
  if [[ $line == *"cpu over"* ]]; then cpu_over=$((cpu_over + 1)); fi
done
printf "%d of %d cases over %s× of the hello world's wall time; %d over it in CPU time\n" \
  "$over" "$((n - 1))" "$GOAL" "$cpu_over"
