#!/usr/bin/env bash
# The README's second command: installs what is missing, builds everything (library, tests,
# examples, demo, benchmarks) and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${KBUF_BUILD_DIR:-build}
# The `dev` preset (CMakePresets.json); KBUF_CMAKE_ARGS adds or overrides options.
cmake --preset dev -B "$build" ${KBUF_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
