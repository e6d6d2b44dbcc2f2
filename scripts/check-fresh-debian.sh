#!/usr/bin/env bash
# Runs a command from a fresh clone of the current commit inside a bare Debian 12 root
# (debootstrap --variant=minbase bookworm: no compiler, no CMake, no Kokkos), as root, the way a
# newcomer's machine or a fresh CI machine would run it. Proves that kbuf's scripts install
# everything they need.
#
#   scripts/check-fresh-debian.sh [--keep] [command...]    (default command: bash .ci/run)
#
# The pristine root is made once and cached as a tarball; every run unpacks a new copy of it,
# so nothing installed by an earlier run can hide a missing install step. Only committed work
# is checked (the clone is of HEAD). Prints the packages the command installed, the tail of its
# output (the test summary) and the time it took. Exit status: the command's.
#
# Needs root (or sudo) for debootstrap, chroot and mounts; installs debootstrap if missing.
# Environment:
#   KBUF_FRESH_CACHE   where the pristine root's tarball is kept
#                      (default /var/cache/kbuf-fresh-debian)
#   KBUF_FRESH_WORK    where the root is unpacked (default: a new directory under /var/tmp)
#   KBUF_FRESH_MIRROR  Debian mirror for debootstrap (default: the first bookworm source of
#                      this machine's apt configuration, else debootstrap's default)
# Inside the root KBUF_IN_FRESH_ROOT=1 is set, so a .ci/run there does not start this check
# again.
set -euo pipefail

args=("$@")
keep=0
if [ "${1:-}" = "--keep" ]; then
  keep=1
  shift
fi
command=("$@")
[ ${#command[@]} -eq 0 ] && command=(bash .ci/run)

if [ -n "${KBUF_IN_FRESH_ROOT:-}" ]; then
  echo "check-fresh-debian: already inside a fresh root; not nesting" >&2
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "check-fresh-debian: need root or sudo" >&2; exit 1; }
  exec sudo -E "$0" "${args[@]}"
fi

repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse HEAD)
cache=${KBUF_FRESH_CACHE:-/var/cache/kbuf-fresh-debian}
tarball="$cache/bookworm-minbase.tar"
say() { printf '\n== check-fresh-debian: %s\n' "$*"; }
t_start=$SECONDS

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap \
    >/dev/null
fi

# ---- The pristine root, made once ------------------------------------------------------------
if [ ! -s "$tarball" ]; then
  mirror=${KBUF_FRESH_MIRROR:-}
  if [ -z "$mirror" ]; then
    # This machine's own Debian source: deb822 ("URIs: ...") or one-line ("deb URI bookworm").
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
               awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}')
    [ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list 2>/dev/null |
               awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}')
  fi
  say "making a minimal Debian 12 root with debootstrap${mirror:+ from $mirror}"
  mkdir -p "$cache"
  stage=$(mktemp -d /var/tmp/kbuf-debootstrap.XXXXXX)
  t0=$SECONDS
  debootstrap --variant=minbase bookworm "$stage" ${mirror:+"$mirror"} >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 30 "$cache/debootstrap.log" >&2; rm -rf "$stage"; exit 1; }
  tar -C "$stage" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$stage"
  say "root made and cached in $((SECONDS - t0)) s ($tarball)"
fi

# ---- A new copy of it, with a fresh clone of this commit -------------------------------------
work=${KBUF_FRESH_WORK:-$(mktemp -d /var/tmp/kbuf-fresh.XXXXXX)}
root="$work/root"
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  if [ "$keep" -eq 0 ]; then rm -rf "$work"; else echo "check-fresh-debian: kept $root"; fi
}
trap cleanup EXIT
# Ended from outside (.ci/run ends it when one of its own stages fails): unmount and remove too.
trap 'exit 143' TERM INT
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
git clone -q --no-hardlinks "$repo" "$root/src/kbuf"
git -C "$root/src/kbuf" checkout -q "$commit"
# CI keeps a read-only copy of the shared folder beside the clone; nothing in .ci/run needs it.
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A minbase root has no /etc/hosts (netbase is not in it), where an installed Debian machine and
# a container have one; without it a program that starts Open MPI waits about 5 s on name
# lookups before main (kbuf-tebd with a bad option: 5.4 s, 0.3 s with the file), which made the
# test suite's CTest run here 301 s. The machine's own file, as a container gets it.
if [ -s /etc/hosts ]; then
  cp /etc/hosts "$root/etc/hosts"
else
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
fi
for d in proc sys dev dev/pts; do
  mkdir -p "$root/$d"
  case $d in
    proc) mount -t proc proc "$root/proc" ;;
    *) mount --bind "/$d" "$root/$d" ;;
  esac
  mounted+=("$root/$d")
done

say "fresh root at $root, clone of $commit"
chroot "$root" dpkg-query -W -f='${Package}\n' | sort >"$work/before.txt"
for tool in g++ cmake; do
  if chroot "$root" sh -c "command -v $tool" >/dev/null 2>&1; then
    echo "check-fresh-debian: the root is not bare ($tool is there)" >&2
    exit 1
  fi
done

say "running '${command[*]}' in the root as root"
t0=$SECONDS
set +e
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 CI=true KBUF_IN_FRESH_ROOT=1 \
  bash -c 'cd /src/kbuf && "$@"' bash "${command[@]}" </dev/null 2>&1 | tee "$work/run.log"
status=${PIPESTATUS[0]}
set -e
elapsed=$((SECONDS - t0))

chroot "$root" dpkg-query -W -f='${Package}\n' | sort >"$work/after.txt"
mapfile -t added < <(comm -13 "$work/before.txt" "$work/after.txt")
explicit=$(grep -ho 'kbuf: installing .*' "$work/run.log" | sed 's/^kbuf: installing //' |
             tr '\n' ' ' || true)

say "summary"
echo "  commit               : $commit"
echo "  command              : ${command[*]}"
echo "  packages asked for   : ${explicit:-none}"
echo "  packages installed   : ${#added[@]} (with dependencies)"
echo "  test summary lines   :"
grep -E '(tests passed|tests failed|[0-9]+ passed, [0-9]+ failed|passed \(|CI passed|checks passed|FAILED)' \
  "$work/run.log" | sed 's/^/    /' | tail -n 12 || true
echo "  time                 : ${elapsed} s for the command, $((SECONDS - t_start)) s in all"
echo "  result               : $([ "$status" -eq 0 ] && echo PASSED || echo "FAILED (exit $status)")"
exit "$status"
