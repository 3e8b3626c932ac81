# shellcheck shell=bash
# The lab's fabric (sourced by scripts/lab/lab): a storage server `target` and compute nodes `host1`,
# `host2`…, each a QEMU guest with its own kernel, its own disk (/etc, hostname, hostnqn survive
# its reboots) and an rxe device on each link. Links are virtual Ethernet: QEMU `-netdev dgram`
# over unix sockets, one socket pair per NIC pair, so no packet ever touches the host's network
# and either end can be power-cut and booted again while the other keeps running.
#
#   link L (0, 1): 10.78.L.0/24; target .1, hostN .(N+1); netdev fabL, rxe device rxeL on every
#   node. The target has one NIC per compute node on each link, joined by a bridge named fabL.
#
# State lives in LAB_FABRIC (default /tmp/nvmeof-fabric-<hash of the checkout>):
#   fabric.env                 the shape (LAB_FABRIC_NODES, LAB_FABRIC_LINKS)
#   s/                         the links' sockets
#   NODE/share/                the node's /.lab (stage2, env, jobs/, ready, console.log)
#   NODE/upper.img             its disk (the overlay's upper layer, ext4)
#   NODE/data.img              the target's second disk, /dev/vdb (survives power cuts)
#   NODE/qemu.pid, qemu.log, mon.sock, watchdog.pid
#   NODE/ssh.port              the loopback port forwarded to the node's sshd
#   ssh/id_ed25519             the SSH key of this fabric run (0600), made at `fabric up`
#   ssh/known_hosts            the nodes' host keys (each node makes its own at first boot)
#
# SSH (what Ansible needs): each node has one more NIC, QEMU user networking with restrict=on (the
# guest reaches nothing outside; no DHCP, DNS or routing to this machine's networks) whose only
# way in is hostfwd=tcp:127.0.0.1:PORT-:22, bound to this machine's loopback and nowhere else. The
# guest's sshd listens on that NIC alone (10.0.2.15) and takes only the fabric run's key.

FABRIC_MAC_PREFIX=52:54:00:78
# The guest's address on its SSH NIC (QEMU user networking's default guest address).
FABRIC_SSH_GUEST=10.0.2.15

fabric_dir() {
  printf '%s\n' "${LAB_FABRIC:-/tmp/nvmeof-fabric-$(printf '%s' "$NVMEOF_ROOT" | sha256sum | cut -c1-8)}"
}

# fabric_load: reads the shape of the running fabric into FDIR, NODES, LINKS.
fabric_load() {
  FDIR=$(fabric_dir)
  [ -f "$FDIR/fabric.env" ] || {
    printf 'lab: error: no fabric is running (%s): start one with scripts/lab/lab fabric up\n' "$FDIR" >&2
    exit 3
  }
  . "$FDIR/fabric.env"
  read -r -a NODES <<<"$LAB_FABRIC_NODES"
  LINKS=$LAB_FABRIC_LINKS
}

