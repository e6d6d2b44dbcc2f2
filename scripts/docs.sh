#!/usr/bin/env bash
# Builds the API reference (Doxygen over include/kbuf/, warnings are errors: an undocumented
# public entity fails) into $KBUF_DOCS_BUILD/docs/html (default build-docs). Installs doxygen and
# what configuring needs when missing. KBUF_CMAKE_ARGS adds CMake options.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh doxygen
build=${KBUF_DOCS_BUILD:-build-docs}
cmake --preset docs -B "$build" ${KBUF_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --target docs
echo "docs: $build/docs/html/index.html"
