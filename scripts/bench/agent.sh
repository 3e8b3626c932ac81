#!/usr/bin/env bash
# The time from a storage server's change to the block device on every compute node: the agent
# (`nvmeof agent` on the compute nodes) beside the Ansible collection's site.yml, side by side in
# one run of the lab fabric (separate guests, nvmet-rdma and nvme-rdma over rxe, Ansible from this
# machine through each node's 127.0.0.1 SSH forward):
#   scripts/bench/agent.sh          # boots the fabric if it is not up, and takes it down after
# ROUNDS (default 10) changes each, alternating: each adds one subsystem for both compute nodes
# through the collection's storage play; an Ansible round runs the whole site.yml (install, facts,
# the storage server, the compute nodes' connect), an agent round `site.yml --tags target` while
# the agents follow. Prints one line per round on stderr, then the table (medians and maxima) and
# the ratio. Needs ansible-playbook (scripts/setup --lab installs ansible-core).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/fabric.sh"
find_deno || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
command -v ansible-playbook >/dev/null || die "ansible-playbook is missing: run scripts/setup --lab"
fabric_for_bench
"$deno" run --quiet --no-prompt --cached-only --frozen --allow-all "$NVMEOF_ROOT/scripts/bench/lib/agent.ts"
