#!/usr/bin/env bash
# Install kbuf's Spack recipe for real, from this checkout, against Debian 12's packages.
#
#   spack/check-install.sh SPACK_ROOT [--spack-packages DIR] [--gpu] [options]
#
# SPACK_ROOT is a Spack 1.x checkout (bin/spack). --spack-packages DIR is a checkout of the
# builtin package repository (DIR/repos/spack_repo/builtin, or that folder itself); without it
# Spack uses the builtin repository it is configured with. Nothing is fetched: every dependency
# is a non-buildable external in /usr, and kbuf itself is this checkout (`spack develop`).
#
# Everything happens in a throwaway folder (environment, install tree, build and test stages);
# Spack's own configuration outside it (~/.spack, /etc/spack) is not read. The folder is removed
# when every step passed, kept (with each step's log) when one failed or with --keep.
#
# Options:
#   --spack-packages DIR  the builtin package repository to use
#   --gpu                 also install kbuf+cuda cuda_arch=90 and kbuf+rocm amdgpu_target=gfx90a
#                         against Kokkos 4.6.01 installs (built, not run: no GPU needed)
#   --gpu-only            the GPU builds alone (implies --gpu)
#   --kokkos-cuda PREFIX  Kokkos 4.6.01 (+ Kokkos Kernels) for CUDA, sm_90 (/opt/kokkos-4.6.01-cuda)
#   --kokkos-hip PREFIX   Kokkos 4.6.01 for HIP, gfx90a (/opt/kokkos-4.6.01-hip)
#   --cuda PREFIX         the CUDA toolkit, external cuda@13.0 (/usr/local/cuda)
#   --target TARGET       require this Spack target for every package (e.g. x86_64_v3);
#                         default: the host's
#   --jobs N              build jobs (2)
#   --work DIR            use DIR (created, must be empty) instead of a temporary folder
#   --snapshot            build a copy of the checkout's files (tracked and untracked, not ignored)
#                         taken at the start, not the checkout itself: for a checkout that is
#                         being edited while this runs
#   --keep                keep the work folder
#   -v, --verbose         also print every step's output as it runs
#
# Exits non-zero when any step failed; prints what each step proves and a summary at the end.

set -u -o pipefail

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; }

CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPACK_ROOT_ARG=""
SPACK_PACKAGES=""
GPU=0
KOKKOS_CUDA=/opt/kokkos-4.6.01-cuda
KOKKOS_HIP=/opt/kokkos-4.6.01-hip
CUDA_PREFIX=/usr/local/cuda
TARGET=""
JOBS=2
WORK=""
KEEP=0
VERBOSE=0
SNAPSHOT=0
SERIAL=1

while [ $# -gt 0 ]; do
  case "$1" in
    --spack-packages) SPACK_PACKAGES=${2:?--spack-packages needs a folder}; shift 2 ;;
    --gpu) GPU=1; shift ;;
    --gpu-only) GPU=1; SERIAL=0; shift ;;
    --kokkos-cuda) KOKKOS_CUDA=${2:?}; shift 2 ;;
    --kokkos-hip) KOKKOS_HIP=${2:?}; shift 2 ;;
    --cuda) CUDA_PREFIX=${2:?}; shift 2 ;;
    --target) TARGET=${2:?}; shift 2 ;;
    --jobs) JOBS=${2:?}; shift 2 ;;
    --work) WORK=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --snapshot) SNAPSHOT=1; shift ;;
    -v | --verbose) VERBOSE=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "check-install.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *)
      if [ -n "$SPACK_ROOT_ARG" ]; then echo "check-install.sh: one SPACK_ROOT only" >&2; exit 2; fi
      SPACK_ROOT_ARG=$1; shift ;;
  esac
done
if [ -z "$SPACK_ROOT_ARG" ]; then usage >&2; exit 2; fi
SPACK_ROOT_ARG=$(cd "$SPACK_ROOT_ARG" 2>/dev/null && pwd) || {
  echo "check-install.sh: no such folder: $SPACK_ROOT_ARG" >&2; exit 2; }
