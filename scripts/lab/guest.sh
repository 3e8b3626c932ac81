#!/bin/bash
# Stage 2 of a lab guest (see scripts/lab/lab): runs as PID 1 on the overlay of the host's root
# filesystem and mounts what a real host has. Then, in one of two modes:
#   single guest (scripts/lab/lab run): Soft-RoCE on a dummy netdev, one job with a time bound, its
#     exit code left in /.lab/rc, power off;
#   fabric node (scripts/lab/lab fabric, LAB_NODE set): its own hostname, the links to the other
#     nodes with an rxe device on each, the nvmeof units enabled in /etc/systemd/system started as
#     systemd would at boot, then an agent that runs the jobs the host drops into /.lab/jobs.
# Uses shell builtins in loops: every exec over 9p is slow.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t configfs configfs /sys/kernel/config
mount -t tmpfs -o mode=0755 tmpfs /run
# fd 9: a FIFO nobody writes. `read -t N -u 9` on it waits N seconds with no process: an exec
# costs 60-70 ms of the guest's emulated CPU (mkfifo, sleep), a builtin next to nothing.
mkfifo /run/lab-tick && exec 9<>/run/lab-tick && rm -f /run/lab-tick
mkdir -p /run/lock
# /tmp stays the overlay's: a checkout (a CI clone, say) may live under the host's /tmp.
echo 1 >/proc/sys/kernel/sysrq

# bounded SCRIPT STOP OUT ERR: runs bash SCRIPT in its own session, output to OUT and ERR, until it
# ends or the file STOP appears; then its whole session gets TERM, and KILL 3 s later. Says the
# script's code, or 124 when it was stopped. The host writes STOP by its own clock: on a loaded
# host a TCG guest's clock can run fast, so a bound kept here would fire early.
bounded() {
  local script="$1" stop="$2" out="$3" err="$4" pid watcher rc
  setsid bash "$script" </dev/null >"$out" 2>"$err" 9<&- &
  pid=$!
  (
    # Waits on fd 9, not sleep(1): a process started every second would take the CPU from what
    # the command measures.
    while [ ! -e "$stop" ]; do read -r -t 1 -u 9 _; done
    kill -TERM -- "-$pid" 2>/dev/null
    sleep 3
    kill -KILL -- "-$pid" 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
  watcher=$!
  wait "$pid"
  rc=$?
  kill "$watcher" 2>/dev/null
  [ -e "$stop" ] && rc=124
  return "$rc"
}

finish() {
  echo "$1" >/.lab/rc
  sync
  echo o >/proc/sysrq-trigger
  sleep 10
}

. /.lab/env
hostname "${LAB_NODE:-nvmeof-lab}"
ip link set lo up

# rxe_on NETDEV RXE: an rxe device on NETDEV, waited for until its port is ACTIVE.
rxe_on() {
  local state=
  if ! rdma link add "$2" type rxe netdev "$1"; then
    echo "lab-guest: rdma link add $2 on $1 failed" >&2
    return 1
  fi
  for _ in $(seq 1 100); do
    read -r state <"/sys/class/infiniband/$2/ports/1/state" 2>/dev/null
    [[ "$state" == *ACTIVE* ]] && return 0
    sleep 0.05
  done
  echo "lab-guest: $2 port is '$state', not ACTIVE" >&2
}

# nic_by_mac MAC: the name of the NIC with that address.
nic_by_mac() {
  local a n
  for n in /sys/class/net/*; do
    read -r a <"$n/address" 2>/dev/null
    [ "$a" = "$1" ] && printf '%s\n' "${n##*/}" && return 0
  done
  return 1
}

