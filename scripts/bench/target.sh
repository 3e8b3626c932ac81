#!/usr/bin/env bash
# Benchmark of `nvmeof target up/down` against the floor: a plain shell script doing the same
# configfs writes. Runs inside the lab guest (real nvmet):
#   scripts/lab/lab run --timeout 900 -- scripts/bench/target.sh [SUBSYSTEMS] [NAMESPACES]
# Default 64 subsystems x 16 namespaces (under TCG emulation use fewer, e.g. 8 16), file-backed (sparse 1 MiB files on tmpfs), one RDMA port
# on 10.77.0.1:4420 linking every subsystem. Prints one line per phase and the ratios.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
S=${1:-64}
N=${2:-16}
CFS=/sys/kernel/config/nvmet
ADDR=10.77.0.1
NVMEOF="$NVMEOF_ROOT/scripts/nvmeof"
work=$(mktemp -d /tmp/nvmeof-bench-XXXXXX)
trap '"$NVMEOF" target down --all --force >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

[ -d "$CFS" ] || { echo "bench: $CFS missing: run inside the lab guest (scripts/lab/lab run -- $0)" >&2; exit 3; }
files=()
for ((s = 1; s <= S; s++)); do
  for ((n = 1; n <= N; n++)); do files+=("$work/s$s-n$n.img"); done
done
truncate -s 1M "${files[@]}"
say() { printf 'bench: %s %s\n' "$(date +%T)" "$*" >&2; }

# nqn I sets $q to subsystem I's NQN without a subshell (forks are slow in the TCG guest).
nqn() { printf -v q 'nqn.2026-10.pk.nextgen:bench-%03d' "$1"; }

# The spec for nvmeof.
{
  echo "subsystems:"
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    echo "  - nqn: $q"
    echo "    allow_any_host: true"
    echo "    namespaces:"
    for ((n = 1; n <= N; n++)); do echo "      - {nsid: $n, device: $work/s$s-n$n.img, buffered_io: true}"; done
  done
  echo "ports:"
  echo "  - id: 1"
  echo "    trtype: rdma"
  echo "    traddr: $ADDR"
  echo "    trsvcid: 4420"
  echo "    subsystems:"
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    echo "      - $q"
  done
} >"$work/spec.yaml"

shell_up() {
  local s n d
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    d="$CFS/subsystems/$q"
    mkdir "$d"
    for ((n = 1; n <= N; n++)); do
      mkdir "$d/namespaces/$n"
      echo "$work/s$s-n$n.img" >"$d/namespaces/$n/device_path"
      echo 1 >"$d/namespaces/$n/buffered_io" # tmpfs has no O_DIRECT
      echo 1 >"$d/namespaces/$n/enable"
    done
    echo 1 >"$d/attr_allow_any_host"
  done
  mkdir "$CFS/ports/1"
  echo rdma >"$CFS/ports/1/addr_trtype"
  echo ipv4 >"$CFS/ports/1/addr_adrfam"
  echo "$ADDR" >"$CFS/ports/1/addr_traddr"
  echo 4420 >"$CFS/ports/1/addr_trsvcid"
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    ln -s "$CFS/subsystems/$q" "$CFS/ports/1/subsystems/$q"
  done
}

shell_down() {
  local s n d
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    rm "$CFS/ports/1/subsystems/$q"
  done
  rmdir "$CFS/ports/1"
  for ((s = 1; s <= S; s++)); do
    nqn "$s"
    d="$CFS/subsystems/$q"
    for ((n = 1; n <= N; n++)); do
      echo 0 >"$d/namespaces/$n/enable"
      rmdir "$d/namespaces/$n"
    done
    rmdir "$d"
  done
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

say "shell up"
t0=$(now); shell_up; t1=$(now); say "shell down"; shell_down; t2=$(now)
sh_up=$(secs "$t0" "$t1"); sh_down=$(secs "$t1" "$t2")
say "nvmeof up"
t0=$(now); "$NVMEOF" target up -f "$work/spec.yaml" >/dev/null; t1=$(now)
say "nvmeof up (no-op)"
"$NVMEOF" target up -f "$work/spec.yaml" >"$work/noop.txt"; t2=$(now)
say "nvmeof down"
"$NVMEOF" target down --all >/dev/null; t3=$(now)
nv_up=$(secs "$t0" "$t1"); nv_noop=$(secs "$t1" "$t2"); nv_down=$(secs "$t2" "$t3")
grep -q '^No changes' "$work/noop.txt" || { echo "bench: the second up was not a no-op" >&2; exit 1; }
t0=$(now); "$NVMEOF" --version >/dev/null; t1=$(now)
startup=$(secs "$t0" "$t1")

echo "target bench: $S subsystems x $N namespaces (file-backed), 1 RDMA port, kernel $(uname -r)"
printf '  %-22s %8s s\n' "shell up (floor)" "$sh_up" "nvmeof up" "$nv_up" "nvmeof up (no-op)" "$nv_noop" \
  "shell down (floor)" "$sh_down" "nvmeof down --all" "$nv_down" "nvmeof --version" "$startup"
echo "  up ratio $(ratio "$nv_up" "$sh_up")x (goal <= 1.5x), down ratio $(ratio "$nv_down" "$sh_down")x, no-op up ${nv_noop}s (goal < 1 s)"
