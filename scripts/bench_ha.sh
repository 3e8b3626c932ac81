#!/usr/bin/env bash
# Failover, side by side: the I/O pause and the time until a cut path is live again, with the two
# paths of one subsystem connected by nvme-cli with its defaults and by nvmeof with its HA profile
# (`connect -a A -a B`). Run from this machine against the lab fabric (scripts/lab fabric up
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
# Inside a guest (the helpers this script runs there): bench_ha.sh guest FUNCTION ARGS…
set -uo pipefail
cd "$(dirname "$0")/.."
NQN=nqn.2024-01.io.nvmeof.ha:bench
T0=10.78.0.1
T1=10.78.1.1

# ---- inside the guests ----------------------------------------------------------------------

# The memory-backed disk the subsystem exports: /dev/habench, 256 MiB.
g_nullb_up() {
  set -e
  modprobe null_blk
  local nb=/sys/kernel/config/nullb/habench
  [ -d $nb ] || { mkdir $nb; echo 256 > $nb/size; echo 1 > $nb/memory_backed; echo 1 > $nb/power; }
  for _ in $(seq 50); do [ -b /dev/habench ] && return; sleep 0.1; done
  echo "bench_ha: /dev/habench did not appear" >&2; return 1
}

g_nullb_down() {
  echo 0 > /sys/kernel/config/nullb/habench/power; rmdir /sys/kernel/config/nullb/habench
} 2>/dev/null

g_target_up() {
  set -e
  modprobe -a nvmet-rdma
  g_nullb_up
  local s=/sys/kernel/config/nvmet/subsystems/$NQN
  [ -d "$s" ] || { mkdir "$s"; echo 1 > "$s/attr_allow_any_host"; }
  [ -d "$s/namespaces/1" ] || {
    mkdir "$s/namespaces/1"; echo /dev/habench > "$s/namespaces/1/device_path"
    echo 1 > "$s/namespaces/1/enable"
  }
  local id addr
  for id in 91 92; do
    addr=$T0; [ $id = 92 ] && addr=$T1
    local p=/sys/kernel/config/nvmet/ports/$id
    [ -d $p ] && continue
    mkdir $p; echo rdma > $p/addr_trtype; echo ipv4 > $p/addr_adrfam
    echo $addr > $p/addr_traddr; echo 4420 > $p/addr_trsvcid
    ln -s "$s" "$p/subsystems/$NQN"
  done
}

g_target_down() {
  local s=/sys/kernel/config/nvmet/subsystems/$NQN id
  for id in 91 92; do rm -f /sys/kernel/config/nvmet/ports/$id/subsystems/$NQN; rmdir /sys/kernel/config/nvmet/ports/$id; done
  echo 0 > "$s/namespaces/1/enable"; rmdir "$s/namespaces/1" "$s"
  g_nullb_down
} 2>/dev/null

# The controllers of NQN on this node, one per line: "nvmeN traddr".
g_ctrls() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ] || continue
    echo "${c##*/} $(sed -n 's/.*traddr=\([^,]*\).*/\1/p' "$c/address")"
  done
}

g_host_disconnect() {
  local c
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ] && echo 1 > "$c/delete_controller"
  done
  true
}

# MODE: nvme-cli (its defaults) or nvmeof (its HA profile, one command for both paths), or
# nvmeof-rdma-tcp (the HA profile, rdma to link 0's address and tcp to link 1's: a target with a
# tcp port there).
g_host_connect() {
  set -e
  g_host_disconnect
  case $1 in
    nvme-cli)
      nvme connect -t rdma -a $T0 -s 4420 -n $NQN >/dev/null
      nvme connect -t rdma -a $T1 -s 4420 -n $NQN >/dev/null
      ;;
    nvmeof)
      scripts/nvmeof hostnqn --generate >/dev/null # nvme-cli makes do without one; nvmeof asks for it
      scripts/nvmeof connect -t rdma -a $T0 -a $T1 -s 4420 -n $NQN >/dev/null ;;
    nvmeof-rdma-tcp)
      scripts/nvmeof hostnqn --generate >/dev/null
      scripts/nvmeof connect --ha -t rdma -a $T0 -s 4420 -n $NQN >/dev/null
      scripts/nvmeof connect --ha -t tcp -a $T1 -s 4420 -n $NQN >/dev/null ;;
    *) echo "unknown mode $1" >&2; return 2 ;;
  esac
  local head
  for _ in $(seq 50); do
    head=$(ls -d /sys/block/nvme*n1 2>/dev/null | grep -v 'nvme[0-9]*c[0-9]' | head -1)
    [ -n "$head" ] && break
    sleep 0.2
  done
  local s
  for s in /sys/class/nvme-subsystem/*; do
    [ "$(cat "$s/subsysnqn")" = "$NQN" ] && echo "$2" > "$s/iopolicy"
  done
  echo "/dev/${head##*/}"
}

