#!/usr/bin/env bash
# Installs what kbuf's build needs on Debian 12 when it is missing: a C++ compiler, CMake,
# Kokkos 3.4 and Kokkos Kernels (Debian's Trilinos packages), doctest and Google Benchmark.
# Runs apt-get as root, or through sudo. With arguments, installs those Debian packages instead
# when missing (e.g. `scripts/install-deps.sh doxygen`).
set -euo pipefail

packages=(g++ make cmake libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev doctest-dev
          python3)
[ $# -gt 0 ] && packages=("$@")
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
