#!/usr/bin/env bash
# Failover, side by side: the I/O pause and the time until a cut path is live again, with the two
# paths of one subsystem connected by nvme-cli with its defaults and by nvmeof with its HA profile
# (`connect -a A -a B`). Run from this machine against the lab fabric (scripts/lab/lab fabric up
# --hosts 1 --links 2); all traffic stays inside the guests.
#
# The storage server exports one memory-backed null_blk on two rdma ports, 10.78.0.1 and
# 10.78.1.1. host1 connects both paths, runs fio (direct, QD 16, 4 KiB random writes, verified as
# it goes) on the multipath head, and the link of the path carrying the I/O is cut for CUT seconds:
#   a  carrier loss: the storage server's NIC towards host1 on that link (QEMU set_link)
#   b  blackhole: every packet both ends send on that link is dropped (netem loss 100%)
#   c  planned: the storage server moves that port's ANA group to inaccessible, then back to
#      optimized: with nvme-cli, one configfs write each way (as with nvmetcli or by hand); with
#      nvmeof, `nvmeof target ana`
#   d  the fault ends (after a, b and c): the link comes back or the group is optimized again, the
#      path is usable again and I/O returns to it; measured in the same runs, after each cut
# Figures per run: fio's errors, its longest completion (clat max), the longest time with no
# completion during the cut (a, b, c), after it (d), and in the CALM seconds before it with no
# fault at all (the calm gap: the floor a pause is read against, since under TCG the guests'
# ordinary I/O stalls for tens of ms at times), and how long the cut path took to be usable
# again after the fault ended: live, and for (c) ANA optimized ("never" when not within BACK_WAIT
# seconds). The fault is dated as host1 saw it: its NIC's carrier (a), its own tc rules (b), its
# path's ANA state (c; so (c)'s "path back" is 0 by construction, and the restore's own delay is
# the ANA change notice's, not measured here).
# Each mode is measured under each iopolicy, side by side: numa (all I/O of a CPU on one path) and
# round-robin (I/O alternates between the live paths); the cut is on the link that carried more
# bytes in the 2 s before it (under round-robin both carry about as much).
# Environment: RUNS (2), FAULTS ("a b c"), MODES ("nvme-cli nvmeof"), IOPOLICIES ("numa
# round-robin"), CUT (15), CALM (I/O before the cut, s; CUT + 3: the calm gap is taken over its
# last CUT s or so, after fio's first 2 s), BACK_WAIT (90), LOGS (a folder on this machine for each run's figures
# and both ends' kernel logs, CM and neighbour traces; default a new /tmp/bench_ha.XXXXXX, printed at the end).
#
# Inside the guests it runs the fabric tests' own helpers, tests/fabric/guest_faults.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."

RUNS="${RUNS:-2}"
FAULTS="${FAULTS:-a b c}"
MODES="${MODES:-nvme-cli nvmeof}"
IOPOLICIES="${IOPOLICIES:-numa round-robin}"
CUT="${CUT:-15}"
CALM="${CALM:-$((CUT + 3))}"
BACK_WAIT="${BACK_WAIT:-90}"
GUEST=tests/fabric/guest_faults.sh
on() { local n=$1; shift; scripts/lab/lab fabric exec --timeout 900 "$n" -- "$GUEST" "$@"; }
sh_on() { local n=$1; shift; scripts/lab/lab fabric exec --timeout 120 "$n" -- bash -c "$*"; }

scripts/lab/lab fabric exec target -- true >/dev/null 2>&1 || {
  echo "bench ha: the lab fabric is not up (scripts/lab/lab fabric up --hosts 1 --links 2)" >&2
  exit 3
}
on target target_up || exit 1
trap 'on host1 host_disconnect >/dev/null 2>&1; on target target_down >/dev/null 2>&1' EXIT
LOGS="${LOGS:-$(mktemp -d /tmp/bench_ha.XXXXXX)}"
mkdir -p "$LOGS"
results=$LOGS/runs.jsonl
for fault in $FAULTS; do
 for run in $(seq "$RUNS"); do
  for IOPOLICY in $IOPOLICIES; do
    for mode in $MODES; do
      work=/tmp/bench_ha/$mode-$IOPOLICY-$fault-$run
      for n in host1 target; do
        on $n trace_on
        sh_on $n "rm -rf $work; dmesg -C; echo > /sys/kernel/tracing/trace" >/dev/null
      done
      dev=$(on host1 host_connect "$mode" "$IOPOLICY") || { echo "bench ha: connect ($mode) failed" >&2; exit 1; }
      on host1 io_start "$dev" "$work" 1200 >/dev/null # stopped by io_finish
      sleep "$CALM"
      link=$(on host1 busy_link "$work")
      addr=10.78.$link.1
      case $fault in
        a) # a pulled cable: both ends lose carrier (host1 logs when, by its own clock)
          scripts/lab/lab fabric link target "$link" off host1
          scripts/lab/lab fabric link host1 "$link" off
          sleep "$CUT"
          scripts/lab/lab fabric link target "$link" on host1
          scripts/lab/lab fabric link host1 "$link" on
          cut_at=carrier back_at=carrier
          ;;
        b) # dropped at host1's end, both ways (its clock says when)
          cut_at=$(on host1 blackhole "$link" on)
          sleep "$CUT"
          back_at=$(on host1 blackhole "$link" off)
          ;;
        c) # planned: the port's group inaccessible, then optimized; dated by host1's view of it
          on target ana "$mode" $((91 + link)) inaccessible
          sleep "$CUT"
          on target ana "$mode" $((91 + link)) optimized
          cut_at=ana back_at=ana
          ;;
      esac
      on host1 io_finish "$work" "$addr" "$BACK_WAIT"
      r=$(on host1 report "$work" "$cut_at" "$back_at" "$addr")
      echo "{\"mode\": \"$mode\", \"fault\": \"$fault\", \"run\": $run, \"link\": $link, \"iopolicy\": \"$IOPOLICY\", \"r\": $r}" >> "$results"
      echo "$mode $IOPOLICY fault=$fault run=$run link=$link $r"
      tag=$mode-$IOPOLICY-$fault-$run
      for n in host1 target; do
        sh_on $n "dmesg" > "$LOGS/$tag.$n.dmesg"
        sh_on $n "cat /sys/kernel/tracing/trace" | grep -v ' fib' > "$LOGS/$tag.$n.trace"
        sh_on $n "ip neigh; rdma resource show cm_id" > "$LOGS/$tag.$n.end"
      done
      sh_on host1 "cat $work/paths.log" > "$LOGS/$tag.paths.log"
    done
  done
 done
