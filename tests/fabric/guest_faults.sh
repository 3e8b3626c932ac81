#!/usr/bin/env bash
# The fabric tests' faults and probes, run inside a lab fabric guest (the guest sees this checkout
# at the same path): the storage server's two-port subsystem NQN on a memory-backed null_blk,
# host1's connection to it by nvme-cli or by nvmeof, fio with a path poller, the link that carries
# the I/O, a blackhole on one link, a planned ANA move, the kernel's traces, and the figures of a
# finished run. tests/fabric (ha.ts, ha_test.ts, ha_doctor_test.ts, ha_planned_test.ts,
# fabric_test.ts, fabric.ts) call it, and so does the failover benchmark scripts/bench/ha.sh, so
# the tests and the benchmark measure with the same code.
#
#   tests/fabric/guest_faults.sh FUNCTION ARGS…     (FUNCTION: one of the g_* below, without g_)
set -uo pipefail
cd "$(dirname "$0")/../.."
NQN=nqn.2024-01.io.nvmeof.ha:bench
T0=10.78.0.1
T1=10.78.1.1

# The memory-backed disk the subsystem exports: /dev/habench, 256 MiB.
g_nullb_up() {
  set -e
  modprobe null_blk
  local nb=/sys/kernel/config/nullb/habench
  [ -d $nb ] || { mkdir $nb; echo 256 > $nb/size; echo 1 > $nb/memory_backed; echo 1 > $nb/power; }
  for _ in $(seq 50); do [ -b /dev/habench ] && return; sleep 0.1; done
  echo "guest_faults: /dev/habench did not appear" >&2; return 1
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

f=$1
shift
"g_$f" "$@"
