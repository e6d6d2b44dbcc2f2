#!/usr/bin/env bash
# kbuf's reliability stage: makes the allocator's promises machine-checked.
#
#   scripts/ci-reliability.sh [asan] [tsan] [fuzz] [valgrind]     (default: asan tsan fuzz)
#
#   asan      builds the tests and examples with AddressSanitizer + UndefinedBehaviorSanitizer
#             (g++, -DKBUF_SANITIZE=ON) and runs the test suite with CTest: zero reports. The
#             tests labelled build are left out: they run no code under the sanitizers (a
#             compile-fail case's verdict is the compiler's; the configure checks and install
#             consumers build a project of their own with the compiler alone), so their verdicts
#             are those the README's test command already had, from the same compiler and sources.
#             Nor are the foreign-space copies of the tests (KBUF_FOREIGN_TESTS=OFF in the preset):
#             they were 41% of this build's compile, and the README's test command runs them;
#             nor kbuf-advisor-peer (KBUF_ADVISOR_PEER=OFF): Trilinos' templates under ASan were
#             its longest step, for a program that runs no kbuf code but the advisor's.
#   tsan      builds the executables of the tests that use threads (CTest label "threads":
#             the AllocatorPool tests, the threaded instances example and kbuf-advisor's
#             thread tests) with ThreadSanitizer (g++, -DKBUF_SANITIZE=thread) and runs them
#             with `ctest -L threads`: zero reports.
#   fuzz      builds kbuf-fuzz-allocator (clang++-14, libFuzzer + ASan + UBSan, debug checks
#             on), replays the committed corpus (fuzz/corpus), then fuzzes for
#             KBUF_FUZZ_SECONDS (default 60) from a scratch copy of it. A crash fails the stage
#             and leaves the input in the scratch directory (printed).
#   valgrind  builds the tests and examples without sanitizers (no Kokkos Kernels parts) and
#             runs every test executable and kbuf-usage under valgrind memcheck
#             (--leak-check=full --error-exitcode=1; forked death-test children are silent;
#             operator new/delete replaced by a test executable are left to it).
#
# Installs what it needs with apt-get when missing (root or sudo). Environment:
#   KBUF_REL_BUILD     build root (default: build-ci-reliability in the repository)
#   KBUF_FUZZ_SECONDS  fuzzing time in seconds (default 60)
#   KBUF_REL_JOBS      parallel build jobs (default: nproc)
#   KBUF_CMAKE_ARGS    extra CMake arguments for every build (e.g. -DKokkos_ROOT=...)
#   KBUF_ASAN_EXCLUDE  CTest regex of tests the asan stage skips (default: none)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(asan tsan fuzz)
build_root=${KBUF_REL_BUILD:-$root/build-ci-reliability}
fuzz_seconds=${KBUF_FUZZ_SECONDS:-60}
jobs=${KBUF_REL_JOBS:-$(nproc)}
asan_exclude=${KBUF_ASAN_EXCLUDE-}
read -r -a extra_cmake <<<"${KBUF_CMAKE_ARGS:-}"

say() { printf '\n== ci-reliability: %s\n' "$*"; }
has_stage() {
  local s
  for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}
for s in "${stages[@]}"; do
  case "$s" in asan | tsan | fuzz | valgrind) ;; *)
    echo "ci-reliability: unknown stage '$s' (asan, tsan, fuzz, valgrind)" >&2
    exit 2
    ;;
  esac
done

# ---- What each stage needs ------------------------------------------------------------------
extra_packages=()
if has_stage fuzz; then extra_packages+=(clang-14 libclang-rt-14-dev); fi
if has_stage valgrind; then extra_packages+=(valgrind); fi
scripts/install-deps.sh "${extra_packages[@]}"

start_all=$SECONDS
# build_preset PRESET [TARGET...]: each stage configures with its preset in CMakePresets.json
# (asan, tsan, fuzz, valgrind) into its own folder under the build root, b (KBUF_CMAKE_ARGS adds
# or overrides options), and builds it: everything, or the targets named.
build_preset() {
  b="$build_root/$1"
  cmake --preset "$1" -B "$b" "${extra_cmake[@]}" >/dev/null
  shift
  nice cmake --build "$b" -j "$jobs" ${1:+--target "$@"}
}

# ---- 1. The test suite under ASan + UBSan ---------------------------------------------------
if has_stage asan; then
  say "ASan+UBSan build of the tests and examples (g++)"
  t0=$SECONDS
  build_preset asan
  say "ASan+UBSan test suite"
  # Options are compiled in (cmake/kbufSanitize.cmake); repeated here so that logs show them.
  ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$b" --output-on-failure -j "$jobs" -LE '^build$' \
      ${asan_exclude:+-E "$asan_exclude"}
  say "asan stage: $((SECONDS - t0)) s"