# Whether PID runs: not gone and not a zombie. fio's parent (the exec agent's job) does not reap
# it, so `kill -0` alone would see an exited fio as running forever.
running() {
  local st
  read -r _ _ st _ 2>/dev/null < "/proc/$1/stat" && [ "$st" != Z ]
}

# Starts fio and the path poller in WORK (background); prints nothing.
g_io_start() {
  local dev=$1 work=$2 runtime=$3
  mkdir -p "$work"
  (
    cd "$work"
    exec fio --name=ha --filename="$dev" --direct=1 --ioengine=libaio --iodepth=16 --rw=randwrite \
      --bs=4k --size=128M --time_based --runtime="$runtime" --verify=crc32c --verify_backlog=1024 \
      --verify_fatal=1 --write_lat_log=ha --log_avg_msec=0 --log_unix_epoch=1 \
      --output-format=json --output=fio.json >fio.out 2>fio.err
  ) </dev/null >/dev/null 2>&1 &
  echo $! > "$work/fio.pid"
  local ctrls
  # Each controller with its path's ANA state file (nvmeXcYn1/ana_state), read with its state.
  ctrls=$(g_ctrls | while read -r n a; do echo "$n $a $(ls -d /sys/class/nvme/$n/nvme*c*n1 2>/dev/null | head -1)/ana_state"; done)
  (
    # One line per 100 ms (no fork: the guest's one vCPU is shared): epoch, per controller
    # name:traddr:state:ana_state, then per link its carrier and tx bytes.
    exec {tick}<> <(:)
    local pid line n a f st ana c0 c1 t0 t1
    read -r pid < "$work/fio.pid"
    while running "$pid"; do
      line="$EPOCHREALTIME"
      while read -r n a f; do
        st=gone ana=none
        [ -r /sys/class/nvme/$n/state ] && read -r st < /sys/class/nvme/$n/state
        [ -r "$f" ] && read -r ana < "$f"
        line+=" $n:$a:$st:$ana"
      done <<<"$ctrls"
      read -r c0 < /sys/class/net/fab0/carrier
      read -r c1 < /sys/class/net/fab1/carrier
      read -r t0 < /sys/class/net/fab0/statistics/tx_bytes
      read -r t1 < /sys/class/net/fab1/statistics/tx_bytes
      echo "$line carrier0=$c0 carrier1=$c1 tx0=$t0 tx1=$t1"
      read -r -t 0.1 -u "$tick"
    done > "$work/paths.log"
  ) </dev/null >/dev/null 2>&1 &
  echo $! > "$work/poll.pid"
}

# The link (0 or 1) carrying the I/O now: the one whose tx bytes grew more over the last 2 s.
g_busy_link() {
  local work=$1
  sleep 2
  tail -20 "$work/paths.log" | awk '{ for (i = 2; i <= NF; i++) { if ($i ~ /^tx0=/) t0[NR] = substr($i, 5); if ($i ~ /^tx1=/) t1[NR] = substr($i, 5) } }
    END { d0 = t0[NR] - t0[1]; d1 = t1[NR] - t1[1]; print (d1 > d0) ? 1 : 0 }'
}

# A blackhole on this node's LINK (on) or its end (off): every packet in or out dropped, carrier
# up. Prints this node's clock when the fault began (before the rules go in: on a starved guest
# the batch itself has taken over a second, with the first rule dropping packets all along) or
# ended (after the rules are gone). The rules go in one tc batch: three tc processes took seconds
# each on a starved guest, and with only the outgoing rule in place the storage server's
# keep-alive expired and its disconnect still reached this node, a different fault.
g_blackhole() {
  local dev=fab$1
  if [ "$2" = on ]; then
    echo "$EPOCHREALTIME"
    tc -batch - <<EOF2
qdisc replace dev $dev root netem loss 100%
qdisc replace dev $dev ingress
filter replace dev $dev ingress pref 1 matchall action drop
EOF2
  else
    # -force: the second delete is tried even when the first fails. The fault is gone only when
    # neither qdisc is left; otherwise say what is (a caller carrying on would test a cut link).
    printf 'qdisc del dev %s ingress\nqdisc del dev %s root\n' "$dev" "$dev" | tc -force -batch - 2>/dev/null
    if tc qdisc show dev "$dev" | grep -qE 'netem|ingress'; then
      echo "blackhole off: $dev still has: $(tc qdisc show dev "$dev" | tr '\n' ';')" >&2
      return 1
    fi
    echo "$EPOCHREALTIME"
  fi
}

