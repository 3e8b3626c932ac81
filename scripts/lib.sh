# shellcheck shell=bash
# Shared by the project's scripts: where things live, the pinned toolchain, and the one list of
# permission flags that both the source launcher and the compiled binary get.

NVMEOF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DENO_VERSION=2.9.6
NVMEOF_TOOLS="${NVMEOF_TOOLS:-$NVMEOF_ROOT/.tools}"
# Deno's module cache lives with the checkout, so the lab guest (which sees this tree read-only)
# finds every npm package without a network.
export DENO_DIR="${DENO_DIR:-$NVMEOF_TOOLS/deno-dir}"
export DENO_NO_UPDATE_CHECK=1
export DENO_NO_PROMPT=1

# The permissions nvmeof runs with, from source and compiled alike. nvmeof reads and writes
# configfs, sysfs, /dev/nvme-fabrics, /dev/nvmeN and /etc/nvme*, and calls librdmacm, libibverbs
# and libc through FFI. Deno 2 grants paths under /dev, /proc and /sys only with --allow-all
# ("Requires all access"), and FFI can reach anything anyway, so finer flags would only pretend.
NVMEOF_PERMS=(--allow-all)
# The other flags of `deno run` for nvmeof from source: no prompt, no network, the lock file as is.
NVMEOF_RUN_FLAGS=(--quiet --no-prompt --cached-only --frozen)

# deno_bin prints the path of the pinned Deno, installing nothing.
deno_bin() {
  local d="$NVMEOF_TOOLS/npm/node_modules/@deno/linux-x64-glibc/deno"
  if [ -n "${NVMEOF_DENO:-}" ]; then
    printf '%s\n' "$NVMEOF_DENO"
  elif [ -x "$d" ]; then
    printf '%s\n' "$d"
  else
    return 1
  fi
}

die() {
  printf 'error: %s\n' "$*" >&2
  exit 3
}
