#!/usr/bin/env bash
# Regenerates fuzz/corpus: fuzzes for a while from the current corpus, then keeps the few
# inputs that cover the most: a greedy set cover over each input's own coverage features.
#
#   fuzz/update_corpus.sh <kbuf-fuzz-allocator> [seconds=600] [files=96]
set -euo pipefail
fuzzer=$(realpath "$1")
seconds=${2:-600}
keep=${3:-96}
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/grown" "$work/merged"

echo "fuzzing for $seconds s from the committed corpus"
"$fuzzer" -max_total_time="$seconds" "$work/grown" corpus >/dev/null 2>&1
"$fuzzer" -merge=1 -use_counters=0 "$work/merged" "$work/grown" corpus >/dev/null 2>&1

echo "coverage of each of $(ls "$work/merged" | wc -l) inputs"
for f in "$work"/merged/*; do
  d=$(mktemp -d "$work/one.XXXX")
  mkdir "$d/in" "$d/out"
  cp "$f" "$d/in/"
  "$fuzzer" -merge=1 -use_counters=0 -merge_control_file="$d/ctl" "$d/out" "$d/in" >/dev/null 2>&1
  echo "$(basename "$f") $(stat -c %s "$f") $(grep '^FT' "$d/ctl" | cut -d' ' -f3-)"
  rm -rf "$d"
done >"$work/features.txt"

python3 - "$work/features.txt" "$keep" >"$work/chosen.txt" <<'EOF'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
features = {r[0]: set(map(int, r[2:])) for r in rows}
size = {r[0]: int(r[1]) for r in rows}
covered, chosen = set(), []
while len(chosen) < int(sys.argv[2]):
    best = max(features, key=lambda f: (len(features[f] - covered), -size[f]))
    if not features[best] - covered:
        break
    chosen.append(best)
    covered |= features[best]
print("\n".join(chosen))
total = set().union(*features.values())
print(f"kept {len(chosen)} inputs covering {len(covered)} of {len(total)} features", file=sys.stderr)
EOF
rm -f corpus/*
while read -r f; do cp "$work/merged/$f" corpus/; done <"$work/chosen.txt"
echo "fuzz/corpus: $(ls corpus | wc -l) files, $(cat corpus/* | wc -c) bytes"