# Port ID's ANA group 1 (the kernel's default group, which holds the namespace) to STATE, the way
# MODE does it: nvme-cli, a configfs write; nvmeof, `nvmeof target ana`.
g_ana() {
  case $1 in
    nvmeof*) scripts/nvmeof target ana --port "$2" --state "$3" >/dev/null ;;
    *) echo "$3" > /sys/kernel/config/nvmet/ports/$2/ana_groups/1/ana_state ;;
  esac
}

# The kernel's own account of each attempt, kept per run in LOGS: nvme_rdma's and nvmet_rdma's
# debug lines (each rdma_cm event with its status) in dmesg, and the rdma_cma, ib_cma and neigh
# trace events (every CM message sent, every neighbour state change) in the trace buffer.
g_trace_on() {
  mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
  mountpoint -q /sys/kernel/tracing || mount -t tracefs none /sys/kernel/tracing
  local m e
  for m in nvme_rdma nvmet_rdma; do echo "module $m +pt" > /sys/kernel/debug/dynamic_debug/control; done
  for e in rdma_cma ib_cma neigh; do echo 1 > /sys/kernel/tracing/events/$e/enable; done
  echo 4096 > /sys/kernel/tracing/buffer_size_kb
  echo > /sys/kernel/tracing/trace
  echo 1 > /sys/kernel/tracing/tracing_on
} 2>/dev/null

# Waits until ADDR's path is usable again (live, ANA optimized; at most WAIT s), lets I/O run 10 s
# more, stops fio.
g_io_finish() {
  local work=$1 addr=$2 wait=$3 n a st ana f
  read -r n a < <(g_ctrls | grep " $addr\$")
  f=$(ls -d /sys/class/nvme/$n/nvme*c*n1 2>/dev/null | head -1)/ana_state
  for _ in $(seq $((wait * 5))); do
    st=gone ana=optimized
    [ -n "$n" ] && [ -r /sys/class/nvme/$n/state ] && read -r st < /sys/class/nvme/$n/state
    [ -r "$f" ] && read -r ana < "$f"
    [ "$st" = live ] && [ "$ana" = optimized ] && break
    sleep 0.2
  done
  sleep 10
  kill -INT "$(cat "$work/fio.pid")" 2>/dev/null
  while running "$(cat "$work/fio.pid")"; do sleep 0.5; done
  sleep 0.3
}

