#!/usr/bin/env bash
# Benchmark of nvmeof's target side at scale, against the raw configfs floor and nvmetcli, on the
# same work in one lab guest (real nvmet):
#   scripts/lab/lab run --timeout 1800 -- env NVMETCLI_DIR=/var/tmp/nvmetcli scripts/bench/scale.sh [K…]
# Size K (default 1 4 16) is K × BASE_S subsystems (default 4) × NS null_blk namespaces each
# (default 4) and K × BASE_H allowed host NQNs (default 32), each subsystem allowing its share
# (BASE_H/BASE_S, none shared), 2 ports (rdma 10.77.0.1:4420, tcp 10.77.0.1:4421) exporting every
# subsystem. For each size it times `target up` from empty, a no-op `up`, `show`, `check`, `up`
# adding one host to every subsystem, `up --prune` removing one subsystem, and `down --all`; beside
# each, the floor: the same mkdir/write/symlink calls (the plan nvmeof prints with --dry-run -o json,
# replayed by scripts/bench/lib/scale.ts from one Deno process with nothing else) and, for up, show
# and down, nvmetcli's restore, save and clear of the same tree (nvmetcli's JSON from
# `target show -o nvmetcli`).
#
# nvmetcli is in no package registry: bring its source once and point NVMETCLI_DIR at it (never
# commit it); it needs Debian's python3-configshell-fb (apt-get install python3-configshell-fb):
#   git clone https://github.com/linux-nvme/nvmetcli /var/tmp/nvmetcli
# Without NVMETCLI_DIR the nvmetcli column is left empty.
#
# Every figure is the median of REPEAT runs (default 3), each from the same state (the bench puts
# the tree back before each); each start-up, taken from every figure of its side, of ST_REPEAT
# (default 7). Prints one line per operation on stderr, then the table: seconds per
# operation and size, the start-up of each side apart (nvmeof's per command: the same command with
# nothing to do), the time less it ("net"), the ratios, and the growth exponent
# log(t_last/t_first)/log(K ratio). The `up` rows (from empty, no-op, adding a host, pruning) pair
# each run with a run of `up` of an empty spec just before it and take the median of the
# differences as net (tmn); show, check and down, whose start-up needs the empty tree, take their
# start-up's median. Each of nvmetcli's runs likewise follows a run of nvmeof's command on the same
# tree, and its ratio column is the median of those pairs' ratios (tmpeer); those runs of `show` and
# `down` are then also their rows' figures.
# The guest's address-space randomization is off while the bench runs (ASLR=keep leaves it as
# the guest booted: off under TCG, where the lab boots guests with norandmaps):
# the emulator translates a program's machine code anew wherever it is mapped, so with ASLR each
# process pays for translating its runtime again, which hardware never does; that cost is 1.1-1.3 s
# of nvmeof's 1.6-1.9 s start-up in the guest and at most 0.15 s of Python's import of nvmetcli
# (docs/benchmarks.md, "Start-up and the emulator"). Both sides' start-up with it on is printed
# beside the table.
# Both sides read their files from the guest's memory (FILES=memory, the default): the lab guest's
# root is the host's, shared over 9p, where every open and stat of a module or of Python's standard
# library is a round trip to the host, which a storage server reading its own disk does not make.
# Before anything is timed the bench copies nvmeof's checkout with its Deno cache, and Python's
# standard library, the packages nvmetcli imports (with the .pth files Python runs at start) and
# nvmetcli, to /dev/shm, and runs both from there; both programs' binaries stay where they are.
# FILES=share runs both from the share. Both sides' start-up from the share is printed beside the
# table (docs/benchmarks.md, "Files over 9p").
# CALLS=1 counts instead of timing: every figure is then the number of system calls on a path
# below /sys/kernel/config the run made (strace -f -e trace=%file: open, stat, mkdir, rmdir,
# symlink, unlink, readlink…), which the emulation's noise does not move.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
SIZES=("${@:-1 4 16}")
read -r -a SIZES <<<"${SIZES[*]}"
BASE_S=${BASE_S:-4}
BASE_H=${BASE_H:-32}
NS=${NS:-4}
REPEAT=${REPEAT:-3}
ST_REPEAT=${ST_REPEAT:-7} # start-up is taken from every figure: more runs for its median
[ "${CALLS:-0}" = 1 ] && REPEAT=1 ST_REPEAT=1 # a count does not vary from run to run
CFS=/sys/kernel/config/nvmet
PY=/usr/bin/python3
ASLR=${ASLR:-off}
case $ASLR in off | keep) ;; *) die "ASLR=$ASLR: say off (the default) or keep" ;; esac
FILES=${FILES:-memory}
case $FILES in memory | share) ;; *) die "FILES=$FILES: say memory (the default) or share" ;; esac
stage=""
find_deno || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
# use_checkout ROOT: times the nvmeof of the checkout at ROOT ($NVMEOF) and runs its helper
# ($LIBRUN: a command, not a function, since CALLS=1 runs it under strace).
use_checkout() {
  NVMEOF="$1/scripts/nvmeof"
  LIBRUN=("$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" "$1/scripts/bench/lib/scale.ts")
}
use_checkout "$NVMEOF_ROOT"
RANDOMIZE=/proc/sys/kernel/randomize_va_space
randomize_was=$(cat "$RANDOMIZE")
work=$(mktemp -d /tmp/nvmeof-scale-XXXXXX)
trap '"$NVMEOF" target down --all --force >/dev/null 2>&1 || true; echo "$randomize_was" >"$RANDOMIZE"; rm -rf "$work" ${stage:+"$stage"}' EXIT