# node_index NODE: 1 for the target, N+1 for hostN (the last byte of its addresses).
node_index() {
  case "$1" in
    target) echo 1 ;;
    host[1-9]) echo $((${1#host} + 1)) ;;
    *) return 1 ;;
  esac
}

fabric_known_node() {
  local n
  for n in "${NODES[@]}"; do [ "$n" = "$1" ] && return 0; done
  printf 'lab: error: no node %q in this fabric (nodes: %s)\n' "$1" "${NODES[*]}" >&2
  exit 2
}

# node_qemu_args NODE: QARGS for NODE (after build and choose_accel).
node_qemu_args() {
  local node="$1" d="$FDIR/$1" idx l n k smp mem links=() env
  idx=$(node_index "$node")
  smp=${LAB_FABRIC_SMP:-1}
  mem=${LAB_FABRIC_MEM:-1536}
  qemu_base_args "$d/share" "$smp" "$mem" lab.upper=vda
  QARGS+=(-drive "file=$(qesc "$d/upper.img"),if=virtio,format=raw,cache=writeback"
    -chardev "socket,id=mon,path=$(qesc "$d/mon.sock"),server=on,wait=off"
    -mon chardev=mon,mode=readline)
  [ "$node" = target ] && QARGS+=(-drive "file=$(qesc "$d/data.img"),if=virtio,format=raw,cache=none")
  QARGS+=(-netdev "user,id=ssh,restrict=on,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:$(cat "$d/ssh.port")-$FABRIC_SSH_GUEST:22"
    -device "virtio-net-pci,netdev=ssh,mac=$FABRIC_MAC_PREFIX:ff:0$idx")
  for ((l = 0; l < LINKS; l++)); do
    if [ "$node" = target ]; then
      local macs=()
      for n in "${NODES[@]}"; do
        [ "$n" = target ] && continue
        k=$(node_index "$n")
        QARGS+=(-netdev "dgram,id=l${l}h$k,local.type=unix,local.path=$FDIR/s/t$l$k,remote.type=unix,remote.path=$FDIR/s/h$k$l"
          -device "virtio-net-pci,netdev=l${l}h$k,mac=$FABRIC_MAC_PREFIX:0$l:1$k")
        macs+=("$FABRIC_MAC_PREFIX:0$l:1$k")
      done
      links+=("LAB_LINK_$l=10.78.$l.$idx/24 ${macs[*]}")
    else
      QARGS+=(-netdev "dgram,id=l$l,local.type=unix,local.path=$FDIR/s/h$idx$l,remote.type=unix,remote.path=$FDIR/s/t$l$idx"
        -device "virtio-net-pci,netdev=l$l,mac=$FABRIC_MAC_PREFIX:0$l:0$idx")
      links+=("LAB_LINK_$l=10.78.$l.$idx/24 $FABRIC_MAC_PREFIX:0$l:0$idx")
    fi
  done
  env=$(for v in "${links[@]}"; do printf 'export %s=%q\n' "${v%%=*}" "${v#*=}"; done)
  {
    guest_env
    printf 'export LAB_NODE=%q\n' "$node"
    printf 'export LAB_SSH=%q\n' "$FABRIC_SSH_GUEST/24 $FABRIC_MAC_PREFIX:ff:0$idx"
    printf '%s\n' "$env"
  } >"$d/share/env"
}

# node_boot NODE: starts NODE's qemu in the background (its disks as they are) and records its PID.
node_boot() {
  local node="$1" d="$FDIR/$1" idx pid
  idx=$(node_index "$node")
  # The sockets this node binds (a stale one would make its bind fail).
  rm -f "$d/share/ready" "$d/share/rc" "$d/mon.sock"
  if [ "$node" = target ]; then rm -f "$FDIR"/s/t??; else rm -f "$FDIR/s/h$idx"?; fi
  rm -rf "$d/share/jobs" && mkdir -p "$d/share/jobs"
  : >"$d/share/console.log"
  cp "$NVMEOF_ROOT/scripts/lab/guest.sh" "$d/share/stage2"
  cp "$FDIR/ssh/id_ed25519.pub" "$d/share/authorized_keys"
  node_qemu_args "$node"
  setsid qemu-system-x86_64 "${QARGS[@]}" \
    </dev/null >"$d/qemu.log" 2>&1 &
  pid=$!
  disown "$pid"
  echo "$pid" >"$d/qemu.pid"
  # The whole-run bound: a fabric nobody stops ends by itself.
  setsid bash -c 'sleep "$1"; kill -9 "$2" 2>/dev/null' _ "${LAB_FABRIC_TTL:-5400}" "$pid" \
    </dev/null >/dev/null 2>&1 &
  echo "$!" >"$d/watchdog.pid"
  disown $!
}

node_pid() { cat "$FDIR/$1/qemu.pid" 2>/dev/null; }
# node_alive NODE: its qemu runs (a qemu that died and is not reaped yet is a zombie: not alive).
node_alive() {
  local pid k v state=
  pid=$(node_pid "$1") && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  while read -r k v _; do [ "$k" = State: ] && state=$v && break; done <"/proc/$pid/status" 2>/dev/null
  [ "$state" != Z ]
}

node_console_tail() {
  printf 'lab: %s console tail:\n' "$1" >&2
  tail -n "${2:-30}" "$FDIR/$1/share/console.log" 2>/dev/null | sed 's/^/  /' >&2
  [ -s "$FDIR/$1/qemu.log" ] && sed "s/^/lab: $1 qemu: /" "$FDIR/$1/qemu.log" | tail -n 5 >&2
}

# node_wait_ready NODE SECONDS [retry]: waits for NODE's agent; fails with its console when it died
# or did not come up in time. With "retry", a boot not ready in time returns 97 and says nothing:
# the caller, which boots it once more, says so.
node_wait_ready() {
  local node="$1" bound="$2" mode="${3:-}" start=$SECONDS r=
  while [ $((SECONDS - start)) -lt "$bound" ]; do
    r=
    [ -f "$FDIR/$node/share/ready" ] && read -r r <"$FDIR/$node/share/ready"
    # The file can be seen before its word is in it: only "ready" or "failed" decides.
    [ "$r" = ready ] && return 0
    if [ "$r" = failed ]; then
      printf 'lab: error: %s booted but its links did not come up\n' "$node" >&2
      node_console_tail "$node"
      return 98
    fi
    if ! node_alive "$node"; then
      printf 'lab: error: %s died while booting\n' "$node" >&2
      node_console_tail "$node"
      return 98
    fi
    sleep 0.2
  done
  [ "$mode" = retry ] && return 97
  printf 'lab: error: %s was not ready within %s s\n' "$node" "$bound" >&2
  node_console_tail "$node"
  return 98
}

node_stop() {
  local d="$FDIR/$1" pid
  pid=$(node_pid "$1")
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  pid=$(cat "$d/watchdog.pid" 2>/dev/null)
  [ -n "$pid" ] && kill -9 -- -"$pid" 2>/dev/null
  rm -f "$d/qemu.pid" "$d/watchdog.pid"
}

fabric_up() {
  local hosts=2 links=2 n node start
  while [ $# -gt 0 ]; do
    case "$1" in
      --hosts)
        hosts="${2:?--hosts needs a number}"
        shift 2
        ;;
      --links)
        links="${2:?--links needs a number}"
        shift 2
        ;;
      -q | --quiet)
        quiet=1
        shift
        ;;
      *)
        printf 'lab: error: unknown argument %q (usage: scripts/lab/lab fabric up [--hosts 1-4] [--links 1|2] [-q])\n' "$1" >&2
        exit 2
        ;;
    esac
  done
  [[ "$hosts" =~ ^[1-4]$ ]] || { echo "lab: error: --hosts takes 1 to 4, not '$hosts'" >&2 && exit 2; }
  [[ "$links" =~ ^[12]$ ]] || { echo "lab: error: --links takes 1 or 2, not '$links'" >&2 && exit 2; }
  command -v qemu-system-x86_64 >/dev/null || {
    echo "lab: error: qemu-system-x86_64 is missing. Run: scripts/lab/lab setup (as root)" >&2
    exit 3
  }
  FDIR=$(fabric_dir)
  if [ -f "$FDIR/fabric.env" ]; then
    ( fabric_load && for n in "${NODES[@]}"; do node_stop "$n"; done )
  fi
  rm -rf "$FDIR" && mkdir -p "$FDIR/s" || fail "cannot create $FDIR"
  build
  choose_accel
  NODES=(target)
  for ((n = 1; n <= hosts; n++)); do NODES+=("host$n"); done
  LINKS=$links
  printf 'LAB_FABRIC_NODES=%q\nLAB_FABRIC_LINKS=%q\n' "${NODES[*]}" "$LINKS" >"$FDIR/fabric.env"
  for node in "${NODES[@]}"; do
    mkdir -p "$FDIR/$node/share"
    truncate -s "${LAB_FABRIC_DISK:-2G}" "$FDIR/$node/upper.img"
    mkfs.ext4 -q -F -L "$node" "$FDIR/$node/upper.img" || fail "mkfs.ext4 failed for $node"
  done
  truncate -s "${LAB_FABRIC_DATA:-512M}" "$FDIR/target/data.img"
  fabric_ssh_prepare
  start=$SECONDS
  say "booting ${NODES[*]} with $ACCEL ($ACCEL_WHY), $LINKS link(s), in $FDIR"
  for node in "${NODES[@]}"; do node_boot "$node"; done
  for node in "${NODES[@]}"; do
    node_wait_ready "$node" "${LAB_FABRIC_BOOT_TIMEOUT:-300}" || {
      fabric_down
      exit 98
    }
  done
  fabric_known_hosts || {
    fabric_down
    exit 98
  }
  say "fabric ready in $((SECONDS - start)) s"
  printf '%s\n' "$FDIR"
}

