#!/usr/bin/env bash
# The README's first command: installs what is missing, builds the main jobs (Release) and runs
# them: kbuf-demo (the two-site environment network, kbuf against fresh managed Views), then a
# short kbuf-tebd (iTEBD ground states of the Ising chain at h = 0.5 and 1 and of the Heisenberg
# chain, chi = 16, every strategy, three interleaved runs each), whose energies are printed
# beside the exact ones, with the medians, their spread, a verdict and the allocation counts;
# then a short kbuf-batched-fits (batched least-squares fits by Kokkos Kernels' batched routines
# inside kernels, their work arrays from kbuf workspaces, beside scratch and fixed slots).
# Arguments go to kbuf-demo (try --help; kbuf-tebd --help for the other).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${KBUF_BUILD_DIR:-build-release}
# The `release` preset (CMakePresets.json); KBUF_CMAKE_ARGS adds or overrides options.
cmake --preset release -B "$build" ${KBUF_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target kbuf-demo kbuf-tebd kbuf-batched-fits -j "$(nproc)"
for arg in "$@"; do
  case "$arg" in -h | --help) exec "$build/apps/demo/kbuf-demo" "$arg" ;; esac
done
status=0
"$build/apps/demo/kbuf-demo" "$@" || status=$?
echo
echo "== kbuf-tebd: ground-state energies per site, every temporary of a step from kbuf"
"$build/apps/tebd/kbuf-tebd" --model ising --field 0.5,1 --chi 16 --strategy all --repeat 3 || status=$?
"$build/apps/tebd/kbuf-tebd" --model heisenberg --chi 16 --strategy all --repeat 3 || status=$?
echo
echo "== kbuf-batched-fits: least-squares fits inside kernels, work arrays from a kbuf workspace"
"$build/apps/batched/kbuf-batched-fits" --entries 1000 --repeat 3 || status=$?
exit "$status"
