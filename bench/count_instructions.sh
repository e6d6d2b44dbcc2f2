#!/bin/sh
# Instructions per temporary of each strategy, counted by valgrind's callgrind: repeatable on a
# noisy machine where times are not. For each strategy of kbuf-bench's round (8 temporaries) and
# pair (1 temporary) sections it runs `kbuf-bench --profile SECTION:STRATEGY:N` for N = 0 and
# N = ROUNDS and divides the difference by ROUNDS times the temporaries per round, so start-up,
# warm-up and set-up cancel out.
#
#   bench/count_instructions.sh BUILD/bench/kbuf-bench [ROUNDS]      (host builds only)
set -eu
bench=${1:?usage: $0 path/to/kbuf-bench [rounds]}
rounds=${2:-10000}
command -v valgrind >/dev/null || { echo "$0: valgrind not found" >&2; exit 2; }
# One host thread: an OpenMP default execution space would add its idle threads' instructions.
export OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

total() {  # total() SECTION STRATEGY N -> instructions of the whole run
  valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bench" \
    --profile "$1:$2:$3" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/out"
}

for section in round pair; do
  if [ "$section" = round ]; then per=8; else per=1; fi
  if [ "$section" = round ]; then
    strategies="floor floor-extents bump kbuf pmr-monotonic kokkos_malloc managed-noinit managed"
  else
    strategies="floor floor-extents bump kbuf kbuf-scope pmr-monotonic kokkos_malloc managed-noinit managed"
  fi
  echo "== $section: instructions per temporary ($rounds rounds of $per; managed Views and kokkos_malloc: a tenth)"
  printf '  %-16s %12s %10s %10s\n' strategy instr/temp "x floor" "x kbuf"
  for s in $strategies; do
    r=$rounds
    case $s in managed* | kokkos_malloc) r=$(( (rounds + 9) / 10 )) ;; esac  # slow under valgrind
    z=$(total "$section" "$s" 0)
    n=$(total "$section" "$s" "$r")
    echo "$s $(( n - z )) $r" >>"$tmp/$section"
  done
  awk -v p="$per" '
    { name[NR] = $1; v[NR] = $2 / ($3 * p); if ($1 == "floor") f = v[NR]; if ($1 == "kbuf") k = v[NR] }
    END { for (i = 1; i <= NR; ++i) printf "  %-16s %12.1f %10.2f %10.2f\n", name[i], v[i], v[i] / f, v[i] / k }
  ' "$tmp/$section"
done
