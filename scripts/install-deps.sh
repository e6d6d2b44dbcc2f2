#!/usr/bin/env bash
# Installs what kbuf's build needs on Debian 12 when it is missing, through apt-get as root or
# through sudo:
#   g++ make cmake ninja-build python3
#                                     the toolchain (the presets build with Ninja; python3 runs
#                                     the recipe check)
#   libtrilinos-kokkos-dev            Kokkos 3.4.01 (Debian's Trilinos package)
#   libtrilinos-kokkos-kernels-dev    Kokkos Kernels 3.4 (the tensor workload, demo, benchmarks)
#   liblapack-dev libblas-dev         the liblapack.so / libblas.so that Debian's Kokkos Kernels
#                                     names in its CMake targets but does not depend on
#   doctest-dev                       the test framework
#   libopenmpi-dev openmpi-bin        Open MPI: kbuf/mpi.hpp's tests and the halo-exchange
#                                     example, run under mpirun (KBUF_ENABLE_MPI)
#   nlohmann-json3-dev                JSON for kbuf-advisor, the Kokkos Tools library
#                                     (KBUF_ENABLE_ADVISOR)
#   libtrilinos-tpetra-dev libtrilinos-belos-dev libtrilinos-ifpack2-dev libtrilinos-teuchos-dev
#                                     Debian's Trilinos 13.2 (same Kokkos 3.4): the peer program
#                                     kbuf-advisor looks at in CI (examples/advisor_peer.cpp;
#                                     skipped by the configure when missing)
#
# Optional, for the benchmark only (not installed by default): libmimalloc-dev libjemalloc-dev
# libtbb-dev, the general-purpose allocators kbuf-bench's threaded section compares the pool
# with. The cost guard (scripts/check-instructions.sh) passes them, so that CI's comparison
# covers them all; a build without them runs the section without them.
#
#   scripts/install-deps.sh [PACKAGE...]         the list above and the named packages
#   scripts/install-deps.sh --only PACKAGE...    only the named packages (e.g. clang-format)
set -euo pipefail

if [ "${1:-}" = "--only" ]; then
  shift
  packages=("$@")
else
  packages=(g++ make cmake ninja-build python3 libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev
            liblapack-dev libblas-dev doctest-dev libopenmpi-dev openmpi-bin nlohmann-json3-dev
            libtrilinos-tpetra-dev libtrilinos-belos-dev libtrilinos-ifpack2-dev
            libtrilinos-teuchos-dev "$@")
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "kbuf: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "kbuf: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
