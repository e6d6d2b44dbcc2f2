#!/usr/bin/env bash
# Checks that every C++ source under version control is formatted as .clang-format says
# (configured headers, *.in, are left out: clang-format breaks their @VARIABLE@s).
#
#   scripts/check-format.sh          list the files that drift (and a diff with -v); exit 1 if any
#   scripts/check-format.sh --fix    reformat them in place
#
# Environment: CLANG_FORMAT, the clang-format to use (default: clang-format-14 if present, else
# clang-format). Installs Debian's clang-format when none is found (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
verbose=0
for arg in "$@"; do
  case "$arg" in
    --fix) fix=1 ;;
    -v | --verbose) verbose=1 ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-format: unknown argument '$arg' (--fix, -v)" >&2; exit 2 ;;
  esac
done

cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  if command -v clang-format-14 >/dev/null 2>&1; then cf=clang-format-14
  elif command -v clang-format >/dev/null 2>&1; then cf=clang-format
  else
    scripts/install-deps.sh --only clang-format
    cf=clang-format
  fi
fi

# The files: tracked ones in a git checkout, else every C++ source outside build folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cu')
else
  mapfile -t files < <(find . \( -path './build*' -o -path './_build*' -o -path './.git' \) -prune \
                         -o -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
                         -o -name '*.cu' \) -print | sed 's|^\./||' | sort)
fi

drift=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
    drift+=("$f")
    if [ "$fix" -eq 1 ]; then
      "$cf" --style=file -i "$f"
    elif [ "$verbose" -eq 1 ]; then
      "$cf" --style=file "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - || true
    fi
  fi
done

if [ ${#drift[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files formatted ($("$cf" --version | sed 's/.*version //'))"
  exit 0
fi
if [ "$fix" -eq 1 ]; then
  printf 'check-format: reformatted %s\n' "${drift[@]}"
  exit 0
fi
printf '%s\n' "${drift[@]}"
echo "check-format: ${#drift[@]} of ${#files[@]} files drift from .clang-format;" \
     "run scripts/check-format.sh --fix (or -v to see the diff)" >&2
exit 1