fi

# ---- 2. The tests that use threads under ThreadSanitizer -----------------------------------
if has_stage tsan; then
  say "ThreadSanitizer build of the tests that use threads (g++)"
  t0=$SECONDS
  # Only the executables of the tests labelled "threads". ctest fails on a test added with
  # add_test whose executable is not built here; a doctest executable not built registers no
  # test at all, so each one labelled "threads" must be listed (the check below says which).
  tsan_targets=(kbuf-test-pool kbuf-test-pool-exclusive kbuf-test-pool-kernels kbuf-test-pool-hot-path
                kbuf-test-pool-debug kbuf-test-limit kbuf-instances-threads kbuf-test-workspace-claims
                kbuf-test-workspace-lanes kbuf-test-workspace-lanes-debug
                kbuf-test-current kbuf-test-ordered kbuf-test-dropin kbuf-test-dropin-finalize kbuf-test-use-debug
                kbuf-test-advisor-threads kbuf-test-advisor-tool)
  missing=$(python3 scripts/tsan_targets_missing.py "${tsan_targets[@]}")
  if [ -n "$missing" ]; then
    echo "ci-reliability: labelled threads in tests/ but not in tsan_targets: $missing" >&2
    exit 1
  fi
  build_preset tsan "${tsan_targets[@]}"
  say "ThreadSanitizer: ctest -L threads"
  # Options are compiled in (halt_on_error=1:second_deadlock_stack=1); TSAN_OPTIONS overrides.
  ctest --test-dir "$b" --output-on-failure -j "$jobs" -L threads
  say "tsan stage: $((SECONDS - t0)) s"
fi

# ---- 3. Fuzzing -----------------------------------------------------------------------------
if has_stage fuzz; then
  say "fuzzer build (clang++-14, libFuzzer + ASan + UBSan)"
  t0=$SECONDS
  build_preset fuzz kbuf-fuzz-allocator
  fuzzer="$b/fuzz/kbuf-fuzz-allocator"

  say "replaying the committed corpus (fuzz/corpus)"
  corpus_files=(fuzz/corpus/*)
  if [ -e "${corpus_files[0]}" ]; then
    "$fuzzer" "${corpus_files[@]}" 2>&1 | tail -n 3
  fi

  say "fuzzing for $fuzz_seconds s"
  work="$b/corpus-work"
  rm -rf "$work" "$b/artifacts"
  mkdir -p "$work" "$b/artifacts"
  if ! "$fuzzer" -max_total_time="$fuzz_seconds" -print_final_stats=1 \
      -artifact_prefix="$b/artifacts/" "$work" fuzz/corpus >"$b/fuzz.log" 2>&1; then
    grep -v "WARNING: AddressSanitizer failed to allocate" "$b/fuzz.log" | tail -n 60
    echo "ci-reliability: the fuzzer failed; reproducer(s) in $b/artifacts:" >&2
    ls -l "$b/artifacts" >&2
    echo "replay with: KBUF_FUZZ_VERBOSE=1 $fuzzer <file>" >&2
    exit 1
  fi
  grep -E "^(stat::|Done|INFO: Running with)" "$b/fuzz.log" || true
  say "fuzz stage: $((SECONDS - t0)) s"
fi

# ---- 4. valgrind memcheck -------------------------------------------------------------------
if has_stage valgrind; then
  say "plain build of the tests and examples for valgrind"
  t0=$SECONDS
  build_preset valgrind
  mapfile -t exes < <(find "$b/tests" "$b/examples" -type f -perm -u+x \
                        \( -name 'kbuf-test-*' -o -name 'kbuf-usage' \) | sort)
  say "valgrind memcheck"
  failed=0
  for exe in "${exes[@]}"; do
    t=$(basename "$exe")
    log="$b/valgrind-$t.log"
    if valgrind --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect \
        --errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes \
        --soname-synonyms=somalloc=nouserintercepts \
        --log-file="$log" "$exe" >/dev/null 2>&1; then
      printf '  %-28s %s\n' "$t" "$(grep -h "ERROR SUMMARY" "$log" | head -n 1 | sed 's/^==[0-9]*== //')"
    else
      printf '  %-28s FAILED (see %s)\n' "$t" "$log"
      failed=1
    fi
  done
  [ "$failed" -eq 0 ] || { echo "ci-reliability: valgrind found errors" >&2; exit 1; }
  say "valgrind stage: $((SECONDS - t0)) s"
fi

say "passed (${stages[*]}) in $((SECONDS - start_all)) s"
