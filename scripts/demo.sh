#!/usr/bin/env bash
# The README's first command: installs what is missing, builds kbuf-demo (Release) and runs the
# main job. Extra arguments go to kbuf-demo (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${KBUF_BUILD_DIR:-build-release}
# The `release` preset (CMakePresets.json); KBUF_CMAKE_ARGS adds or overrides options.
cmake --preset release -B "$build" ${KBUF_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target kbuf-demo -j "$(nproc)"
exec "$build/src/demo/kbuf-demo" "$@"