SPACK_BIN="$SPACK_ROOT_ARG/bin/spack"
if [ ! -x "$SPACK_BIN" ]; then echo "check-install.sh: $SPACK_BIN is missing" >&2; exit 2; fi

BUILTIN=""
if [ -n "$SPACK_PACKAGES" ]; then
  for cand in "$SPACK_PACKAGES/repos/spack_repo/builtin" "$SPACK_PACKAGES"; do
    if [ -f "$cand/repo.yaml" ] && [ -d "$cand/packages/kokkos" ]; then
      BUILTIN=$(cd "$cand" && pwd)
      break
    fi
  done
  if [ -z "$BUILTIN" ]; then
    echo "check-install.sh: $SPACK_PACKAGES holds no builtin package repository" \
      "(repos/spack_repo/builtin/repo.yaml)" >&2
    exit 2
  fi
fi

if [ -n "$WORK" ]; then
  mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
  if [ -n "$(ls -A "$WORK")" ]; then echo "check-install.sh: $WORK is not empty" >&2; exit 2; fi
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kbuf-check-install.XXXXXX")
fi
LOGS="$WORK/logs"
mkdir -p "$LOGS" "$WORK/links" "$WORK/stage" "$WORK/test-stage" "$WORK/user-config"

# The source Spack builds: the checkout itself, or a copy of its files.
SRC=$CHECKOUT
if [ "$SNAPSHOT" = 1 ]; then
  SRC="$WORK/src"
  mkdir -p "$SRC"
  (cd "$CHECKOUT" && git ls-files -z -c -o --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$SRC" -xf - || {
    echo "check-install.sh: could not copy $CHECKOUT to $SRC" >&2; exit 2; }
  echo "snapshot of $CHECKOUT ($(git -C "$CHECKOUT" rev-parse --short HEAD 2>/dev/null)," \
    "$(git -C "$CHECKOUT" status --porcelain 2>/dev/null | wc -l) changed or new files) in $SRC"
fi

# Spack reads only its defaults and the environments made here.
export SPACK_DISABLE_LOCAL_CONFIG=1
export SPACK_USER_CONFIG_PATH="$WORK/user-config"
unset SPACK_ENV SPACK_ENV_VIEW

# ---- Bookkeeping: steps, what they prove, results ---------------------------------------------

STEP=0
FAILURES=0
SUMMARY=()   # one line per step
START_ALL=$SECONDS

# Current step: number, name, log file, start time.
CUR_NAME=""
CUR_LOG=""
CUR_START=0

begin() {  # begin NAME PROVES...
  STEP=$((STEP + 1))
  CUR_NAME=$1
  shift
  CUR_LOG=$(printf '%s/%02d-%s.log' "$LOGS" "$STEP" "$(printf '%s' "$CUR_NAME" | tr -c 'A-Za-z0-9+_=.-' '_')")
  CUR_START=$SECONDS
  echo
  echo "==> [$STEP] $CUR_NAME"
  echo "    proves: $*" | fold -s -w 100 | sed '2,$s/^/            /'
}

# Runs a command of the current step, its output into the step's log.
run() {
  echo "    \$ $*" >>"$CUR_LOG"
  if [ "$VERBOSE" = 1 ]; then
    "$@" 2>&1 | tee -a "$CUR_LOG"
  else
    "$@" >>"$CUR_LOG" 2>&1
  fi
}

note() {  # a line of the step's result, shown and kept for the summary
  echo "    $*"
  CUR_NOTES+=("$*")
}
CUR_NOTES=()