done

# Side by side: per fault, each mode's figures over its runs (min-max), and the pause ratio.
python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def span(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    if not xs:
        return "never"
    lo, hi = min(xs), max(xs)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"
faults = {"a": "carrier loss", "b": "blackhole", "c": "planned"}
print(f"\n{'fault':<18}{'iopolicy':<13}{'connected by':<14}{'err runs':>9}{'clat max ms':>14}{'calm gap ms':>13}{'pause cut ms':>15}{'pause back ms':>15}{'path back s':>13}")
for f in sorted({r["fault"] for r in rows}):
  for p in sorted({r["iopolicy"] for r in rows}):
    for m in sorted({r["mode"] for r in rows}):
        rs = [r["r"] for r in rows if r["fault"] == f and r["mode"] == m and r["iopolicy"] == p]
        if not rs:
            continue
        backs = [r["back_s"] for r in rs]
        back = span(backs) + (" (never in some)" if "never" in backs and len(set(map(str, backs))) > 1 else "")
        print(f"{faults.get(f, f) + ' (' + f + ')':<18}{p:<13}{m:<14}{sum(1 for r in rs if r['errors'] not in (0, '0')):>9}"
              f"{span([r['clat_max_ms'] for r in rs]):>14}{span([r.get('pause_calm_ms') for r in rs]):>13}"
              f"{span([r['pause_cut_ms'] for r in rs]):>15}"
              f"{span([r['pause_back_ms'] for r in rs]):>15}{back:>13}")
# The goal, side by side: nvmeof's pause over nvme-cli's (medians over the runs), during the fault
# and after it ended (d); and each side's pause over its own calm gap (the same runs' longest gap
# with no fault): about 1x is no pause beyond what the I/O shows anyway.
def median(xs):
    xs = sorted(x for x in xs if isinstance(x, (int, float)))
    return xs[len(xs) // 2] if xs else None
print(f"\n{'fault':<18}{'iopolicy':<13}{'pause cut nvmeof/nvme-cli':>27}{'pause back (d) nvmeof/nvme-cli':>32}"
      f"{'cut over calm, nvme-cli / nvmeof':>35}")
for f in sorted({r["fault"] for r in rows}):
  for p in sorted({r["iopolicy"] for r in rows}):
    cols = []
    for key in ("pause_cut_ms", "pause_back_ms"):
        m = {mode: median([r["r"][key] for r in rows if r["fault"] == f and r["iopolicy"] == p and r["mode"] == mode])
             for mode in ("nvme-cli", "nvmeof")}
        if m["nvme-cli"] is None or m["nvmeof"] is None:
            cols.append("-")
        else:
            ratio = f"{m['nvmeof'] / m['nvme-cli']:.2f}x" if m["nvme-cli"] else "-"
            cols.append(f"{m['nvmeof']} / {m['nvme-cli']} ms = {ratio}")
    over = []
    for mode in ("nvme-cli", "nvmeof"):
        rs = [r["r"] for r in rows if r["fault"] == f and r["iopolicy"] == p and r["mode"] == mode]
        cut, calm = median([r["pause_cut_ms"] for r in rs]), median([r.get("pause_calm_ms") for r in rs])
        over.append(f"{cut / calm:.1f}x" if cut is not None and calm else "-")
    print(f"{faults.get(f, f) + ' (' + f + ')':<18}{p:<13}{cols[0]:>27}{cols[1]:>32}{' / '.join(over):>35}")
cells = {(r["fault"], r["mode"], r["iopolicy"]) for r in rows}
print(f"\n(runs per cell: {len(rows) // max(1, len(cells))}; all rows in {sys.argv[1]})")
PY
