#!/usr/bin/env bash
# Runs the test suite of a build again with the heap and the stack moved, so that no verdict
# depends on where they happen to put things (a test that passes here and fails in a packager's
# build is a failing test). Three runs, each with every test:
#   1. every block moved by a random multiple of 16 bytes (of its alignment, for aligned
#      requests): tests/libkbuf_shifted_heap.so preloaded, KBUF_HEAP_SEED=1;
#   2. the same with another seed, glibc's MALLOC_PERTURB_ (freed and new memory filled) and
#      MALLOC_TOP_PAD_, and a few kilobytes more of environment (the stack moves);
#   3. glibc's own malloc with MALLOC_PERTURB_, another MALLOC_TOP_PAD_ and another environment
#      size.
# Any failure fails the script; each run prints CTest's summary.
#
#   scripts/check-heap.sh [BUILD_DIR]    default: build (what scripts/test.sh built)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-${KBUF_BUILD_DIR:-build}}
lib="$PWD/$build/tests/libkbuf_shifted_heap.so"
if [ ! -f "$lib" ]; then
  echo "check-heap: $lib is missing: build '$build' first (scripts/test.sh; not a sanitizer build)" >&2
  exit 2
fi
pad() { head -c "$1" /dev/zero | tr '\0' x; }
failed=0
run() {
  local what=$1
  shift
  printf '\n-- %s\n' "$what"
  local start=$SECONDS
  if env "$@" ctest --test-dir "$build" --output-on-failure -j "$(nproc)" >"$build/check-heap.log" 2>&1; then
    grep -E "tests passed|tests failed" "$build/check-heap.log" || true
  else
    failed=1
    sed -n '/tests passed\|tests failed/,$p' "$build/check-heap.log"
    grep -B2 -A12 "ERROR:\|FAILED\|Failed" "$build/check-heap.log" | head -200
  fi
  echo "-- $((SECONDS - start)) s"
}
run "blocks shifted by multiples of 16 (seed 1)" LD_PRELOAD="$lib" KBUF_HEAP_SEED=1
run "blocks shifted (seed 2), MALLOC_PERTURB_, MALLOC_TOP_PAD_, 3000 bytes more environment" \
  LD_PRELOAD="$lib" KBUF_HEAP_SEED=2 MALLOC_PERTURB_=165 MALLOC_TOP_PAD_=1048581 \
  KBUF_ENVIRONMENT_PAD="$(pad 3000)"
run "glibc's malloc, MALLOC_PERTURB_, MALLOC_TOP_PAD_, 7001 bytes more environment" \
  MALLOC_PERTURB_=90 MALLOC_TOP_PAD_=65537 KBUF_ENVIRONMENT_PAD="$(pad 7001)"
if [ "$failed" -ne 0 ]; then
  echo "check-heap: a verdict moved with the heap or the stack (above)" >&2
  exit 1
fi
echo "check-heap: every verdict held in all three runs"
