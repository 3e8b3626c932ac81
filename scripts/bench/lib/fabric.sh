# Sourced by the benchmarks run from this machine on the lab fabric (agent.sh, scale_hosts.sh),
# after lib.sh: `fabric_for_bench` boots the fabric when it is not up and takes it down at exit
# then; a fabric that was up is left as it was found.
fabric_for_bench() {
  fabric_lab="$NVMEOF_ROOT/scripts/lab/lab"
  fabric_booted=0
  if ! "$fabric_lab" fabric exec --timeout 30 target -- true >/dev/null 2>&1; then
    "$fabric_lab" fabric up >/dev/null
    fabric_booted=1
  fi
  trap '[ "$fabric_booted" = 1 ] && "$fabric_lab" fabric down; true' EXIT
}