# Figures of a finished run: CUT_AT and BACK_AT are this node's clock when the fault began and
# ended; ADDR the cut path's target address. One line of key=value.
g_report() {
  local work=$1 cut_at=$2 back_at=$3 addr=$4
  /usr/bin/python3 - "$work" "$cut_at" "$back_at" "$addr" <<'PY'
import json, sys, glob
work, addr = sys.argv[1], sys.argv[4]
link = addr.split(".")[2]
if sys.argv[2] == "carrier":
    # The cut and its end as this node saw them: its NIC's carrier on that link.
    cut_at = back_at = None
    for line in open(f"{work}/paths.log"):
        p = line.split()
        c = [x for x in p if x.startswith(f"carrier{link}=")][0][-1]
        if c == "0" and cut_at is None:
            cut_at = float(p[0])
        if c == "1" and cut_at is not None and back_at is None:
            back_at = float(p[0])
elif sys.argv[2] == "ana":
    # The planned move as this node saw it: its path's ANA state leaving optimized and coming
    # back (the write is on the storage server, whose clock this node's logs cannot be set against).
    cut_at = back_at = None
    for line in open(f"{work}/paths.log"):
        p = line.split()
        st = [x.split(":") for x in p[1:] if x.count(":") >= 3 and x.split(":")[1] == addr]
        if not st:
            continue
        if st[0][3] != "optimized" and cut_at is None:
            cut_at = float(p[0])
        if st[0][3] == "optimized" and cut_at is not None and back_at is None:
            back_at = float(p[0])
    if back_at is None:
        back_at = cut_at
else:
    cut_at, back_at = float(sys.argv[2]), float(sys.argv[3])
try:
    text = open(f"{work}/fio.json").read()  # fio may print notes before its JSON
    j = json.loads(text[text.index("{"):])["jobs"][0]
    err = j["error"]
    clat = max(j["write"]["clat_ns"]["max"], j["read"]["clat_ns"]["max"]) / 1e6
    ios = j["write"]["total_ios"]
    verified = j["read"]["total_ios"]
except Exception as e:
    err, clat, ios, verified = f"no fio json ({e})", -1, 0, 0
times = []
for f in glob.glob(f"{work}/ha_clat.*.log"):  # one line per I/O: completion ms, clat ns, …
    for line in open(f):
        p = line.split(",")
        if len(p) > 1:
            times.append(int(p[0]) / 1000.0)
times.sort()
def gap(lo, hi):
    """The longest time with no completion whose start lies in [lo, hi)."""
    return max([b - a for a, b in zip(times, times[1:]) if lo <= a < hi] or [0.0])
live_at = None
states = []
for line in open(f"{work}/paths.log"):
    p = line.split()
    t = float(p[0])
    st = [x.split(":") for x in p[1:] if ":" in x]
    cut = [s for s in st if s[1] == addr]
    if not cut:
        continue
    ana = cut[0][3] if len(cut[0]) > 3 else "optimized"
    s = cut[0][2] if ana in ("optimized", "none") else f"{cut[0][2]}/{ana}"
    if not states or states[-1][1] != s:
        states.append((round(t - cut_at, 1), s))
    if t >= back_at and s == "live" and live_at is None:
        live_at = t
end = times[-1] if times else back_at
# Bytes this node sent on the cut link once its path was live again: I/O came back to it.
tx = []
for line in open(f"{work}/paths.log"):
    p = line.split()
    if live_at is not None and float(p[0]) >= live_at:
        tx.append(int([x for x in p if x.startswith(f"tx{link}=")][0][4:]))
out = {
    "errors": err,
    "writes": ios,
    "verified": verified,
    "clat_max_ms": round(clat, 1),
    "pause_calm_ms": round(gap(times[0] + 2, cut_at - 1) * 1000) if times else -1,
    "pause_cut_ms": round(gap(cut_at - 1, back_at) * 1000),
    "pause_back_ms": round(gap(back_at, end + 1) * 1000),
    "back_s": round(live_at - back_at, 1) if live_at else "never",
    "tx_back_kib": (tx[-1] - tx[0]) // 1024 if len(tx) > 1 else 0,
    "states": [[t, s] for t, s in states],
}
print(json.dumps(out))
PY
}

if [ "${1:-}" = guest ]; then
  shift
  f=$1
  shift
  "g_$f" "$@"
  exit
fi

# ---- on this machine ----------------------------------------------------------------------------

RUNS="${RUNS:-2}"
FAULTS="${FAULTS:-a b c}"
MODES="${MODES:-nvme-cli nvmeof}"
IOPOLICIES="${IOPOLICIES:-numa round-robin}"
CUT="${CUT:-15}"
CALM="${CALM:-$((CUT + 3))}"
BACK_WAIT="${BACK_WAIT:-90}"
SELF=scripts/bench_ha.sh
on() { local n=$1; shift; scripts/lab fabric exec --timeout 900 "$n" -- "$SELF" guest "$@"; }
sh_on() { local n=$1; shift; scripts/lab fabric exec --timeout 120 "$n" -- bash -c "$*"; }

scripts/lab fabric exec target -- true >/dev/null 2>&1 || {
  echo "bench_ha: the lab fabric is not up (scripts/lab fabric up --hosts 1 --links 2)" >&2
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
      dev=$(on host1 host_connect "$mode" "$IOPOLICY") || { echo "bench_ha: connect ($mode) failed" >&2; exit 1; }
      on host1 io_start "$dev" "$work" 1200 >/dev/null # stopped by io_finish
      sleep "$CALM"
      link=$(on host1 busy_link "$work")
      addr=10.78.$link.1
      case $fault in
        a) # a pulled cable: both ends lose carrier (host1 logs when, by its own clock)
          scripts/lab fabric link target "$link" off host1
          scripts/lab fabric link host1 "$link" off
          sleep "$CUT"
          scripts/lab fabric link target "$link" on host1
          scripts/lab fabric link host1 "$link" on
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
