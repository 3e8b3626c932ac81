# Sourced by the benchmarks that trace the kernel while the ping runs (bench_ping_sched.sh,
# bench_ping_ticks.sh), after scripts/lib.sh (die): tracefs at T, mounted if it is not.
T=/sys/kernel/tracing
[ -e "$T/trace" ] || mount -t tracefs nodev "$T" || die "tracefs cannot be mounted on $T"

# trace_on KB EVENT…: a fresh trace of EVENTs (tracefs event paths: a group or group/event) only,
# in a KB-per-CPU buffer, stamped with the monotonic clock so the CPUs' events line up.
trace_on() {
  local kb="$1" e
  shift
  echo 0 >"$T/tracing_on"
  echo mono >"$T/trace_clock"
  echo "$kb" >"$T/buffer_size_kb"
  echo 0 >"$T/events/enable"
  for e in "$@"; do
    echo 1 >"$T/events/$e/enable" || die "no trace event $e in this kernel"
  done
  : >"$T/trace"
  echo 1 >"$T/tracing_on"
}

# trace_off OUT: stops the trace, turns its events off and copies it to OUT; warns when the
# buffer lost events.
trace_off() {
  echo 0 >"$T/tracing_on"
  echo 0 >"$T/events/enable"
  cp "$T/trace" "$1"
  if grep -q "LOST.*EVENTS" "$1"; then
    echo "${0##*/}: the trace lost events; a smaller ITERS or a larger buffer" >&2
  fi
}