# port_free PORT: nothing listens on PORT on this machine (TCP, any address).
port_free() {
  ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .
}

# fabric_ssh_prepare: this run's SSH key, and a free loopback port per node for its sshd.
fabric_ssh_prepare() {
  local node port
  command -v ssh-keygen >/dev/null || fail "ssh-keygen is missing. Run: scripts/lab/lab setup (as root)"
  mkdir -p "$FDIR/ssh" && chmod 0700 "$FDIR/ssh"
  ssh-keygen -q -t ed25519 -N '' -C "nvmeof-fabric" -f "$FDIR/ssh/id_ed25519" </dev/null ||
    fail "ssh-keygen could not make the fabric's key"
  chmod 0600 "$FDIR/ssh/id_ed25519"
  for node in "${NODES[@]}"; do
    for _ in $(seq 1 50); do
      port=$((20000 + RANDOM % 40000))
      port_free "$port" && ! grep -qsx "$port" "$FDIR"/*/ssh.port && break
    done
    echo "$port" >"$FDIR/$node/ssh.port"
  done
}

# fabric_known_hosts: ssh/known_hosts from each node's own host key (read through the agent, not
# over SSH, so the first connection is already verified).
fabric_known_hosts() {
  local node key
  : >"$FDIR/ssh/known_hosts"
  for node in "${NODES[@]}"; do
    key=$(fabric_exec --timeout 60 "$node" -- cat /etc/ssh/ssh_host_ed25519_key.pub) || {
      printf 'lab: error: %s has no SSH host key\n' "$node" >&2
      return 1
    }
    printf '[127.0.0.1]:%s %s\n' "$(cat "$FDIR/$node/ssh.port")" "${key% *}" >>"$FDIR/ssh/known_hosts"
  done
}

# fabric_ssh_config [--inventory]: an ssh_config with one Host per node (ssh -F FILE host1), or an
# Ansible inventory (INI) with the storage server in [storage] and the compute nodes in [compute].
fabric_ssh_config() {
  local node port key
  fabric_load
  key="$FDIR/ssh/id_ed25519"
  if [ "${1:-}" = --inventory ]; then
    printf '[storage]\n'
    for node in "${NODES[@]}"; do
      [ "$node" = target ] || continue
      printf '%s ansible_host=127.0.0.1 ansible_port=%s\n' "$node" "$(cat "$FDIR/$node/ssh.port")"
    done
    printf '\n[compute]\n'
    for node in "${NODES[@]}"; do
      [ "$node" = target ] && continue
      printf '%s ansible_host=127.0.0.1 ansible_port=%s\n' "$node" "$(cat "$FDIR/$node/ssh.port")"
    done
    printf '\n[all:vars]\nansible_user=root\nansible_ssh_private_key_file=%s\n' "$key"
    printf "ansible_ssh_common_args='-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes'\n" \
      "$FDIR/ssh/known_hosts"
    printf 'ansible_python_interpreter=/usr/bin/python3\n'
    return 0
  fi
  for node in "${NODES[@]}"; do
    port=$(cat "$FDIR/$node/ssh.port")
    printf 'Host %s\n  HostName 127.0.0.1\n  Port %s\n  User root\n  IdentityFile %s\n' \
      "$node" "$port" "$key"
    printf '  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n\n' \
      "$FDIR/ssh/known_hosts"
  done
}

fabric_down() {
  local n
  FDIR=$(fabric_dir)
  [ -f "$FDIR/fabric.env" ] || return 0
  fabric_load
  for n in "${NODES[@]}"; do node_stop "$n"; done
  rm -rf "$FDIR"
}

# fabric_exec [--timeout S] NODE -- CMD…: runs CMD as root on NODE in the caller's directory;
# stdout and stderr come back separately, the exit code is CMD's (124 on timeout, 98 when the
# node died meanwhile, with its console's tail).
fabric_exec() {
  local timeout=600 node jobs id start rc
  while [ $# -gt 0 ]; do
    case "$1" in
      --timeout)
        timeout="${2:?--timeout needs seconds}"
        shift 2
        ;;
      --)
        shift
        break
        ;;
      -*)
        printf 'lab: error: unknown argument %q (usage: scripts/lab/lab fabric exec [--timeout S] NODE -- CMD…)\n' "$1" >&2
        exit 2
        ;;
      *)
        node="$1"
        shift
        ;;
    esac
  done
  [ -n "${node:-}" ] && [ $# -gt 0 ] || {
    echo "lab: error: usage: scripts/lab/lab fabric exec [--timeout S] NODE -- CMD…" >&2
    exit 2
  }
  [[ "$timeout" =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] || {
    echo "lab: error: --timeout takes whole seconds, not '$timeout'" >&2
    exit 2
  }
  fabric_load
  fabric_known_node "$node"
  node_alive "$node" || {
    printf 'lab: error: %s is powered off (scripts/lab/lab fabric boot %s)\n' "$node" "$node" >&2
    exit 98
  }
  jobs="$FDIR/$node/share/jobs"
  id="$(date +%s%N)-$$-$RANDOM"
  {
    printf 'exec'
    printf ' %q' "$@"
    printf '\n'
  } >"$jobs/$id.sh"
  printf '%s\n' "$PWD" >"$jobs/$id.cwd"
  : >"$jobs/$id.go"
  start=$SECONDS
  # The node writes ID.rc in one write, last: the code is there once its line is whole.
  while ! { [ -f "$jobs/$id.rc" ] && read -r rc <"$jobs/$id.rc"; }; do
    if ! node_alive "$node"; then
      printf 'lab: error: %s went down while running the command\n' "$node" >&2
      cat "$jobs/$id.out" 2>/dev/null
      cat "$jobs/$id.err" >&2 2>/dev/null
      node_console_tail "$node" 15
      rm -f "$jobs/$id".*
      return 98
    fi
    # The bound is kept by this machine's clock (a guest's may run fast): once it is reached the
    # node is told to stop the command (jobs/ID.stop), and has 30 s to say it did.
    if [ $((SECONDS - start)) -ge "$timeout" ] && [ ! -e "$jobs/$id.stop" ]; then
      : >"$jobs/$id.stop"
    fi
    if [ $((SECONDS - start)) -gt $((timeout + 30)) ]; then
      printf 'lab: error: %s did not answer within %s s\n' "$node" "$((timeout + 30))" >&2
      rm -f "$jobs/$id".*
      return 124
    fi
    sleep 0.05
  done
  cat "$jobs/$id.out"
  cat "$jobs/$id.err" >&2
  rm -f "$jobs/$id".*
  [ "$rc" = 124 ] && printf 'lab: error: the command did not finish within %s s on %s\n' "$timeout" "$node" >&2
  return "$rc"
}

# fabric_monitor NODE COMMAND: one QEMU monitor command to NODE's qemu.
fabric_monitor() {
  local deno
  deno=$(deno_bin) || die "Deno is missing: run scripts/setup"
  "$deno" run --quiet --allow-net --allow-read --allow-write "$NVMEOF_ROOT/scripts/lab/monitor.ts" \
    "$FDIR/$1/mon.sock" "$2"
}

# fabric_link NODE LINK on|off [PEER]: carrier of NODE's NIC(s) on LINK, as a pulled cable; on
# the target, the NIC towards PEER only, or every NIC on that link.
fabric_link() {
  local node="$1" l="$2" state="$3" peer="${4:-}" n ids=()
  fabric_load
  fabric_known_node "$node"
  [[ "$l" =~ ^[0-9]$ ]] && [ "$l" -lt "$LINKS" ] || { echo "lab: error: no link '$l'" >&2 && exit 2; }
  case "$state" in on | off) ;; *) echo "lab: error: link state is on or off, not '$state'" >&2 && exit 2 ;; esac
  if [ "$node" = target ]; then
    for n in "${NODES[@]}"; do
      [ "$n" = target ] && continue
      [ -n "$peer" ] && [ "$n" != "$peer" ] && continue
      ids+=("l${l}h$(node_index "$n")")
    done
  else
    ids=("l$l")
  fi
  for n in "${ids[@]}"; do fabric_monitor "$node" "set_link $n $state" || return 1; done
}

fabric_power_cut() {
  fabric_load
  fabric_known_node "$1"
  node_stop "$1"
}

fabric_boot() {
  fabric_load
  fabric_known_node "$1"
  node_alive "$1" && { printf 'lab: error: %s is running\n' "$1" >&2 && exit 2; }
  build
  choose_accel
  local bound="${LAB_FABRIC_BOOT_TIMEOUT:-300}" first
  # A reboot takes 10-20 s under TCG. Once, a node booted again after a power cut never became
  # ready (its console silent, its vCPU idle, the next boot from the same disks fine): such a boot
  # gets one more try after FIRST_BOOT_S (scripts/lab/lab, as `run`'s), said on stderr.
  first=$((bound < FIRST_BOOT_S ? bound : FIRST_BOOT_S))
  node_boot "$1"
  local rc=0
  node_wait_ready "$1" "$first" retry || rc=$?
  [ "$rc" = 0 ] && return 0
  # A silent first boot is not an error yet: its console, if it printed anything, goes below the
  # line. A node that died or whose links failed has said so already.
  printf 'lab: %s was not ready %s s after its boot: cutting its power and booting it once more\n' \
    "$1" "$first" >&2
  if [ "$rc" = 97 ] && [ -s "$FDIR/$1/share/console.log" ]; then node_console_tail "$1" 10 || true; fi
  local pid
  pid=$(node_pid "$1")
  node_stop "$1"
  # Its port forward and monitor socket are free once the old qemu is gone.
  for _ in $(seq 1 50); do [ -n "$pid" ] && [ -d "/proc/$pid" ] || break; sleep 0.1; done
  node_boot "$1"
  node_wait_ready "$1" "$bound"
}

cmd_fabric() {
  local verb="${1:-}"
  [ $# -gt 0 ] && shift
  case "$verb" in
    up) fabric_up "$@" ;;
    down) fabric_down ;;
    exec) fabric_exec "$@" ;;
    link)
      [ $# -ge 3 ] || { echo "usage: scripts/lab/lab fabric link NODE LINK on|off [PEER]" >&2 && exit 2; }
      fabric_link "$@"
      ;;
    power-cut)
      [ $# = 1 ] || { echo "usage: scripts/lab/lab fabric power-cut NODE" >&2 && exit 2; }
      fabric_power_cut "$1"
      ;;
    boot)
      [ $# = 1 ] || { echo "usage: scripts/lab/lab fabric boot NODE" >&2 && exit 2; }
      fabric_boot "$1"
      ;;
    dir) fabric_dir ;;
    ssh-config)
      [ $# = 0 ] || [ "$1" = --inventory ] || {
        echo "usage: scripts/lab/lab fabric ssh-config [--inventory]" >&2 && exit 2
      }
      fabric_ssh_config "$@"
      ;;
    *)
      echo "usage: scripts/lab/lab fabric up|down|exec|link|power-cut|boot|dir|ssh-config (see scripts/lab/lab --help)" >&2
      exit 2
      ;;
  esac
}
