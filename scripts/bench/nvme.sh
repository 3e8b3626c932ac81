#!/usr/bin/env bash
# 4 KiB random reads over NVMe/RDMA: nvmeof bench's user-space initiator beside fio on the kernel
# initiator (nvme-rdma), in one run on one namespace (meant for the lab guest:
# scripts/lab/lab run --timeout 900 -- scripts/bench/nvme.sh).
#
#   fio --ioengine=io_uring (libaio where io_uring fails) --direct=1 --rw=randread --bs=4k
#       --iodepth Q --numjobs=1 on the kernel's /dev/nvmeXn1
#   vs  nvmeof bench --rw randread --bs 4096 --qd Q                          (Q = 1, 32)
#
# The target: a memory-backed null_blk (SIZE MiB, default 256) exported as namespace 1 of one
# subsystem over nvmet-rdma on ADDR:SVC by plain configfs writes, two host NQNs allowed (one for
# the kernel, one for nvmeof), all removed again on exit.
# fio's figure is lat_ns (submission to completion, --lat_percentiles=1), nvmeof's latency_us:
# both medians in µs. Ratios: QD 1 median latency nvmeof/fio (goal ≤ 1.0), QD 32 IOPS nvmeof/fio
# (goal ≥ 1.0); QD 1 IOPS is printed too.
#
# The kernel initiator is disconnected before nvmeof runs, so each side has the target and the
# CPUs to itself (a connected kernel controller keeps its queues and sends Keep Alive). Both can
# be connected at once, as two hosts with a controller each on the same subsystem (checked in the
# lab guest): BOTH=1 keeps the kernel connected during nvmeof's runs.
# Environment: ADDR (default 10.77.0.1), SVC (default 4422), TIME (seconds per run, default 10),
# SIZE (MiB, default 256), BOTH (default 0).
set -uo pipefail
cd "$(dirname "$0")/../.."
ADDR="${ADDR:-10.77.0.1}"
SVC="${SVC:-4422}"
TIME="${TIME:-10}"
SIZE="${SIZE:-256}"
BOTH="${BOTH:-0}"
N=scripts/nvmeof
for t in fio nvme python3; do
  command -v "$t" >/dev/null || { echo "bench nvme: $t is missing (apt-get install fio nvme-cli python3)" >&2; exit 3; }
done
CFS=/sys/kernel/config
NVMET=$CFS/nvmet
[ -d "$NVMET" ] && [ -d "$CFS/nullb" ] || modprobe -a null_blk nvmet-rdma nvme-rdma 2>/dev/null
[ -d "$NVMET" ] && [ -d "$CFS/nullb" ] || {
  echo "bench nvme: $NVMET or $CFS/nullb missing: run inside the lab guest (scripts/lab/lab run -- $0)" >&2
  exit 3
}

TAG="bn$$"
NQN="nqn.2026-11.io.nvmeof:$TAG-bench-nvme"
K_ID=6b1d8e2a-3c4f-4a5b-8c6d-7e8f9a0b1c2d # the kernel initiator's host
K_HOST="nqn.2014-08.org.nvmexpress:uuid:$K_ID"
U_ID=7c2e9f3b-4d5a-4b6c-9d7e-8f9a0b1c2d3e # nvmeof bench's host
U_HOST="nqn.2014-08.org.nvmexpress:uuid:$U_ID"
NB="$CFS/nullb/$TAG"
SUB="$NVMET/subsystems/$NQN"
PORT="$NVMET/ports/$((($$ % 60000) + 1000))"

