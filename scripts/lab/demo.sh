#!/usr/bin/env bash
# The product's main job on two machines of the lab fabric (run by `scripts/lab/lab demo`, with the
# fabric up): the storage server `target` exports its second disk over RDMA with `nvmeof target
# up`; the compute node `host1` makes its identity, discovers, connects, writes and reads back
# data; both sides show what they see; then disconnect and down. Every step says which machine it
# runs on. Exits non-zero at the first step that fails, after undoing what it set up.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lab="$here/lab"
nvmeof="${here%/*}/nvmeof"
NQN=nqn.2026-11.io.nvmeof:lab-demo
ADDR=10.78.0.1
DISK=/dev/vdb
step_no=0
connected=0
target_up=0

step() {
  step_no=$((step_no + 1))
  printf '\n==> %d. [%s] %s\n' "$step_no" "$1" "$2"
}

# on NODE CMD…: prints the command as NODE's prompt, runs it there, stops the demo if it fails.
on() {
  local node="$1"
  shift
  printf '%s# %s\n' "$node" "$*"
  "$lab" fabric exec --timeout 300 "$node" -- "$@"
  local rc=$?
  if [ "$rc" != 0 ]; then
    printf '!!! step %d failed on %s (exit %d)\n' "$step_no" "$node" "$rc"
    exit "$rc"
  fi
}

# quiet NODE CMD…: runs CMD on NODE for its output only.
quiet() {
  local node="$1"
  shift
  "$lab" fabric exec --timeout 300 "$node" -- "$@"
}

cleanup() {
  local rc=$?
  if [ "$connected" = 1 ]; then quiet host1 "$nvmeof" disconnect -n "$NQN" >/dev/null 2>&1; fi
  if [ "$target_up" = 1 ]; then quiet target "$nvmeof" target down -f /etc/nvmeof/target.yaml --force >/dev/null 2>&1; fi
  if [ "$rc" = 0 ]; then printf '\nDemo complete: every step passed, on two machines.\n'; fi
  exit "$rc"
}
trap cleanup EXIT

step target "The storage server: its RDMA device on link 0 ($ADDR) and the disk to export"
on target rdma link show rxe0/1
on target lsblk -o NAME,SIZE,TYPE "$DISK"

step host1 "The compute node: its RDMA device, and the storage server's address answering"
on host1 rdma link show rxe0/1
on host1 ping -c 1 -W 5 "$ADDR"

step host1 "The compute node's identity (nvmeof hostnqn --generate: only where it is missing)"
on host1 "$nvmeof" hostnqn --generate
hostnqn=$(quiet host1 "$nvmeof" hostnqn -o json | sed -n 's/.*"hostnqn": *"\([^"]*\)".*/\1/p')
[ -n "$hostnqn" ] || {
  echo "!!! host1 has no host NQN"
  exit 1
}

step target "The target spec: one subsystem, the disk as namespace 1, one RDMA port; only host1 allowed"
spec="hosts:
  - nqn: $hostnqn
subsystems:
  - nqn: $NQN
    hosts: [$hostnqn]
    namespaces:
      - nsid: 1
        device: $DISK
ports:
  - id: 1
    trtype: rdma
    adrfam: ipv4
    traddr: $ADDR
    trsvcid: 4420
    subsystems: [$NQN]"
on target bash -c 'mkdir -p /etc/nvmeof && printf "%s\n" "$1" >/etc/nvmeof/target.yaml && cat /etc/nvmeof/target.yaml' _ "$spec"

step target "Bring the target up (nvmeof target up)"
target_up=1
on target "$nvmeof" target up -f /etc/nvmeof/target.yaml

step target "Apply it again: nothing changes"
on target "$nvmeof" target up -f /etc/nvmeof/target.yaml

step host1 "Discover what the storage server exports to this host (nvmeof discover)"
on host1 "$nvmeof" discover -t rdma -a "$ADDR" -s 4420

step host1 "Connect over RDMA (nvmeof connect)"
connected=1
on host1 "$nvmeof" connect -t rdma -a "$ADDR" -s 4420 -n "$NQN"
on host1 "$nvmeof" list
nsdev=$(quiet host1 "$nvmeof" list -o json | tr -d ' \n' | grep -o '"/dev/nvme[0-9]*n[0-9]*"' | head -n 1 | tr -d '"')
[ -n "$nsdev" ] || {
  echo "!!! no NVMe block device on host1 after connect"
  exit 1
}

step host1 "Write 16 MiB of random data through $nsdev and read it back"
on host1 bash -c "
  dd if=/dev/urandom of=/root/demo.data bs=1M count=16 status=none &&
  dd if=/root/demo.data of=$nsdev bs=1M oflag=direct status=none &&
  dd if=$nsdev of=/root/demo.back bs=1M count=16 iflag=direct status=none &&
  w=\$(sha256sum </root/demo.data | cut -c1-64) && r=\$(sha256sum </root/demo.back | cut -c1-64) &&
  printf 'written sha256 %s\nread    sha256 %s\n' \$w \$r && [ \$w = \$r ] &&
  echo 'The data read back over NVMe/RDMA from the storage server is identical.'"

step target "What the storage server shows (nvmeof target show)"
on target "$nvmeof" target show

step target "The same data, read on the storage server's own disk"
on target bash -c "dd if=$DISK bs=1M count=16 iflag=direct status=none | sha256sum | cut -c1-64"

step host1 "Disconnect (nvmeof disconnect)"
on host1 "$nvmeof" disconnect -n "$NQN"
connected=0

step target "Take the target down (nvmeof target down)"
on target "$nvmeof" target down -f /etc/nvmeof/target.yaml
target_up=0
on target ls /sys/kernel/config/nvmet/subsystems /sys/kernel/config/nvmet/ports
