#!/usr/bin/env bash
# Builds every target of kbuf (library, tests, examples, benchmarks, and the applications when
# the Kokkos install holds Kokkos Kernels) for CUDA and for HIP, without running anything: the
# check that a machine without a GPU can make, before every release. Each backend builds with
# scripts/gpu-check.sh --build-only (which also records what a GPU machine would run), then the
# tests that need the compiler but no GPU (compile and config) run here.
#
#   scripts/check-gpu-builds.sh --cuda PREFIX --hip PREFIX [--jobs N] [--build-root DIR]
#   scripts/check-gpu-builds.sh --cuda PREFIX           only CUDA (likewise --hip alone)
#
# PREFIX: a Kokkos (4.x) install with that backend: Kokkos' nvcc_wrapper in PREFIX/bin for
# CUDA, hipcc on PATH for HIP. Build folders: DIR/build-gpu-cuda, DIR/build-gpu-hip (default
# DIR: the checkout). Exit status 0 when every backend asked for built completely.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda="" hip="" jobs=2 root=$PWD
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cuda) cuda=${2:?}; shift 2 ;;
    --hip) hip=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --build-root) root=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-gpu-builds: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n "$cuda$hip" ]] || { echo "check-gpu-builds: name --cuda PREFIX and/or --hip PREFIX" >&2; exit 2; }
status=0
summary=()
build() {
  local backend=$1 prefix=$2 dir=$3 start=$SECONDS
  echo "== $backend: Kokkos at $prefix, build folder $dir"
  if scripts/gpu-check.sh --build-only --backend "$backend" --kokkos "$prefix" --build-dir "$dir" \
       --jobs "$jobs"; then
    local targets
    targets=$(cmake --build "$dir" --target help | grep -c '^\.\.\. ' || true)
    local compile_tests  # gpu-check.sh --build-only ran them
    compile_tests=$(grep -E 'tests passed|tests failed' "$dir/gpu-check/build-machine-tests.log" || true)
    summary+=("$backend: built, every target ($targets in the build's target list), $((SECONDS - start)) s; compile-only tests: ${compile_tests:-none}")
    [[ "$compile_tests" == *"100% tests passed"* || -z "$compile_tests" ]] || status=1
  else
    summary+=("$backend: FAILED to build (see $dir/gpu-check/build.log)")
    status=1
  fi
}
[[ -z "$cuda" ]] || build CUDA "$cuda" "$root/build-gpu-cuda"
[[ -z "$hip" ]] || build HIP "$hip" "$root/build-gpu-hip"
echo
printf '%s\n' "${summary[@]}"
exit "$status"