# Teardown in reverse order of what was made; each step is recorded once it exists.
undo=()
cleanup() {
  timeout 30 nvme disconnect -n "$NQN" >/dev/null 2>&1
  local i
  for ((i = ${#undo[@]} - 1; i >= 0; i--)); do eval "${undo[i]}" 2>/dev/null; done
}
trap cleanup EXIT
must() { eval "$1" || { echo "bench nvme: target setup failed at: $1" >&2; exit 1; }; }

must "mkdir '$NB'"
undo+=("rmdir '$NB'")
must "echo $SIZE > '$NB/size'; echo 1 > '$NB/memory_backed'; echo 1 > '$NB/power'"
undo+=("echo 0 > '$NB/power'")
must "mkdir '$SUB'"
undo+=("rmdir '$SUB'")
must "echo 0 > '$SUB/attr_allow_any_host'"
for h in "$K_HOST" "$U_HOST"; do
  if [ ! -d "$NVMET/hosts/$h" ]; then
    must "mkdir '$NVMET/hosts/$h'"
    undo+=("rmdir '$NVMET/hosts/$h'")
  fi
  must "ln -s '$NVMET/hosts/$h' '$SUB/allowed_hosts/$h'"
  undo+=("rm '$SUB/allowed_hosts/$h'")
done
must "mkdir '$SUB/namespaces/1'"
undo+=("rmdir '$SUB/namespaces/1'")
must "echo /dev/$TAG > '$SUB/namespaces/1/device_path'; echo 1 > '$SUB/namespaces/1/enable'"
undo+=("echo 0 > '$SUB/namespaces/1/enable'")
must "mkdir '$PORT'"
undo+=("rmdir '$PORT'")
must "echo rdma > '$PORT/addr_trtype'; echo ipv4 > '$PORT/addr_adrfam'; echo $ADDR > '$PORT/addr_traddr'; echo $SVC > '$PORT/addr_trsvcid'"
must "ln -s '$SUB' '$PORT/subsystems/$NQN'"
undo+=("rm '$PORT/subsystems/$NQN'")

# The kernel initiator and its block device (found by the subsystem NQN, as the e2e tests do).
timeout 60 nvme connect -t rdma -a "$ADDR" -s "$SVC" -n "$NQN" -q "$K_HOST" -I "$K_ID" >/dev/null || {
  echo "bench nvme: nvme connect failed" >&2; exit 1; }
dev=
for _ in $(seq 1 100); do
  for b in /sys/block/nvme*n1; do # nvmeXn1, not the multipath path nvmeXcYn1
    [[ ${b##*/} =~ ^nvme[0-9]+n1$ ]] && [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$NQN" ] && { dev=/dev/${b##*/}; break; }
  done
  [ -n "$dev" ] && [ -b "$dev" ] && break
  dev=
  sleep 0.1
done
[ -n "$dev" ] || { echo "bench nvme: no block device for $NQN" >&2; exit 1; }

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }

fio_run() { # ENGINE QD → fio's JSON
  timeout $((TIME + 60)) fio --name=randread --filename="$dev" --ioengine="$1" --direct=1 \
    --rw=randread --bs=4k --iodepth="$2" --numjobs=1 --time_based --runtime="$TIME" \
    --lat_percentiles=1 --output-format=json 2>/dev/null
}

# io_uring where the guest kernel allows it (a 1 s probe), else libaio.
engine=io_uring
TIME=1 fio_run io_uring 1 | json "d['jobs'][0]['error'] or int(d['jobs'][0]['read']['total_ios'] == 0)" 2>/dev/null |
  grep -qx 0 || engine=libaio

declare -A fio_iops fio_med nv_iops nv_med
for qd in 1 32; do
  out=$(fio_run "$engine" "$qd") || { echo "bench nvme: fio ($engine) failed at QD $qd" >&2; exit 1; }
  fio_iops[$qd]=$(json "d['jobs'][0]['read']['iops']" <<<"$out")
  fio_med[$qd]=$(json "d['jobs'][0]['read']['lat_ns']['percentile']['50.000000']/1000" <<<"$out")
done

[ "$BOTH" = 1 ] || timeout 30 nvme disconnect -n "$NQN" >/dev/null
for qd in 1 32; do
  out=$(timeout $((TIME + 120)) $N bench -a "$ADDR" -s "$SVC" -n "$NQN" -q "$U_HOST" -I "$U_ID" \
    --rw randread --bs 4096 --qd "$qd" --time "$TIME" -o json) || {
    echo "bench nvme: nvmeof bench failed at QD $qd" >&2; exit 1; }
  nv_iops[$qd]=$(json "d['passes'][0]['iops']" <<<"$out")
  nv_med[$qd]=$(json "d['passes'][0]['latency_us']['median']" <<<"$out")
done

printf 'bench nvme: %s MiB null_blk over nvmet-rdma %s:%s, 4 KiB randread, %s s per run, fio ioengine=%s%s\n' \
  "$SIZE" "$ADDR" "$SVC" "$TIME" "$engine" "$([ "$BOTH" = 1 ] && echo ', kernel connected during nvmeof')"
printf '%-26s %14s %14s %8s\n' "randread 4 KiB" "fio" "nvmeof" "ratio"
printf '%-26s %14.1f %14.1f %8s\n' "QD 1 median latency µs" "${fio_med[1]}" "${nv_med[1]}" "$(ratio "${nv_med[1]}" "${fio_med[1]}")"
printf '%-26s %14.0f %14.0f %8s\n' "QD 1 IOPS" "${fio_iops[1]}" "${nv_iops[1]}" "$(ratio "${nv_iops[1]}" "${fio_iops[1]}")"
printf '%-26s %14.0f %14.0f %8s\n' "QD 32 IOPS" "${fio_iops[32]}" "${nv_iops[32]}" "$(ratio "${nv_iops[32]}" "${fio_iops[32]}")"
printf '%-26s %14.1f %14.1f %8s\n' "QD 32 median latency µs" "${fio_med[32]}" "${nv_med[32]}" "$(ratio "${nv_med[32]}" "${fio_med[32]}")"
