# shellcheck shell=bash
# Shared by the project's scripts: where things live, the pinned toolchain, and the one list of
# permission flags that both the source launcher and the compiled binary get.

# The launcher's part (root, toolchain, flags as words, find_deno, die) is POSIX sh in env.sh, so
# that scripts/nvmeof can run under /bin/sh; this file adds the bash scripts' part.
_nvmeof_scripts=${BASH_SOURCE[0]%/*}
[ "$_nvmeof_scripts" = "${BASH_SOURCE[0]}" ] && _nvmeof_scripts=.
. "$_nvmeof_scripts/env.sh"
# The same flags as arrays, for "${NVMEOF_PERMS[@]}" and "${NVMEOF_RUN_FLAGS[@]}".
read -ra NVMEOF_PERMS <<<"$NVMEOF_PERMS_WORDS"
read -ra NVMEOF_RUN_FLAGS <<<"$NVMEOF_RUN_WORDS"

# deno_bin prints the path of the pinned Deno, installing nothing.
deno_bin() {
  local deno
  find_deno && printf '%s\n' "$deno"
}
