# Sourced by the benchmarks that run Deno scripts beside nvmeof (bench_ping_*.sh), from the
# checkout's root: scripts/lib.sh, the checkout's Deno in $deno (else it dies), rdma_lib.sh, and
# deno_run, which runs a script as the launcher runs nvmeof (its flags and permissions).
. scripts/lib.sh
find_deno || die "Deno $DENO_VERSION is not installed for this checkout. Run: scripts/setup"
. scripts/bench/rdma_lib.sh
deno_run() { "$deno" run "${NVMEOF_RUN_FLAGS[@]}" "${NVMEOF_PERMS[@]}" "$@"; }
