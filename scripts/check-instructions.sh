#!/usr/bin/env bash
# kbuf's cost guard: a kbuf temporary must take no more instructions than a
# std::pmr::monotonic_buffer_resource one. Instruction counts (valgrind's callgrind) are
# deterministic where times on a shared machine are not, so this can run in CI.
#
#   scripts/check-instructions.sh
#
# Builds kbuf-bench alone (Release, no tensor parts, no tests) and runs, under callgrind, the
# round section (a scope and 8 temporaries of ranks 1-4) and the pair section (one checkpoint,
# temporary and reset) for kbuf and pmr-monotonic: `kbuf-bench --profile SECTION:STRATEGY:N`
# for N = 0 and N = ROUNDS, the difference divided by the temporaries, so start-up and set-up
# cancel out (bench/count_instructions.sh does the same for every strategy). Fails if kbuf
# needs more instructions per temporary than pmr-monotonic in either section.
#
# The threaded section's round (one thread) is counted the same way: kbuf-pool-each
# (pool.local() for every temporary) must need at most 1.5 times kbuf-pool's instructions per
# temporary, and kbuf-pool (pool.local() once per round) no more than the cheapest
# general-purpose allocator this build runs (glibc malloc, and mimalloc, jemalloc and TBB's scalable allocator
# where their -dev packages are installed; the script installs them).
#
# Installs valgrind with apt-get when missing. Environment:
#   KBUF_INSTR_BUILD   build folder (default: build-ci-instructions in the repository)
#   KBUF_INSTR_ROUNDS  rounds per count (default 2000)
#   KBUF_CMAKE_ARGS    extra CMake arguments (e.g. -DKokkos_ROOT=...)
set -euo pipefail
cd "$(dirname "$0")/.."

build=${KBUF_INSTR_BUILD:-$PWD/build-ci-instructions}
rounds=${KBUF_INSTR_ROUNDS:-2000}
read -r -a extra_cmake <<<"${KBUF_CMAKE_ARGS:-}"

# The allocators the threaded section compares with are optional; this stage installs them so
# the comparison covers them all.
scripts/install-deps.sh valgrind libmimalloc-dev libjemalloc-dev libtbb-dev
start=$SECONDS
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DKBUF_ENABLE_KERNELS=OFF \
  -DKBUF_ENABLE_EXAMPLES=OFF -DKBUF_ENABLE_BENCHMARKS=ON "${extra_cmake[@]}" >/dev/null
nice cmake --build "$build" --target kbuf-bench -j "$(nproc)" >/dev/null
bench="$build/bench/kbuf-bench"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One host thread: an OpenMP default execution space would add its idle threads' instructions.
export OMP_NUM_THREADS=1
# jemalloc, opened at run time, needs more static TLS than glibc keeps for late-opened libraries.
export GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536

total() {  # total SECTION STRATEGY N -> instructions of the whole run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bench" --profile "$1:$2:$3" \
    >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/out"
}

per_temp() {  # per_temp SECTION STRATEGY TEMPS_PER_ROUND -> instructions per temporary
  local z n
  z=$(total "$1" "$2" 0)
  n=$(total "$1" "$2" "$rounds")
  awk -v n="$n" -v z="$z" -v r="$rounds" -v t="$3" 'BEGIN { printf "%.2f", (n - z) / (r * t) }'
}

failed=0
echo "== instructions per temporary (callgrind, $rounds rounds)"
for spec in round:8 pair:1; do
  section=${spec%%:*}
  per=${spec##*:}
  k=$(per_temp "$section" kbuf "$per")
  p=$(per_temp "$section" pmr-monotonic "$per")
  verdict=ok
  if awk -v k="$k" -v p="$p" 'BEGIN { exit !(k > p) }'; then
    verdict="FAILED: kbuf needs more than pmr-monotonic"
    failed=1
  fi
  printf '  %-6s kbuf %8s   pmr-monotonic %8s   %s\n' "$section" "$k" "$p" "$verdict"
done

# What a library's kbuf::temporary in its scope costs beside allocate (printed, not a guard).
t=$(per_temp round kbuf-temporary 8)
printf '  round  kbuf-temporary %8s   (%s x kbuf)\n' "$t" \
  "$(awk -v t="$t" -v k="$(per_temp round kbuf 8)" 'BEGIN { printf "%.2f", t / k }')"

# pool.local() for every temporary costs at most 1.5 times a held allocator.
pe=$(per_temp threads kbuf-pool-each 8)
po=$(per_temp threads kbuf-pool 8)
verdict=ok
if awk -v e="$pe" -v o="$po" 'BEGIN { exit !(e > 1.5 * o) }'; then
  verdict="FAILED: pool.local() per temporary needs more than 1.5 x kbuf-pool"
  failed=1
fi
printf '  %-6s kbuf-pool-each %8s   kbuf-pool %8s   %s\n' threads "$pe" "$po" "$verdict"

# The threaded round on one thread: kbuf-pool against the cheapest general-purpose allocator.
# Those take 10-100 times kbuf's instructions per temporary: a tenth of the rounds is enough.
k=$(per_temp threads kbuf-pool 8)
full_rounds=$rounds
rounds=$(( (full_rounds + 9) / 10 ))
cheapest="" cheapest_n=""
for s in malloc mimalloc jemalloc tbb-scalable; do
  if ! "$bench" --profile "threads:$s:0" >/dev/null 2>&1; then
    echo "  threads: $s not built or not loadable here, left out"
    continue
  fi
  n=$(per_temp threads "$s" 8)
  if [ -z "$cheapest_n" ] || awk -v a="$n" -v b="$cheapest_n" 'BEGIN { exit !(a < b) }'; then
    cheapest=$s cheapest_n=$n
  fi
done
rounds=$full_rounds
verdict=ok
if awk -v k="$k" -v p="$cheapest_n" 'BEGIN { exit !(k > p) }'; then
  verdict="FAILED: kbuf-pool needs more than $cheapest"
  failed=1
fi
printf '  %-6s kbuf-pool %8s   cheapest general-purpose allocator: %s %8s   %s\n' threads "$k" \
  "$cheapest" "$cheapest_n" "$verdict"
echo "== check-instructions: $((SECONDS - start)) s"
exit "$failed"