# fabric_links: LAB_LINK_<L>="ADDR/24 MAC…" for each link L. One NIC becomes fabL; several (the
# target's, one per compute node) are enslaved to a bridge named fabL, as a switch would join them.
fabric_links() {
  local l var spec addr macs mac nic n
  modprobe -a virtio_net bridge
  for l in 0 1 2 3; do
    var=LAB_LINK_$l
    spec=${!var:-}
    [ -n "$spec" ] || continue
    read -r addr macs <<<"$spec"
    set -- $macs
    for _ in $(seq 1 50); do
      n=0
      for mac in "$@"; do nic_by_mac "$mac" >/dev/null && n=$((n + 1)); done
      [ "$n" = $# ] && break
      sleep 0.1
    done
    if [ $# = 1 ]; then
      nic=$(nic_by_mac "$1") || { echo "lab-guest: no NIC with MAC $1" >&2 && return 1; }
      ip link set "$nic" name "fab$l"
    else
      ip link add "fab$l" type bridge stp_state 0 forward_delay 0
      for mac in "$@"; do
        nic=$(nic_by_mac "$mac") || { echo "lab-guest: no NIC with MAC $mac" >&2 && return 1; }
        ip link set "$nic" master "fab$l" up
      done
    fi
    ip addr add "$addr" dev "fab$l"
    ip link set "fab$l" up
    rxe_on "fab$l" "rxe$l" || return 1
  done
}

# boot_units: what systemd would start at boot of the nvmeof units enabled on this node (the
# WantedBy= links `nvmeof enable` makes): each ExecStart= line, in the background, its output in
# /var/log/nvmeof-boot/UNIT.log.
boot_units() {
  local link unit line cmd
  mkdir -p /var/log/nvmeof-boot
  for link in /etc/systemd/system/*.wants/nvmeof-*.service; do
    [ -e "$link" ] || continue
    unit=${link##*/}
    cmd=
    while IFS= read -r line; do
      case "$line" in ExecStart=*) cmd=${line#ExecStart=} ;; esac
    done <"$link"
    [ -n "$cmd" ] || continue
    (eval "exec $cmd" </dev/null >"/var/log/nvmeof-boot/$unit.log" 2>&1) &
  done
}

# ssh_on: the SSH NIC (LAB_SSH="ADDR/24 MAC", QEMU user networking reachable only through the
# host's 127.0.0.1 port forward) and sshd on it alone, for the fabric run's key (/.lab/
# authorized_keys). Host keys are made once per node, on its own disk.
ssh_on() {
  local addr mac nic= d=/run/lab-ssh
  read -r addr mac <<<"${LAB_SSH:-}"
  [ -n "$mac" ] || return 0
  for _ in $(seq 1 50); do nic=$(nic_by_mac "$mac") && break; sleep 0.1; done
  [ -n "$nic" ] || { echo "lab-guest: no SSH NIC with MAC $mac" >&2 && return 1; }
  ip link set "$nic" name mgmt
  ip addr add "$addr" dev mgmt
  ip link set mgmt up
  [ -s /etc/ssh/ssh_host_ed25519_key ] ||
    ssh-keygen -q -t ed25519 -N '' -C "root@$LAB_NODE" -f /etc/ssh/ssh_host_ed25519_key </dev/null ||
    return 1
  # sshd runs every command through root's login shell. As bash it would source the lab machine's
  # /root/.bashrc (the guest sees this machine's root filesystem), a developer's pyenv or nvm init:
  # measured at 65 s per command under emulation, and every Ansible task is several commands. A
  # node is a fresh server: root's shell is /bin/sh, which reads no rc file for `sh -c`.
  [ "$(getent passwd root | cut -d: -f7)" = /bin/sh ] || usermod -s /bin/sh root || return 1
  mkdir -p "$d" /run/sshd && chmod 0700 "$d" && chmod 0755 /run/sshd
  cp /.lab/authorized_keys "$d/authorized_keys" && chmod 0600 "$d/authorized_keys"
  printf '%s\n' "ListenAddress ${addr%/*}:22" \
    "HostKey /etc/ssh/ssh_host_ed25519_key" \
    "PermitRootLogin prohibit-password" \
    "PasswordAuthentication no" \
    "KbdInteractiveAuthentication no" \
    "UsePAM no" \
    "AuthorizedKeysFile $d/authorized_keys" \
    "PidFile /run/sshd.pid" \
    "Subsystem sftp /usr/lib/openssh/sftp-server" >"$d/sshd_config"
  /usr/sbin/sshd -f "$d/sshd_config" -E /var/log/lab-sshd.log
}

# agent: runs every job ID the host announces with jobs/ID.go (script jobs/ID.sh, working directory
# in jobs/ID.cwd) until it ends or the host writes jobs/ID.stop; leaves jobs/ID.out, .err and,
# last, .rc.
agent() {
  local jobs=/.lab/jobs go id cwd idle=0
  local -A seen=()
  echo ready >/.lab/ready.tmp && mv /.lab/ready.tmp /.lab/ready
  while :; do
    idle=$((idle < 100 ? idle + 1 : idle))
    for go in "$jobs"/*.go; do
      [ -e "$go" ] || break
      id=${go##*/}
      id=${id%.go}
      [ -n "${seen[$id]:-}" ] && continue
      seen[$id]=1
      idle=0
      read -r cwd <"$jobs/$id.cwd"
      (
        cd "$cwd" 2>/dev/null || cd /
        bounded "$jobs/$id.sh" "$jobs/$id.stop" "$jobs/$id.out" "$jobs/$id.err"
        rc=$?
        # One write, no rename (mv is an exec): the host reads the code once the line is whole.
        echo "$rc" >"$jobs/$id.rc"
      ) &
    done
    # Each look lists the share over 9p, about 9 ms of the guest's CPU: ten a second while jobs
    # come, two a second after about 10 s without one.
    if [ "$idle" -lt 100 ]; then read -r -t 0.1 -u 9 _; else read -r -t 0.5 -u 9 _; fi
  done
}

if [ -n "${LAB_NODE:-}" ]; then
  # First boot of this node's disk: the machine under the overlay (the lab's host) lends its
  # programs, not its identity. Its NVMe host identity, nvmeof state and units are hidden for good
  # (whiteouts on the node's own disk), so each node makes its own.
  if [ ! -e /var/lib/lab-node ]; then
    rm -rf /etc/nvme /etc/nvmeof /etc/systemd/system/nvmeof-* /etc/systemd/system/*.wants/nvmeof-* \
      /etc/ssh/ssh_host_*
    mkdir -p /var/lib && echo "$LAB_NODE" >/var/lib/lab-node
  fi
  if ! fabric_links; then
    echo "lab-guest: the links of $LAB_NODE did not come up" >&2
    ip -br link >&2
    echo failed >/.lab/ready.tmp && mv /.lab/ready.tmp /.lab/ready
    sleep 5
    echo o >/proc/sysrq-trigger
  fi
  ssh_on || echo "lab-guest: sshd did not start on $LAB_NODE (see /var/log/lab-sshd.log)" >&2
  boot_units
  agent
fi

ip link add rxenet0 type dummy
ip addr add 10.77.0.1/24 dev rxenet0
ip link set rxenet0 mtu "${LAB_MTU:-1500}" up
rxe_on rxenet0 rxe0 || finish 98

out=
err=
for p in /sys/class/virtio-ports/*; do
  read -r name <"$p/name"
  case "$name" in
    stdout) out=/dev/${p##*/} ;;
    stderr) err=/dev/${p##*/} ;;
  esac
done
if [ -z "$out" ] || [ -z "$err" ]; then
  echo "lab-guest: virtio-serial ports stdout/stderr not found" >&2
  finish 98
fi

cd "$LAB_CWD" || finish 98
: >/.lab/started
bounded /.lab/job /.lab/stop "$out" "$err"
finish "$?"
