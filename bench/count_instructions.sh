#!/bin/sh
# Instructions per temporary of each strategy, counted by valgrind's callgrind: repeatable on a
# noisy machine where times are not. For each strategy of kbuf-bench's round (8 temporaries) and
# pair (1 temporary) sections it runs `kbuf-bench --profile SECTION:STRATEGY:N` for N = 0 and
# N = ROUNDS and divides the difference by ROUNDS times the temporaries per round, so start-up,
# warm-up and set-up cancel out.
#
# The threaded section's strategies are counted on one thread (--profile threads:...); those
# this build does not run (an allocator not installed) are left out.
#
#   bench/count_instructions.sh BUILD/bench/kbuf-bench [ROUNDS]      (host builds only)
set -eu
bench=${1:?usage: $0 path/to/kbuf-bench [rounds]}
rounds=${2:-10000}
command -v valgrind >/dev/null || { echo "$0: valgrind not found" >&2; exit 2; }
# One host thread: an OpenMP default execution space would add its idle threads' instructions.
export OMP_NUM_THREADS=1
# jemalloc, opened at run time, needs more static TLS than glibc keeps for late-opened libraries.
export GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

total() {  # total() SECTION STRATEGY N -> instructions of the whole run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bench" \
    --profile "$1:$2:$3" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/out"
}

for section in round pair threads; do
  if [ "$section" = pair ]; then per=1; else per=8; fi
  if [ "$section" = round ]; then
    strategies="floor floor-extents bump kbuf kbuf-view-type kbuf-temporary pmr-monotonic kokkos_malloc managed-noinit managed"
  elif [ "$section" = pair ]; then
    strategies="floor floor-extents bump kbuf kbuf-scope kbuf-view-type kbuf-temporary pmr-monotonic kokkos_malloc managed-noinit managed"
  else
    strategies="kbuf-pool kbuf-pool-each kbuf-thread-local pmr-monotonic-tl tbb-scalable mimalloc malloc jemalloc pmr-sync kokkos-memorypool managed-noinit"
  fi
  echo "== $section: instructions per temporary ($rounds rounds of $per; managed Views and the general-purpose allocators: a tenth)"
  if [ "$section" = threads ]; then  # no floor here: both columns are against kbuf-pool
    printf '  %-18s %12s %10s %10s\n' strategy instr/temp "x pool" "x pool"
  else
    printf '  %-16s %12s %10s %10s\n' strategy instr/temp "x floor" "x kbuf"
  fi
  for s in $strategies; do
    r=$rounds
    case $s in  # slow under valgrind
      managed* | kokkos* | *malloc | jemalloc | tbb-scalable | pmr-sync) r=$(( (rounds + 9) / 10 )) ;;
    esac
    if [ "$section" = threads ] && ! "$bench" --profile "threads:$s:0" >/dev/null 2>&1; then
      continue  # not in this build
    fi
    z=$(total "$section" "$s" 0)
    n=$(total "$section" "$s" "$r")
    echo "$s $(( n - z )) $r" >>"$tmp/$section"
  done
  awk -v p="$per" '
    { name[NR] = $1; v[NR] = $2 / ($3 * p); if ($1 == "floor" || $1 == "kbuf-pool") f = v[NR]; if ($1 == "kbuf" || $1 == "kbuf-pool") k = v[NR] }
    END { for (i = 1; i <= NR; ++i) printf "  %-16s %12.1f %10.2f %10.2f\n", name[i], v[i], v[i] / f, v[i] / k }
  ' "$tmp/$section"
done