[ -d "$CFS" ] || { echo "bench: $CFS missing: run inside the lab guest (scripts/lab/lab run -- $0)" >&2; exit 3; }
nvmetcli=""
if [ -n "${NVMETCLI_DIR:-}" ]; then
  [ -f "$NVMETCLI_DIR/nvmetcli" ] || die "NVMETCLI_DIR=$NVMETCLI_DIR has no nvmetcli script"
  "$PY" -c 'import configshell' 2>/dev/null ||
    die "nvmetcli needs python3-configshell-fb: apt-get install python3-configshell-fb"
  nvmetcli="$NVMETCLI_DIR/nvmetcli"
else
  echo "bench: NVMETCLI_DIR unset: no nvmetcli column (git clone https://github.com/linux-nvme/nvmetcli /var/tmp/nvmetcli)" >&2
fi

say() { printf 'bench: %s\n' "$*" >&2; }

# stage_nvmeof DIR: copies the checkout's source and Deno cache to DIR; the Deno binary stays.
stage_nvmeof() {
  mkdir -p "$1/.tools"
  cp -a "$NVMEOF_ROOT"/{main.ts,deno.json,deno.lock,src,ffi,scripts} "$1/"
  cp -a "$DENO_DIR" "$1/.tools/deno-dir"
  ln -s "$NVMEOF_TOOLS/npm" "$1/.tools/npm"
}
# stage_python DIR: copies, below DIR as below Python's prefix, its standard library and, from its
# site directories, the .pth files and each top-level package nvmetcli's import loads; then
# nvmetcli to DIR/nvmetcli. PYTHONHOME=DIR then runs Python from the copy.
stage_python() {
  local path prefix
  prefix=$("$PY" -c 'import sys; print(sys.prefix)')
  "$PY" - "$NVMETCLI_DIR" >"$work/py_files" <<'PY'
import glob, os, site, sys, sysconfig
sys.path.insert(0, sys.argv[1])
import configshell, nvmet
print(sysconfig.get_paths()["stdlib"])
sites = [d for d in site.getsitepackages() if os.path.isdir(d)]
found = set()
for d in sites:
    found.update(glob.glob(os.path.join(d, "*.pth")))
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    for d in sites:
        if f.startswith(d + os.sep):
            found.add(os.path.join(d, f[len(d) + 1:].split(os.sep)[0]))
print("\n".join(sorted(found)))
PY
  while IFS= read -r path; do
    [[ $path == "$prefix"/* ]] || die "bench: $path is outside Python's prefix $prefix: run with FILES=share"
    mkdir -p "$1/$(dirname "${path#"$prefix"/}")"
    cp -a "$path" "$1/${path#"$prefix"/}"
  done <"$work/py_files"
  cp -a "$NVMETCLI_DIR" "$1/nvmetcli"
}
lib() { "${LIBRUN[@]}" "$@"; }
# t VAR CMD…: runs CMD, its output to $work/out, and sets VAR to its wall time in seconds.
# With CALLS=1, VAR is the number of its system calls on configfs paths instead.
t() {
  local var=$1 t0 t1
  shift
  if [ "${CALLS:-0}" = 1 ]; then
    strace -f -qq --seccomp-bpf -e trace=%file -o "$work/strace" "$@" >"$work/out"
    printf -v "$var" '%s' "$(grep -c '"/sys/kernel/config/' "$work/strace" || true)"
    return
  fi
  t0=$EPOCHREALTIME
  "$@" >"$work/out"
  t1=$EPOCHREALTIME
  printf -v "$var" '%s' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
}
# median VALUE…: prints the median (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# tmn VAR NET RESET START CMD…: runs CMD REPEAT times, RESET (a function, or :) before each, and
# sets VAR to the median of its times. With a START (not ""), each run of CMD is paired with a run
# of START just before it (after RESET): START is the same command with nothing to do and changes
# nothing, and NET is set to the median of the REPEAT differences. So the start-up taken from a
# figure is timed in the same moment as it: the guest's speed drifts by tens of percent within one
# bench, and a start-up median taken once at the beginning has come out above the very runs it was
# then taken from.
tmn() {
  local var=$1 netvar=$2 reset=$3 start=$4 i v s vals=() nets=()
  shift 4
  for ((i = 0; i < REPEAT; i++)); do
    "$reset"
    [ -n "$start" ] && t s "$start"
    t v "$@"
    vals+=("$v")
    [ -n "$start" ] && nets+=("$(awk -v a="$v" -v b="$s" 'BEGIN { printf "%.3f", a - b }')")
  done
  printf -v "$var" '%s' "$(median "${vals[@]}")"
  [ -z "$start" ] || printf -v "$netvar" '%s' "$(median "${nets[@]}")"
}
# tm VAR RESET CMD…: tmn without a start-up run.
tm() { tmn "$1" "" "$2" "" "${@:3}"; }
# tmpeer OWN VAR RATIO RESET PEER_RESET CMD… -- PEER…: times PEER REPEAT times, each run paired with
# a run of CMD just before it (RESET before CMD, PEER_RESET before PEER), and sets OWN (unless "") to
# the median of CMD's times, as tm would, VAR to PEER's, and RATIO to the median of the REPEAT
# ratios CMD/PEER: the ratio of two runs timed in the same moment, as tmn pairs the start-up.
tmpeer() {
  local own=$1 var=$2 ratiovar=$3 reset=$4 peer_reset=$5 i a b cmd=() own_vals=() vals=() ratios=()
  shift 5
  while [ "$1" != -- ]; do
    cmd+=("$1")
    shift
  done
  shift
  for ((i = 0; i < REPEAT; i++)); do
    "$reset"
    t a "${cmd[@]}"
    own_vals+=("$a")
    "$peer_reset"
    t b "$@"
    vals+=("$b")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
  done
  [ -z "$own" ] || printf -v "$own" '%s' "$(median "${own_vals[@]}")"
  printf -v "$var" '%s' "$(median "${vals[@]}")"
  printf -v "$ratiovar" '%s' "$(median "${ratios[@]}")"
}
# floor VAR_CALLS VAR_WALL RESET PLAN.json: replays the plan REPEAT times, RESET run before each,
# as tm; sets the medians of the calls' time and of the process's (with CALLS=1, both its count).
floor() {
  local reset=$3 i wall calls=() walls=()
  for ((i = 0; i < REPEAT; i++)); do
    "$reset"
    t wall "${LIBRUN[@]}" replay "$4"
    if [ "${CALLS:-0}" = 1 ]; then calls+=("$wall"); else calls+=("$(cat "$work/out")"); fi
    walls+=("$wall")
  done
  printf -v "$1" '%s' "$(median "${calls[@]}")"
  printf -v "$2" '%s' "$(median "${walls[@]}")"
}
steps() { grep -o '"op":' "$1" | wc -l; }
results="$work/results.tsv"
# row OP K STEPS NVMEOF FLOOR_CALLS FLOOR_WALL NVMETCLI [NET: tmn's, when paired] [NVMEOF/NVMETCLI:
# tmpeer's]
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" "${8:-}" "${9:-}" >>"$results"; }
empty_tree() {
  "$NVMEOF" target down --all --force >/dev/null
  [ -z "$(ls -A "$CFS/subsystems")$(ls -A "$CFS/hosts")$(ls -A "$CFS/ports")" ] ||
    die "the nvmet tree is not empty after down --all"
}

# The states the timed runs start from (tm's RESET).
up1() { "$NVMEOF" target up -f "$work/spec1.yaml" >/dev/null; }
prune1() { "$NVMEOF" target up --prune -f "$work/spec1.yaml" >/dev/null; }
up2() { "$NVMEOF" target up -f "$work/spec2.yaml" >/dev/null; }
up3() { "$NVMEOF" target up -f "$work/spec3.yaml" >/dev/null; }
py_clear() { "$PY" "$nvmetcli" clear; }
# The start-up paired with every `up` (tmn's START): up of the empty spec, which changes nothing on
# any tree (without --prune).
up_empty() { "$NVMEOF" target up -f "$work/empty.yaml"; }

[ "$ASLR" = off ] && echo 0 >"$RANDOMIZE"
max=0
for k in "${SIZES[@]}"; do ((k > max)) && max=$k; done
devices=$((max * BASE_S * NS))
say "$devices null_blk devices, nvmet-tcp"
modprobe -r null_blk 2>/dev/null || true
modprobe null_blk nr_devices="$devices"
modprobe nvmet-tcp
for ((i = 0; i < 100; i++)); do [ -b "/dev/nullb$((devices - 1))" ] && break; sleep 0.1; done
[ -b "/dev/nullb$((devices - 1))" ] || die "/dev/nullb$((devices - 1)) did not appear"

py_import() { "$PY" -c "import sys; sys.path.insert(0, '$NVMETCLI_DIR'); import configshell, nvmet"; }
printf 'hosts: []\nsubsystems: []\nports: []\n' >"$work/empty.yaml"
files_line="files: both sides read from the guest's 9p share of the host's root (FILES=share)"
if [ "$FILES" = memory ]; then
  # Both sides' start-up from the share first, for the record (FILES above).
  empty_tree
  "$NVMEOF" target up -f "$work/empty.yaml" >/dev/null
  REPEAT=$ST_REPEAT tm sh_up : "$NVMEOF" target up -f "$work/empty.yaml"
  sh_py="-"
  [ -n "$nvmetcli" ] && REPEAT=$ST_REPEAT tm sh_py : py_import
  stage=$(mktemp -d /dev/shm/nvmeof-scale-XXXXXX)
  stage_nvmeof "$stage/nvmeof"
  export DENO_DIR="$stage/nvmeof/.tools/deno-dir"
  use_checkout "$stage/nvmeof"
  if [ -n "$nvmetcli" ]; then
    stage_python "$stage/python"
    export PYTHONHOME="$stage/python"
    NVMETCLI_DIR="$stage/python/nvmetcli"
    nvmetcli="$NVMETCLI_DIR/nvmetcli"
    py_import || die "Python from $stage/python does not import nvmetcli's modules: run with FILES=share"
  fi
  say "both sides' files copied to $stage"
fi

# Start-up of each side, apart (and the module caches warm). nvmeof's is each command with nothing
# to do on an empty tree: Deno's start-up, the modules that command loads and its fixed cost (`show`;
# `up` and `check` of an empty spec, `up`'s for its variants; `down --all`).
empty_tree
"$NVMEOF" target show >/dev/null
"$NVMEOF" target up -f "$work/empty.yaml" >/dev/null
"$NVMEOF" target down --all >/dev/null
lib empty
REPEAT=$ST_REPEAT tm st_nvmeof : "$NVMEOF" target show
REPEAT=$ST_REPEAT tm st_up : "$NVMEOF" target up -f "$work/empty.yaml"
REPEAT=$ST_REPEAT tm st_down : "$NVMEOF" target down --all
REPEAT=$ST_REPEAT tm st_check : "$NVMEOF" target check -f "$work/empty.yaml"
REPEAT=$ST_REPEAT tm st_deno : "${LIBRUN[@]}" empty
st_py=""
[ -n "$nvmetcli" ] && REPEAT=$ST_REPEAT tm st_py : py_import
# Both sides' start-up as the guest runs programs otherwise (randomization on), for the record.
if [ "$ASLR" = off ]; then
  aslr_line="the guest's address-space randomization off while the bench ran"
else
  aslr_line="ASLR=keep: the guest's address-space randomization left as found ($randomize_was)"
fi
if [ "$ASLR" = off ] && [ "${CALLS:-0}" != 1 ]; then
  echo 2 >"$RANDOMIZE"
  REPEAT=$ST_REPEAT tm sta_nvmeof : "$NVMEOF" target show
  REPEAT=$ST_REPEAT tm sta_deno : "${LIBRUN[@]}" empty
  sta_py="-"
  [ -n "$nvmetcli" ] && REPEAT=$ST_REPEAT tm sta_py : py_import
  aslr_line="timed with the guest's address-space randomization off; with it on, start-up is: nvmeof target show ${sta_nvmeof} s (off: ${st_nvmeof}), empty Deno run ${sta_deno} s (off: ${st_deno}), python3 import of nvmetcli's modules ${sta_py} s (off: ${st_py:--})"
  echo 0 >"$RANDOMIZE"
fi
[ "$FILES" = memory ] &&
  files_line="files: both sides' copied to the guest's memory (FILES=memory); from the 9p share, start-up is: nvmeof up (empty spec) ${sh_up} s (memory: ${st_up}), python3 import of nvmetcli's modules ${sh_py} s (memory: ${st_py:--})"
printf 'startup\t0\t0\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$st_nvmeof" 0 "$st_deno" "$st_py" "$st_up" \
  "$st_down" "$st_check" >"$results"

for k in "${SIZES[@]}"; do
  S=$((k * BASE_S))
  H=$((k * BASE_H))
  say "size ${k}x: $S subsystems x $NS namespaces, $H hosts, 2 ports"
  empty_tree
  lib spec "$S" "$H" "$NS" >"$work/spec1.yaml"
  lib spec "$S" "$H" "$NS" --extra-host >"$work/spec2.yaml"
  lib spec "$S" "$H" "$NS" --extra-host --drop-last >"$work/spec3.yaml"

  # up from empty
  "$NVMEOF" target up --dry-run -o json -f "$work/spec1.yaml" >"$work/up.json"
  floor f_calls f_wall empty_tree "$work/up.json"
  tmn n_up net_up empty_tree up_empty "$NVMEOF" target up -f "$work/spec1.yaml"
  say "up ${n_up}s (floor ${f_calls}s)"
  tmn n_noop net_noop : up_empty "$NVMEOF" target up -f "$work/spec1.yaml"
  grep -q '^No changes' "$work/out" || die "the second up was not a no-op: $(head -3 "$work/out")"
  say "no-op up ${n_noop}s"
  # show, paired with nvmetcli's save when there is nvmetcli (its runs are show's figure then)
  c_save="" x_save=""
  if [ -n "$nvmetcli" ]; then
    tmpeer n_show c_save x_save : : "$NVMEOF" target show -- "$PY" "$nvmetcli" save "$work/saved.json"
  else
    tm n_show : "$NVMEOF" target show
  fi
  t r_wall "${LIBRUN[@]}" read
  r_calls=$(cat "$work/out")
  [ "${CALLS:-0}" = 1 ] && r_calls=$r_wall
  "$NVMEOF" target show -o nvmetcli >"$work/nvmetcli.json"
  tm n_check : "$NVMEOF" target check -f "$work/spec1.yaml"
  say "show ${n_show}s (read floor ${r_calls}s), check ${n_check}s"

  # nvmetcli on the same tree: clear (its down, on spec3's tree as nvmeof's down below: up3 from
  # empty builds it; its runs are down's figure then) and restore (its up from empty), each run
  # paired with nvmeof's.
  c_clear="" c_restore="" x_clear="" x_restore="" n_down=""
  if [ -n "$nvmetcli" ]; then
    empty_tree
    tmpeer n_down c_clear x_clear up3 up3 "$NVMEOF" target down --all -- "$PY" "$nvmetcli" clear
    tmpeer "" c_restore x_restore empty_tree py_clear "$NVMEOF" target up -f "$work/spec1.yaml" -- \
      "$PY" "$nvmetcli" restore "$work/nvmetcli.json"
    "$NVMEOF" target up -f "$work/spec1.yaml" >"$work/out"
    grep -q '^No changes' "$work/out" || die "nvmetcli's restore did not rebuild the same tree: $(head -3 "$work/out")"
    say "nvmetcli save ${c_save}s, clear ${c_clear}s, restore ${c_restore}s"
  fi
  row up "$k" "$(steps "$work/up.json")" "$n_up" "$f_calls" "$f_wall" "$c_restore" "$net_up" "$x_restore"
  row noop "$k" 0 "$n_noop" "" "" "" "$net_noop"
  row show "$k" "" "$n_show" "$r_calls" "$r_wall" "$c_save" "" "$x_save"
  row check "$k" "" "$n_check" "" "" ""

  # one more host on every subsystem
  "$NVMEOF" target up --dry-run -o json -f "$work/spec2.yaml" >"$work/add.json"
  floor a_calls a_wall prune1 "$work/add.json"
  tmn n_add net_add prune1 up_empty "$NVMEOF" target up -f "$work/spec2.yaml"
  row add-host "$k" "$(steps "$work/add.json")" "$n_add" "$a_calls" "$a_wall" "" "$net_add"
  say "add host ${n_add}s (floor ${a_calls}s)"

  # prune one subsystem
  "$NVMEOF" target up --prune --dry-run -o json -f "$work/spec3.yaml" >"$work/prune.json"
  floor p_calls p_wall up2 "$work/prune.json"
  tmn n_prune net_prune up2 up_empty "$NVMEOF" target up --prune -f "$work/spec3.yaml"
  row prune "$k" "$(steps "$work/prune.json")" "$n_prune" "$p_calls" "$p_wall" "" "$net_prune"
  say "prune ${n_prune}s (floor ${p_calls}s)"

  # down
  "$NVMEOF" target down --all --dry-run -o json >"$work/down.json"
  floor d_calls d_wall up3 "$work/down.json"
  [ -n "$n_down" ] || tm n_down up3 "$NVMEOF" target down --all
  row down "$k" "$(steps "$work/down.json")" "$n_down" "$d_calls" "$d_wall" "$c_clear" "" "$x_clear"
  say "down ${n_down}s (floor ${d_calls}s)"
done

echo "scale bench: kernel $(uname -r), $(nproc) CPU(s), $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
[ "${CALLS:-0}" = 1 ] && echo "CALLS=1: every figure is a count of system calls on configfs paths, not seconds"
echo "$aslr_line"
echo "$files_line"
echo "size K: K x $BASE_S subsystems x $NS null_blk namespaces, K x $BASE_H hosts ($((BASE_H / BASE_S)) per subsystem), 2 ports"
lib table "$results"
