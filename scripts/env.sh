# shellcheck shell=sh
# What running nvmeof from source needs, in POSIX sh: where things live, the pinned toolchain, and
# the one list of flags and permissions that both the source launcher and the compiled binary get.
# scripts/nvmeof runs under /bin/sh and sources only this (dash starts in less time than bash, and
# every run from source, in every test and lab guest, starts there); scripts/lib.sh sources it too
# and adds what the bash scripts use. The caller sets _nvmeof_scripts to this file's directory as
# it was reached (a script's own path has no portable name in a sourced file).

# NVMEOF_ROOT: the checkout, the parent of this file's directory, as an absolute path. A plain path
# (/abs/scripts, scripts) is handled without a fork, which costs milliseconds under the lab guest's
# emulation; anything else goes through cd.
_nvmeof_scripts=${_nvmeof_scripts#./}
case $_nvmeof_scripts in /*) ;; *) _nvmeof_scripts=$PWD/$_nvmeof_scripts ;; esac
case $_nvmeof_scripts in
  *//* | */./* | */../*) NVMEOF_ROOT=$(cd "$_nvmeof_scripts/.." && pwd) ;;
  ?*/scripts) NVMEOF_ROOT=${_nvmeof_scripts%/scripts} ;;
  *) NVMEOF_ROOT=$(cd "$_nvmeof_scripts/.." && pwd) ;;
esac
unset _nvmeof_scripts
DENO_VERSION=2.9.6
NVMEOF_TOOLS="${NVMEOF_TOOLS:-$NVMEOF_ROOT/.tools}"
# Deno's module cache lives with the checkout, so the lab guest (which sees this tree read-only)
# finds every npm package without a network.
export DENO_DIR="${DENO_DIR:-$NVMEOF_TOOLS/deno-dir}"
export DENO_NO_UPDATE_CHECK=1
export DENO_NO_PROMPT=1

# The permissions nvmeof runs with, from source and compiled alike, as words (lib.sh makes the
# array NVMEOF_PERMS of them). nvmeof reads and writes configfs, sysfs, /dev/nvme-fabrics,
# /dev/nvmeN and /etc/nvme*, and calls librdmacm, libibverbs and libc through FFI. Deno 2 grants
# paths under /dev, /proc and /sys only with --allow-all ("Requires all access"), and FFI can reach
# anything anyway, so finer flags would only pretend.
NVMEOF_PERMS_WORDS="--allow-all"
# V8 runs single-threaded: no compiler or GC threads beside nvmeof's own. The data-path loops
# (rdma ping and bw, probe and bench) spin on a CPU each; V8's worker threads, compiling or
# collecting, took those CPUs from them: in the lab guest, 190 ms of a 1.3 s ping loop even after
# 5000 warm-up iterations, against 9 ms for ib_write_lat and for nvmeof without those threads
# (docs/benchmarks.md). The work is the same, done on the main thread; the compiled binary embeds
# the same flags (scripts/compile).
# --no-lazy: V8 compiles every function of a module when it loads it, not at its first call, so
# the code cache Deno keeps of each module (written as it loads) holds them all and the next run
# compiles none. In the lab guest that took 0.05-0.15 s off a target command with work to do (`up`
# of the 1x scale spec 0.95 -> 0.80 s); natively it was level (docs/benchmarks.md, "V8's tiers
# under the emulator"). It changes when code is compiled, not how hot code is optimised.
# --no-sparkplug: no baseline tier between V8's interpreter and its optimising compilers (Maglev
# and TurboFan still compile what runs hot). A target command had Sparkplug compile most of its
# functions after a few calls and ran that code too few times more to gain it back under the lab's
# emulation; natively level, the data path and the exporter within their spread (figures in
# docs/benchmarks.md, "Sparkplug under the emulator").
# --invocation-count-for-maglev=2000 (V8's default 400, below TurboFan's 3000 that follows it):
# Maglev compiles a function once it has run 2000 calls' worth of its code, not 400. A target
# command on a big tree runs its per-object code (the spec's reader, validation, the apply) a few
# hundred to a few thousand times, once: in the lab guest, Maglev's compiles of it on the main
# thread cost more than they saved; natively level. The data path's loops run tens of thousands of
# times and still reach both tiers in their warm-up (figures in docs/benchmarks.md, "Maglev's
# count at scale").
NVMEOF_V8_FLAGS=--single-threaded,--no-lazy,--no-sparkplug,--invocation-count-for-maglev=2000
# The other flags of `deno run` for nvmeof from source, as words (lib.sh: NVMEOF_RUN_FLAGS): no
# prompt, no network, the lock file as is. --unstable-lazy-dynamic-imports: Deno reads a module
# behind `import("./x.ts")` when the import runs, not before start-up; nvmeof loads each command's
# module that way, so `nvmeof --version` does not read the modules of every command first (the
# compiled binary loads them lazily anyway). No word may hold a space or a glob character: the
# launcher splits them unquoted.
NVMEOF_RUN_WORDS="--quiet --no-prompt --cached-only --frozen --unstable-lazy-dynamic-imports --v8-flags=$NVMEOF_V8_FLAGS"

# find_deno sets $deno to the path of the pinned Deno (NVMEOF_DENO when set), installing nothing;
# it fails when there is none. No subshell: the launcher calls it on every run.
find_deno() {
  deno=${NVMEOF_DENO:-$NVMEOF_TOOLS/npm/node_modules/@deno/linux-x64-glibc/deno}
  [ -n "${NVMEOF_DENO:-}" ] || [ -x "$deno" ]
}

die() {
  printf 'error: %s\n' "$*" >&2
  exit 3
}
