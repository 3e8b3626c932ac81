#!/usr/bin/env bash
# The storage server at scale with hundreds of live controllers from separate compute nodes, on
# the lab fabric (nvmet, nvme-rdma and nvme-tcp over rxe, three guests), beside the floor and
# nvme-cli where one exists:
#   scripts/bench/scale_hosts.sh          # boots the fabric if it is not up, and takes it down after
# K (default 16) sizes the storage server's tree as scale.sh's size K (K x 4 subsystems x 4
# null_blk namespaces, K x 32 allowed hosts, 2 ports); host1 opens PER_NODE controllers (default
# 128) over rdma and host2 as many over tcp, one host NQN and host ID each, the first FIRST
# (default 4) by `nvmeof connect`, the rest by writing the option string to /dev/nvme-fabrics (the
# floor). Times, inside the guests, the storage server's no-op up, check, show, refusals (asserted
# to name both machines and change nothing), `target ana` beside a configfs write, metrics and top,
# and host1's list beside nvme-cli's; prints one line per step on stderr, then the table.
# CALLS=1 counts system calls on /sys paths instead of timing (PER_NODE, K and FIRST as well).
# The method and a run's figures: docs/benchmarks.md.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/fabric.sh"
find_deno || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
fabric_for_bench
"$deno" run --quiet --no-prompt --cached-only --frozen --allow-all "$NVMEOF_ROOT/scripts/bench/lib/scale_hosts.ts"