end() {  # end STATUS(0 = passed)
  local status=$1 secs=$((SECONDS - CUR_START)) word=PASS extra=""
  if [ "$status" != 0 ]; then
    word=FAIL
    FAILURES=$((FAILURES + 1))
    echo "    --- last lines of $CUR_LOG:"
    tail -n 25 "$CUR_LOG" | sed 's/^/    | /'
  fi
  if [ ${#CUR_NOTES[@]} -gt 0 ]; then extra=" — $(IFS=';'; echo "${CUR_NOTES[*]}" | sed 's/;/; /g')"; fi
  echo "    $word ($(fmt_time $secs))"
  SUMMARY+=("$(printf '%-4s %7s  [%d] %s%s' "$word" "$(fmt_time $secs)" "$STEP" "$CUR_NAME" "$extra")")
  CUR_NOTES=()
  return 0
}

skip() {  # skip NAME WHY
  STEP=$((STEP + 1))
  echo
  echo "==> [$STEP] $1: SKIPPED ($2)"
  SUMMARY+=("$(printf '%-4s %7s  [%d] %s — %s' SKIP - "$STEP" "$1" "$2")")
}

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

spack() { nice -n 10 "$SPACK_BIN" "$@"; }

finish() {
  echo
  echo "==> Summary (kbuf $SRC, $("$SPACK_BIN" --version 2>/dev/null | head -n 1)," \
    "builtin repository ${BUILTIN:-as configured}, target ${TARGET:-host default})"
  local line
  for line in "${SUMMARY[@]}"; do echo "    $line"; done
  echo "    total $(fmt_time $((SECONDS - START_ALL))); $FAILURES step(s) failed"
  if [ "$FAILURES" = 0 ] && [ "$KEEP" = 0 ]; then
    rm -rf "$WORK"
  else
    echo "    work folder kept: $WORK (logs in $LOGS)"
  fi
  [ "$FAILURES" = 0 ]
}

# ---- Environments -----------------------------------------------------------------------------

# write_env DIR VIEWS_YAML EXTERNALS_YAML: a Spack environment that installs into $WORK/store.
write_env() {
  local dir=$1 views=$2 externals=$3
  mkdir -p "$dir"
  {
    echo "spack:"
    echo "  specs: []"
    echo "  concretizer:"
    echo "    unify: false        # kbuf several times, with different variants"
    echo "    reuse: false"
    echo "  config:"
    echo "    install_tree:"
    echo "      root: $WORK/store"
    echo "    build_stage: [$WORK/stage]"
    echo "    test_stage: $WORK/test-stage"
    echo "    source_cache: $WORK/source-cache"
    echo "    develop_stage_link: $WORK/links/build-{name}-{hash:7}"
    echo "    build_jobs: $JOBS"
    echo "  repos:"
    if [ -n "$BUILTIN" ]; then echo "    builtin: $BUILTIN"; fi
    echo "    kbuf: $SRC/spack/spack_repo/kbuf"
    echo "$views"
    echo "  packages:"
    if [ -n "$TARGET" ]; then
      echo "    all:"
      echo "      require: target=$TARGET"
    fi
    echo "$externals"
  } >"$dir/spack.yaml"
}

# external NAME SPEC PREFIX: a non-buildable external.
external() {
  printf '    %s:\n      buildable: false\n      externals:\n      - spec: "%s"\n        prefix: %s\n' \
    "$1" "$2" "$3"
}

# require VIRTUAL PROVIDER: the provider a virtual package must be.
require() { printf '    %s:\n      require: %s\n' "$1" "$2"; }

# The specs an environment would build (everything else is external): "name@version" lines.
to_build() {
  cat >"$WORK/to_build.py" <<'PY'
import spack.environment as ev

env = ev.active_environment()
seen = set()
for _, spec in env.concretized_specs():
    for s in spec.traverse(deptype="all"):
        if not s.external and s.dag_hash() not in seen:
            seen.add(s.dag_hash())
            print(f"{s.name}@{s.version} /{s.dag_hash(7)} target={s.target}")
PY
  spack -e "$1" python "$WORK/to_build.py"
}

# Checks that an environment builds nothing but kbuf and Spack's own glue.
check_builds_only_kbuf() {
  local env=$1 list other
  list=$(to_build "$env" 2>>"$CUR_LOG") || return 1
  echo "$list" >>"$CUR_LOG"
  other=$(echo "$list" | grep -v -E '^(kbuf|gcc-runtime|compiler-wrapper)@' || true)
  note "to build: $(echo "$list" | awk '{print $1}' | sort | uniq -c | awk '{printf "%s%s", sep, ($1 > 1 ? $1 "x " : "") $2; sep=", "}')"
  note "kbuf's target: $(echo "$list" | grep '^kbuf@' | sed 's/.*target=//' | sort -u | paste -sd ' ')"
  if [ -n "$other" ]; then
    echo "would build (not an external): $other" | tee -a "$CUR_LOG"
    return 1
  fi
}

# The install prefix of the installed spec matching SPEC in ENV.
prefix_of() { spack -e "$1" location -i "$2" 2>>"$CUR_LOG"; }

# The CTest summary of a build log: the "N% tests passed" line and the failed tests.
ctest_result() {
  local log=$1
  local line
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
  if [ -z "$line" ]; then
    note "no CTest summary in the build log"
    return 1
  fi
  local failed total
  failed=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
  total=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
  note "CTest: $((total - failed)) tests passed, $failed failed out of $total"
  if [ "$failed" != 0 ]; then
    # The names CTest lists after "The following tests FAILED:".
    awk '/The following tests FAILED:/{f=1; next} f && /^[[:space:]]+[0-9]+ - /{print; next} f{f=0}' \
      "$log" | sed -E 's/^[[:space:]]+[0-9]+ - //' | while IFS= read -r t; do
      echo "    failed test: $t"
      echo "failed test: $t" >>"$CUR_LOG"
    done
    FAILED_TESTS+=("$(awk '/The following tests FAILED:/{f=1; next} f && /^[[:space:]]+[0-9]+ - /{sub(/^[[:space:]]+[0-9]+ - /, ""); printf "%s%s", sep, $0; sep=" | "; next} f{f=0}' "$log")")
    return 1
  fi
}
FAILED_TESTS=()

# The log of the latest build under the build stage (a failed one stays there): its build-time
# test log when it has one.
latest_stage_log() {
  local dir
  dir=$(find "$WORK/stage" -name spack-build-env.txt -printf '%T@ %h\n' 2>/dev/null | sort -n |
    tail -n 1 | cut -d' ' -f2-)
  [ -n "$dir" ] || return 0
  if [ -f "$dir/install-time-test-log.txt" ]; then
    echo "$dir/install-time-test-log.txt"
  else
    ls -t "$dir"/spack-build-*-out.txt 2>/dev/null | head -n 1
  fi
}

# install_step ENV SPEC TESTFLAG: spack install of one root, then what its log shows.
# Remaining arguments: "KEY=VALUE" lines the configure arguments must contain, and "bin/X" files
# the prefix must hold.
install_step() {
  local env=$1 spec=$2 testflag=$3
  shift 3
  local status=0 prefix log
  # shellcheck disable=SC2086
  run spack -e "$env" install $testflag --no-add --fail-fast "$spec" || status=1
  prefix=$(prefix_of "$env" "$spec") || prefix=""
  if [ "$status" = 0 ] && [ -n "$prefix" ]; then
    log="$prefix/.spack/install-time-test-log.txt"
    note "prefix $prefix"
  else
    log=$(latest_stage_log)
    [ -n "$log" ] && note "build log $log"
  fi
  if [ -n "$testflag" ] && [ -n "$log" ] && [ -f "$log" ]; then
    ctest_result "$log" || status=1
  fi
  if [ "$status" = 0 ]; then
    local arg_lines want missing=()
    arg_lines=$(tr ' ' '\n' <"$prefix/.spack/spack-configure-args.txt")
    for want in "$@"; do
      case "$want" in
        bin/* | lib/* | include/*) [ -e "$prefix/$want" ] || missing+=("$want") ;;
        *) grep -q -x -F -e "-D${want%%=*}:BOOL=${want#*=}" -e "-D${want%%=*}:STRING=${want#*=}" \
             -e "-D${want%%=*}:PATH=${want#*=}" -e "-D${want}" <<<"$arg_lines" ||
             missing+=("-D$want") ;;
      esac
    done
    # What kbuf's CMake reports in its configure summary ("--   KBUF_ENABLE_MPI        : ON").
    local summary key
    summary=$(gzip -dc "$prefix/.spack/spack-build-out.txt.gz" 2>/dev/null | grep -E '^--   [A-Z_]+ +: ')
    for want in "$@"; do
      key=${want%%=*}
      case "$key" in
        KBUF_* | BUILD_TESTING)
          grep -q -E "^--   $key +: ${want#*=}( |:|\$)" <<<"$summary" ||
            missing+=("summary $key: ${want#*=}") ;;
      esac
    done
    if [ ${#missing[@]} -gt 0 ]; then
      note "missing from the configure arguments / the configure summary / the prefix: ${missing[*]}"
      status=1
    elif [ $# -gt 0 ]; then
      note "configured with, and reported by kbuf's CMake: $(printf '%s\n' "$@" | grep '=' | paste -sd ' ')"
      local files
      files=$(printf '%s\n' "$@" | grep -v '=' | paste -sd ' ')
      [ -z "$files" ] || note "installed: $files"
    fi
  fi
  return $status
}

# test_run_step ENV SPEC ALIAS [gpu]: spack test run as the test suite ALIAS (one per call: the
# environments share the test stage); every spec and every test part must pass. With "gpu", the
# run of kbuf-consumer may be skipped (the recipe skips it where no GPU is present); its build
# must pass.
test_run_step() {
  local env=$1 spec=$2 alias=$3 gpu=${4:-} status=0 out
  run spack -e "$env" test run --alias "$alias" "$spec" || status=1
  out=$(spack -e "$env" test results -l "$alias" 2>&1)
  echo "$out" >>"$CUR_LOG"
  # "==>   kbuf-main-abcdefg PASSED" per spec; "Kbuf::test_consumer_run .. PASSED" per part.
  local specs parts bad
  specs=$(grep -E '^==> +kbuf-[^ ]+ [A-Z_]+$' <<<"$out" | awk '{print $3}' | sort | uniq -c |
    awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')
  parts=$(grep -E '^Kbuf::test_[a-z_]+ \.\. [A-Z_]+$' <<<"$out" | awk '{print $3}' | sort |
    uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep=", "}')
  note "specs: ${specs:-none}; test parts: ${parts:-none}"
  grep -E '^kbuf [0-9]+ \(backend|^SKIPPED: ' <<<"$out" | sed 's/^/    | /'
  bad=$(grep -E '^(==> +kbuf-[^ ]+|Kbuf::test_[a-z_]+ \.\.) [A-Z_]+$' <<<"$out" |
    grep -v -E ' PASSED$' || true)
  if [ -n "$gpu" ]; then
    bad=$(grep -v -E '^Kbuf::test_consumer_run \.\. SKIPPED$' <<<"$bad" || true)
    if ! grep -q -E '^Kbuf::test_consumer_build \.\. PASSED$' <<<"$out"; then
      bad="${bad:+$bad$'\n'}test_consumer_build did not pass"
    fi
  elif [ -z "$specs" ] || ! grep -q -E '^kbuf [0-9]+ \(backend .*: 4 temporaries, .*ok$' <<<"$out"; then
    bad="${bad:+$bad$'\n'}no spec tested, or kbuf-consumer's 'ok' line is missing from the test log"
  fi
  if [ -n "$bad" ]; then
    sed 's/^==> *//; s/^/    not passed: /' <<<"$bad"
    status=1
  fi
  return $status
}

# consumer_step ROOT OUT run|build [CMAKE ARGS...]: configure and build the install-test consumer
# against what ROOT (a view or an installation prefix) holds; run it with "run".
consumer_step() {
  local view=$1 out=$2 run_it=$3
  shift 3
  run cmake -S "$SRC/tests/install/consumer" -B "$out" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$view" "$@" || return 1
  grep -E 'kbuf_DIR|Kokkos_DIR' "$out/CMakeCache.txt" >>"$CUR_LOG"
  local dir
  dir=$(sed -n 's/^kbuf_DIR:PATH=//p' "$out/CMakeCache.txt")
  note "kbuf_DIR=$dir"
  case "$dir" in "$view"/*) ;; *) note "kbuf was not found in $view"; return 1 ;; esac
  run nice -n 10 cmake --build "$out" -j "$JOBS" || return 1
  if [ "$run_it" = run ]; then
    run "$out/kbuf-consumer" || return 1
    note "$(tail -n 1 "$CUR_LOG")"
  else
    note "built $out/kbuf-consumer (not run: no GPU)"
  fi
}

# ---- The steps --------------------------------------------------------------------------------

# The Serial builds against Debian's Kokkos 3.4.01: environment, audit, concretization, the two
# installs with their test suites, the stand-alone test, the consumer from the views.
serial_checks() {
  ENV="$WORK/env"
  SERIAL_EXTERNALS=$(
    external kokkos "kokkos@3.4.01 ~cuda ~rocm ~openmp +serial" /usr
    external kokkos-kernels "kokkos-kernels@3.4.01" /usr
    external doctest "doctest@2.4.9" /usr
    external netlib-lapack "netlib-lapack@3.11.0" /usr
    require lapack netlib-lapack
    require blas netlib-lapack
    external openmpi "openmpi@4.1.4" /usr
    require mpi openmpi
  )
  # Two kbufs, two views (a view holds one of each package).
  SERIAL_VIEWS=$(
    printf '  view:\n'
    printf '    %s:\n      root: %s\n      select: [%s]\n' \
      serial "$WORK/view-serial" "kbuf~kernels~mpi" \
      kernels-mpi "$WORK/view-kernels-mpi" "kbuf+kernels+mpi"
  )

  begin "environment" "Spack 1.x loads the kbuf repository next to the builtin one; spack develop" \
    "points kbuf@main at this checkout; cmake, gmake, gcc, ninja, pkgconf are Debian's"
  status=0
  write_env "$ENV" "$SERIAL_VIEWS" "$SERIAL_EXTERNALS"
  run spack -e "$ENV" external find --not-buildable cmake gmake gcc ninja pkgconf || status=1
  run spack -e "$ENV" repo list || status=1
  run spack -e "$ENV" develop --no-clone --path "$SRC" kbuf@main || status=1
  run spack -e "$ENV" add kbuf || status=1
  run spack -e "$ENV" add kbuf+kernels+mpi || status=1
  note "$("$SPACK_BIN" --version), externals: $(spack -e "$ENV" config get packages 2>/dev/null |
    grep -E '^\s+- spec:' | sed -E 's/^\s+- spec: *//; s/"//g' | awk '{print $1}' | paste -sd ' ')"
  grep -q 'kbuf' "$CUR_LOG" || status=1
  end $status

  begin "audit" "the recipe passes Spack's own package audits (directives, variants, dependencies)"
  status=0
  run spack -e "$ENV" audit packages kbuf || status=1
  end $status

  begin "concretize kbuf, kbuf+kernels+mpi (--test=root)" "both specs concretize offline against" \
    "the externals alone: nothing but kbuf and Spack's glue (gcc-runtime, compiler-wrapper) is built"
  status=0
  run spack -e "$ENV" concretize -f --test=root || status=1
  [ "$status" = 0 ] && { check_builds_only_kbuf "$ENV" || status=1; }
  end $status
  CONCRETIZED=$status

  if [ "$CONCRETIZED" = 0 ]; then
    begin "install --test=root kbuf" "the Serial build configures, builds and passes kbuf's CTest" \
      "suite inside Spack's build environment (Spack's compiler wrapper and target flags), installs"
    install_step "$ENV" "kbuf~kernels~mpi" --test=root KBUF_BACKEND=Serial KBUF_ENABLE_KERNELS=OFF \
      KBUF_ENABLE_MPI=OFF BUILD_TESTING=ON CMAKE_CXX_STANDARD=17 include/kbuf/kbuf.hpp
    INSTALLED_serial=$?
    end $INSTALLED_serial

    begin "install --test=root kbuf+kernels+mpi" "+kernels and +mpi reach CMake (KBUF_ENABLE_KERNELS," \
      "KBUF_ENABLE_MPI), Kokkos Kernels, LAPACK and Open MPI are found, the applications and the MPI" \
      "tests build and pass, kbuf-demo and kbuf-tebd are installed"
    install_step "$ENV" "kbuf+kernels+mpi" --test=root KBUF_BACKEND=Serial KBUF_ENABLE_KERNELS=ON \
      KBUF_ENABLE_MPI=ON BUILD_TESTING=ON CMAKE_CXX_STANDARD=17 bin/kbuf-demo bin/kbuf-tebd
    INSTALLED_kernels_mpi=$?
    end $INSTALLED_kernels_mpi

    if [ "$INSTALLED_serial" = 0 ] || [ "$INSTALLED_kernels_mpi" = 0 ]; then
      begin "spack test run kbuf" "the recipe's stand-alone test (test_consumer) builds the" \
        "install-test consumer against each installed kbuf with the build's compiler and runs it"
      test_run_step "$ENV" kbuf kbuf-serial
      end $?
    else
      skip "spack test run kbuf" "no kbuf was installed"
    fi

    for v in serial kernels-mpi; do
      installed_var="INSTALLED_${v//-/_}"
      if [ "${!installed_var}" != 0 ]; then
        skip "consumer from the view $v" "that kbuf was not installed"
        continue
      fi
      begin "consumer from the view $v" "a CMake project finds the installed kbuf through the" \
        "environment's view (find_package(kbuf) with CMAKE_PREFIX_PATH=<view>) and Kokkos through" \
        "kbuf's package config, builds and runs"
      consumer_step "$WORK/view-$v" "$WORK/consumer-$v" run -DCMAKE_CXX_COMPILER=g++
      end $?
    done
  else
    skip "installs, stand-alone test, consumer" "concretization failed"
  fi
}

# ---- GPU builds -------------------------------------------------------------------------------

kokkos_cmake_dir() {  # the folder of KokkosConfig.cmake under a prefix
  find "$1" -maxdepth 4 -name KokkosConfig.cmake -path '*cmake/Kokkos/*' 2>/dev/null | head -n 1
}

# kbuf+cuda and kbuf+rocm against Kokkos 4.6.01 installs: concretized, installed, a consumer
# compiled against each (nothing runs without a GPU).
gpu_checks() {
  GENV="$WORK/env-gpu"
  have_cuda=0
  have_hip=0
  [ -n "$(kokkos_cmake_dir "$KOKKOS_CUDA")" ] && [ -x "$KOKKOS_CUDA/bin/nvcc_wrapper" ] &&
    [ -x "$CUDA_PREFIX/bin/nvcc" ] && have_cuda=1
  [ -n "$(kokkos_cmake_dir "$KOKKOS_HIP")" ] && [ -x /usr/bin/hipcc ] && have_hip=1
  # Debian's ROCm lives in /usr, not in the /opt/rocm-X layout that Spack's hip recipe derives
  # paths from for an external hip (HIP_CLANG_PATH=/usr/llvm/bin, HIP_PATH=/usr/hip, ...): those
  # variables are unset again, and Debian's hipcc finds its clang and device libraries itself.
  GPU_EXTERNALS=$(
    printf '    kokkos:\n      buildable: false\n      externals:\n'
    printf '      - spec: "%s"\n        prefix: %s\n' \
      "kokkos@4.6.01 +cuda cuda_arch=90 +wrapper +cuda_lambda +serial ~openmp ~rocm ~shared cxxstd=17" \
      "$KOKKOS_CUDA" \
      "kokkos@4.6.01 +rocm amdgpu_target=gfx90a +serial ~openmp ~cuda ~shared cxxstd=17" \
      "$KOKKOS_HIP"
    external cuda "cuda@13.0.0" "$CUDA_PREFIX"
    external hip "hip@5.2.3" /usr
    printf '        extra_attributes:\n          environment:\n            unset: [%s]\n' \
      "HIP_CLANG_PATH, HIP_PATH, ROCM_PATH, HSA_PATH, DEVICE_LIB_PATH, HIP_DEVICE_LIB_PATH, \
HIPIFY_CLANG_PATH, LLVM_PATH, COMGR_PATH, ROCMINFO_PATH, HIPCC_COMPILE_FLAGS_APPEND, \
HIPCC_LINK_FLAGS_APPEND"
    external hsa-rocr-dev "hsa-rocr-dev@5.2.3" /usr
    external llvm-amdgpu "llvm-amdgpu@5.2.3" /usr
  )
  GPU_VIEWS="  view: false"
  GPU_SPECS=()
  [ "$have_cuda" = 1 ] && GPU_SPECS+=("kbuf+cuda cuda_arch=90")
  [ "$have_hip" = 1 ] && GPU_SPECS+=("kbuf+rocm amdgpu_target=gfx90a")
  [ "$have_cuda" = 1 ] || skip "kbuf+cuda cuda_arch=90" \
    "no Kokkos for CUDA in $KOKKOS_CUDA (bin/nvcc_wrapper, KokkosConfig.cmake) or no $CUDA_PREFIX/bin/nvcc"
  [ "$have_hip" = 1 ] || skip "kbuf+rocm amdgpu_target=gfx90a" \
    "no Kokkos for HIP in $KOKKOS_HIP (KokkosConfig.cmake) or no /usr/bin/hipcc"

  if [ ${#GPU_SPECS[@]} -gt 0 ]; then
    begin "concretize the GPU specs: ${GPU_SPECS[*]}" "kbuf+cuda / kbuf+rocm concretize against" \
      "external Kokkos 4.6.01 builds for sm_90 / gfx90a (one architecture each, as the recipe asks)"
    status=0
    write_env "$GENV" "$GPU_VIEWS" "$GPU_EXTERNALS"
    run spack -e "$GENV" external find --not-buildable cmake gmake gcc ninja pkgconf || status=1
    run spack -e "$GENV" develop --no-clone --path "$SRC" kbuf@main || status=1
    for s in "${GPU_SPECS[@]}"; do run spack -e "$GENV" add "$s" || status=1; done
    [ "$status" = 0 ] && { run spack -e "$GENV" concretize -f || status=1; }
    [ "$status" = 0 ] && { check_builds_only_kbuf "$GENV" || status=1; }
    end $status
    GPU_CONCRETIZED=$status

    for s in "${GPU_SPECS[@]}"; do
      if [ "$GPU_CONCRETIZED" != 0 ]; then
        skip "install $s" "concretization failed"
        continue
      fi
      case "$s" in
        *cuda*)
          begin "install $s" "KBUF_BACKEND=CUDA: kbuf's CMake configures with Kokkos' nvcc_wrapper" \
            "(CUDA 13, sm_90), finds Kokkos' CUDA build and installs (header-only: compiled by the stand-alone test)"
          install_step "$GENV" "$s" "" KBUF_BACKEND=CUDA \
            "CMAKE_CXX_COMPILER=$KOKKOS_CUDA/bin/nvcc_wrapper" CMAKE_CXX_STANDARD=17 \
            include/kbuf/kbuf.hpp
          end $?
          ;;
        *)
          begin "install $s" "KBUF_BACKEND=HIP: kbuf's CMake configures with hipcc 5.2.3 (gfx90a)" \
            "finds Kokkos' HIP build and installs (header-only: compiled by the stand-alone test)"
          install_step "$GENV" "$s" "" KBUF_BACKEND=HIP CMAKE_CXX_COMPILER=/usr/bin/hipcc \
            CMAKE_CXX_STANDARD=17 include/kbuf/kbuf.hpp
          end $?
          ;;
      esac
    done
    if [ "$GPU_CONCRETIZED" = 0 ]; then
      begin "spack test run kbuf (GPU builds)" "the recipe's stand-alone test builds the" \
        "install-test consumer against each GPU installation (nvcc_wrapper for sm_90, hipcc for" \
        "gfx90a) and runs it where a GPU is present; without one it skips the run and says why"
      test_run_step "$GENV" kbuf kbuf-gpu gpu
      end $?
    fi
  fi
}

# The whole run is one function, read in full before it starts.
main() {
  echo "kbuf: installing the Spack recipe of $SRC"
  echo "Spack: $SPACK_BIN; work folder: $WORK"
  [ "$SERIAL" = 1 ] && serial_checks
  [ "$GPU" = 1 ] && gpu_checks
  finish
}

main; exit $?
