#!/usr/bin/env bash
# Builds kbuf for a GPU backend against an installed Kokkos, runs its tests, the demo and a
# quick benchmark on the GPU, and writes a short Markdown report.
#
#   scripts/gpu-check.sh --kokkos PREFIX [options]              build and run on this machine
#   scripts/gpu-check.sh --kokkos PREFIX --build-only [options] build only (a machine with no GPU)
#   BUILD_DIR/gpu-check/gpu-check.sh --run-only BUILD_DIR       run there (a GPU machine, offline)
#
# The split mode is for a GPU machine that can neither download nor compile: --build-only
# builds everything and records what to run in BUILD_DIR/gpu-check/ (plain text, relative
# paths), plus a copy of this script; --bundle FILE packs that record and the executables it
# names into one tar file. --run-only needs bash and coreutils only (no CMake, no compiler):
# Kokkos is linked statically, and the CUDA runtime statically by nvcc's default.
#
# Options:
#   --kokkos PREFIX          Kokkos install with the CUDA (or HIP) backend (required to build)
#   --kokkos-kernels PREFIX  Kokkos Kernels install (default: PREFIX when it has one); without
#                            it the demo and the tensor benchmark section are not built
#   --backend CUDA|HIP       default CUDA (Serial also works: to try the script without a GPU)
#   --cxx COMPILER           default: PREFIX/bin/nvcc_wrapper (CUDA), hipcc (HIP), c++ (Serial)
#   --cuda-root DIR          where bin/nvcc is when it is not on PATH (default /usr/local/cuda)
#   --build-dir DIR          default: <repo>/build-gpu-check
#   --build-only             configure and build, record what to run, run nothing
#   --run-only DIR           run what DIR (made by --build-only) holds; build nothing
#   --bundle FILE            with --build-only: also pack what --run-only needs into FILE (.tar.gz)
#   --report FILE            default: BUILD_DIR/gpu-check-report.md
#   --jobs N                 parallel build jobs (default 2)
#   --demo-args "ARGS"       arguments of kbuf-demo (default: none, the README's command)
#   --bench-args "ARGS"      arguments of kbuf-bench (default: --quick)
#   --test-timeout SECONDS   per test when run without ctest (default 1800)
#   -h, --help               this text
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "gpu-check: $*" >&2; exit 2; }

mode=all
backend=CUDA
kokkos=""
kokkos_kernels=""
cxx=""
cuda_root=/usr/local/cuda
build_dir=""
bundle=""
report=""
jobs=2
demo_args=""
bench_args="--quick"
test_timeout=1800

while [[ $# -gt 0 ]]; do
  case "$1" in
    --kokkos) kokkos=${2:?}; shift 2 ;;
    --kokkos-kernels) kokkos_kernels=${2:?}; shift 2 ;;
    --backend) backend=${2:?}; shift 2 ;;
    --cxx) cxx=${2:?}; shift 2 ;;
    --cuda-root) cuda_root=${2:?}; shift 2 ;;
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --build-only) mode=build; shift ;;
    --run-only) mode=run; build_dir=${2:?}; shift 2 ;;
    --bundle) bundle=${2:?}; shift 2 ;;
    --report) report=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --demo-args) demo_args=$2; shift 2 ;;
    --bench-args) bench_args=$2; shift 2 ;;
    --test-timeout) test_timeout=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

case "$backend" in CUDA|HIP|Serial) ;; *) die "--backend must be CUDA or HIP, not '$backend'" ;; esac
[[ -n "$bundle" && "$mode" != build ]] && die "--bundle goes with --build-only"

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ "$mode" == run ]]; then
  [[ -d "$build_dir/gpu-check" ]] || die "'$build_dir' holds no gpu-check/ record; build it with --build-only first"
else
  [[ -n "$kokkos" ]] || die "--kokkos PREFIX is required to build (see --help)"
  [[ -d "$kokkos" ]] || die "--kokkos '$kokkos' is not a directory"
  repo_root=$(cd "$script_dir/.." && pwd)
  [[ -f "$repo_root/include/kbuf/buffer_allocator.hpp" ]] || die "run the script from kbuf's scripts/ folder"
  build_dir=${build_dir:-$repo_root/build-gpu-check}
fi
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
record="$build_dir/gpu-check"
report=${report:-$build_dir/gpu-check-report.md}

# Executables the run uses beside the tests ctest knows (a device build registers no CTest test
# for the workspace's team-misuse program: its tests call cmake).
extra_executables="apps/demo/kbuf-demo bench/kbuf-bench bench/kbuf-bench-growth tests/reliability/kbuf-test-workspace-team-misuse"

# ---- Build -------------------------------------------------------------------------------------
build() {
  kokkos=$(cd "$kokkos" && pwd)
  if [[ -z "$cxx" ]]; then
    case "$backend" in
      CUDA) cxx="$kokkos/bin/nvcc_wrapper" ;;
      HIP) cxx=$(command -v hipcc || true) ;;
      Serial) cxx=$(command -v c++ || true) ;;
    esac
  fi
  [[ -n "$cxx" && -x "$(command -v "$cxx" || true)" ]] || die "no compiler for $backend (use --cxx)"
  if [[ "$backend" == CUDA ]] && ! command -v nvcc > /dev/null; then
    [[ -x "$cuda_root/bin/nvcc" ]] || die "nvcc is neither on PATH nor in --cuda-root '$cuda_root'"
    export PATH="$cuda_root/bin:$PATH"
  fi
  local kk_args=(-DKBUF_ENABLE_KERNELS=OFF)
  local kk_prefix=${kokkos_kernels:-$kokkos}
  if compgen -G "$kk_prefix/lib*/cmake/KokkosKernels/KokkosKernelsConfig.cmake" > /dev/null; then
    kk_args=(-DKBUF_ENABLE_KERNELS=ON "-DKokkosKernels_ROOT=$kk_prefix")
  elif [[ -n "$kokkos_kernels" ]]; then
    die "--kokkos-kernels '$kokkos_kernels' holds no KokkosKernelsConfig.cmake"
  fi

  mkdir -p "$record"
  echo "gpu-check: configuring $build_dir ($backend, $cxx)"
  cmake -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "-DKBUF_BACKEND=$backend" \
        "-DCMAKE_CXX_COMPILER=$cxx" "-DKokkos_ROOT=$kokkos" "${kk_args[@]}" \
        -DBUILD_TESTING=ON -DKBUF_ENABLE_EXAMPLES=ON -DKBUF_ENABLE_BENCHMARKS=ON \
        > "$record/configure.log" 2>&1 || { tail -30 "$record/configure.log"; die "configure failed"; }
  echo "gpu-check: building with $jobs jobs (log: $record/build.log)"
  cmake --build "$build_dir" -j "$jobs" > "$record/build.log" 2>&1 ||
    { grep -E "error" "$record/build.log" | head -30; die "build failed; see $record/build.log"; }

  # What was built, with what.
  {
    echo "- kbuf: $(git -C "$repo_root" describe --always --dirty 2>/dev/null || echo unknown)" \
         "($(git -C "$repo_root" log -1 --format=%cs 2>/dev/null || echo '?'))"
    echo "- built on: $(uname -n), $(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null), $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "- backend: $backend; compiler: $cxx"
    if [[ "$backend" == CUDA ]]; then
      echo "- nvcc: $(nvcc --version | sed -n 's/^Cuda compilation tools, //p'); host compiler: ${NVCC_WRAPPER_DEFAULT_COMPILER:-g++} ($(${NVCC_WRAPPER_DEFAULT_COMPILER:-g++} -dumpfullversion))"
    else
      echo "- $("$cxx" --version 2>/dev/null | head -1)"
    fi
    sed -n 's/^--   \(Kokkos \|KBUF_ENABLE_KERNELS\)/\1/p' "$record/configure.log" | sed 's/^/- /; s/  */ /g'
    sed -n 's/^set(Kokkos_ARCH \(..*\))$/- Kokkos_ARCH: \1/p' "$kokkos"/lib*/cmake/Kokkos/KokkosConfigCommon.cmake 2>/dev/null || true
  } > "$record/build-info.md"

  write_manifest
  copy_runtime_libraries
  cp "${BASH_SOURCE[0]}" "$record/gpu-check.sh"
  chmod +x "$record/gpu-check.sh"
  echo "gpu-check: built; record in $record"
}

# The tests ctest knows, as lines of tab-separated fields for a runner without ctest:
#   name <TAB> will_fail(0/1) <TAB> pass regex (ERE, '-' for none) <TAB> working dir <TAB> command
#   <TAB> args...
# Paths inside the build tree are written relative to it (@B@/...). Tests that configure or
# build (they call cmake) are left out: they belong to the build machine, which ran them.
write_manifest() {
  (cd "$build_dir" && ctest --show-only=json-v1) > "$record/ctest.json"
  python3 - "$record/ctest.json" "$build_dir" "$record/tests.tsv" "$record/excluded.txt" <<'EOF'
import json, os, sys
data = json.load(open(sys.argv[1]))
build = sys.argv[2].rstrip('/') + '/'
def rel(s):
    return '@B@/' + s[len(build):] if s.startswith(build) else ('@B@' if s + '/' == build else s)
rows, excluded = [], []
for t in data.get('tests', []):
    cmd = t.get('command') or []
    props = {p['name']: p['value'] for p in t.get('properties', [])}
    if not cmd or os.path.basename(cmd[0]) in ('cmake', 'ctest', 'cpack'):
        excluded.append(t['name'])
        continue
    regex = props.get('PASS_REGULAR_EXPRESSION') or '-'
    if isinstance(regex, list):
        regex = '|'.join('(%s)' % r for r in regex)
    fields = [t['name'], '1' if props.get('WILL_FAIL') else '0', regex,
              rel(props.get('WORKING_DIRECTORY', os.path.dirname(cmd[0])))] + [rel(c) for c in cmd]
    if any('\t' in f or '\n' in f for f in fields):
        excluded.append(t['name'])
        continue
    rows.append('\t'.join(fields))
open(sys.argv[3], 'w').write('\n'.join(rows) + '\n')
open(sys.argv[4], 'w').write('\n'.join(excluded) + ('\n' if excluded else ''))
EOF
  echo "gpu-check: $(wc -l < "$record/tests.tsv") tests recorded to run; $(wc -l < "$record/excluded.txt") build-machine tests left out"
}

# Shared libraries the executables need from outside the system's folders (nvcc's CUDA runtime
# libcudart.so.N, for one) go to gpu-check/lib, which --run-only puts on LD_LIBRARY_PATH. The
# driver (libcuda.so.1) is the GPU machine's own and is never copied.
copy_runtime_libraries() {
  mkdir -p "$record/lib"
  local exe lib
  for exe in $(cut -f5 "$record/tests.tsv" | sed -n 's|^@B@/||p' | sort -u) $extra_executables; do
    [[ -x "$build_dir/$exe" ]] || continue
    ldd "$build_dir/$exe" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
      grep -vE '^/(usr/)?lib(64)?/' | grep -v 'libcuda\.so' || true
  done | sort -u | while read -r lib; do cp -L "$lib" "$record/lib/"; done
  if compgen -G "$record/lib/*" > /dev/null; then
    echo "- runtime libraries carried along: $(cd "$record/lib" && echo *)" >> "$record/build-info.md"
  fi
}

# Tests that need the compiler but no GPU (compile-fail checks, the configure check) run here.
run_build_machine_tests() {
  echo "gpu-check: running the compile-only tests (no GPU needed)"
  local out="$record/build-machine-tests.log" rc=0
  (cd "$build_dir" && ctest -R '^(compile|config)\.' -j1) > "$out" 2>&1 || rc=$?
  { echo "- compile-only tests on the build machine: $(grep -E 'tests passed' "$out" || echo 'none ran')"
    grep -E '^\s+[0-9]+ - ' "$out" | sed 's/^ */  - failed: /' || true; } >> "$record/build-info.md"
  tail -3 "$out"
  return $rc
}

make_bundle() {
  local list
  list=$(mktemp)
  {
    echo "gpu-check"
    cut -f5 "$record/tests.tsv" | sed -n 's|^@B@/||p'
    for exe in $extra_executables; do [[ -x "$build_dir/$exe" ]] && echo "$exe"; done
  } | sort -u > "$list"
  tar -czf "$bundle" -C "$build_dir" -T "$list"
  rm -f "$list"
  echo "gpu-check: bundle $bundle ($(du -h "$bundle" | cut -f1)); on the GPU machine:"
  echo "  mkdir kbuf-gpu && tar -xzf $(basename "$bundle") -C kbuf-gpu && kbuf-gpu/gpu-check/gpu-check.sh --run-only kbuf-gpu"
}

# ---- Run ---------------------------------------------------------------------------------------
gpu_description() {
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 |
      sed 's/^/- GPU: /; s/, \([0-9]* MiB\), /, \1, driver /'
  elif command -v rocm-smi > /dev/null; then
    rocm-smi --showproductname 2>&1 | grep -E "Card (series|model)" | sed 's/^/- GPU: /'
  else
    echo "- GPU: none found (neither nvidia-smi nor rocm-smi is on PATH)"
  fi
}

# Runs the manifest's tests one by one; prints one line per test and a summary.
run_tests() {
  local logs="$record/test-logs"
  mkdir -p "$logs"
  local pass=0 fail=0 total=0 failed=()
  local tmo=()
  command -v timeout > /dev/null && tmo=(timeout "$test_timeout")
  while IFS=$'\t' read -r -a f; do
    [[ ${#f[@]} -ge 5 ]] || continue
    local name=${f[0]} will_fail=${f[1]} regex=${f[2]} wd=${f[3]//@B@/$build_dir}
    local cmd=("${f[@]:4}")
    cmd=("${cmd[@]//@B@/$build_dir}")
    total=$((total + 1))
    local rc=0
    # Test names hold '/' (group.exe/case) and other characters a file name should not.
    local log="$logs/$(printf '%s' "$name" | tr -c 'A-Za-z0-9._-' '_').log"
    (cd "$wd" && "${tmo[@]}" "${cmd[@]}") > "$log" 2>&1 || rc=$?
    local ok
    if [[ "$regex" != - ]]; then  # as ctest: the output decides, not the exit status
      ok=0; grep -Eq -- "$regex" "$log" && ok=1
    else
      ok=$(( (rc == 0) != (will_fail == 1) ))
    fi
    if [[ $ok == 1 ]]; then
      pass=$((pass + 1)); printf '  %-40s passed\n' "$name"
    else
      fail=$((fail + 1)); failed+=("$name (exit $rc)"); printf '  %-40s FAILED (exit %d)\n' "$name" "$rc"
    fi
  done < "$record/tests.tsv"
  echo
  echo "$pass of $total tests passed, $fail failed"
  for f in "${failed[@]}"; do echo "  failed: $f"; done
  [[ $fail == 0 ]]
}

# The workspace's team-misuse program in each of its modes, with a time limit. The correct
# kernel (first), a debug team kernel of two threads, passes when it says "ended normally" and
# its kernel ran in under a second; a misuse when it exits non-zero with the check's message
# before the limit, and sooner than the check's time bound (2 s in that program) after the
# correct run's time (start-up included), except where only the bound can end it
# (--spill-in-broadcast: the rest of the team waits in the single's broadcast).
misuse_cases() {
  local exe=$1 rc=0 status=0 mode out
  local tmo=()
  command -v timeout > /dev/null && tmo=(timeout 120)
  local start ms kernel_ms base=0
  for mode in --correct "" --spill-in-single --spill-in-broadcast --spill-in-range; do
    rc=0
    start=$(date +%s%N)
    # shellcheck disable=SC2086  # an empty mode is no argument
    out=$("${tmo[@]}" "$exe" $mode 2>&1) || rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [[ "$mode" == --correct ]]; then
      kernel_ms=$(printf '%s\n' "$out" | sed -n 's/.*the kernel ran \([0-9]*\)\..*/\1/p')
      if [[ $rc == 0 && -n "$kernel_ms" && $kernel_ms -lt 1000 ]]; then
        echo "  $mode: ended normally, its kernel in ${kernel_ms} ms (${ms} ms in all)"
        base=$ms
      else
        echo "  $mode: FAILED (exit $rc, kernel ${kernel_ms:-?} ms)"; status=1
      fi
    elif [[ $rc != 0 && $rc != 124 && "$out" == *"the threads of a team made different takes"* ]] &&
         [[ "$mode" == --spill-in-broadcast || $backend == HIP || $ms -lt $((base + 2000)) ]]; then
      # On AMD GPUs the lanes of a wavefront may leave only by the check's time bound, counted in
      # ticks of a clock kbuf takes as 2 GHz while it may run slower: there the abort with the
      # check's message within the run's timeout (120 s) is the verdict, and its time is shown.
      echo "  ${mode:-(take in single)}: aborted with the check's message (exit $rc) in ${ms} ms"
    else
      echo "  ${mode:-(take in single)}: FAILED (exit $rc$([[ $rc == 124 ]] && echo ', hung'), ${ms} ms)"
      status=1
    fi
    printf '%s\n' "$out" | grep -m1 "kbuf::Workspace" | cut -c1-160 | sed 's/^/    /' || true
  done
  return $status
}

section() {  # section TITLE COMMAND...: runs it, prints its output in a fenced block
  local title=$1; shift
  echo
  echo "## $title"
  echo
  echo '```text'
  echo "\$ ${*#"$build_dir/"}"
  local rc=0
  "$@" 2>&1 || rc=$?
  echo '```'
  [[ $rc == 0 ]] || echo "**exit status $rc**"
  return $rc
}

run() {
  [[ -s "$record/tests.tsv" ]] || die "$record/tests.tsv is missing or empty"
  if compgen -G "$record/lib/*" > /dev/null; then
    export LD_LIBRARY_PATH="$record/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  local status=0 missing=""
  if command -v ldd > /dev/null && [[ -x "$build_dir/tests/unit/kbuf-test-sizes" ]]; then
    missing=$(ldd "$build_dir/tests/unit/kbuf-test-sizes" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
  fi
  {
    echo "# kbuf GPU check"
    echo
    echo "- run on: $(uname -n), $(date -u +%Y-%m-%dT%H:%MZ), mode: $mode"
    gpu_description
    [[ -z "$missing" ]] || echo "- **missing shared libraries: $missing** (libcuda.so.1 is the NVIDIA driver's: without it nothing runs)"
    cat "$record/build-info.md" 2>/dev/null || true
    echo "- left out (configure/build tests, run on the build machine): $(tr '\n' ' ' < "$record/excluded.txt")"
  } > "$report"

  local test_out
  test_out=$(mktemp)
  local tests_ok=0
  if [[ "$mode" == all ]] && command -v ctest > /dev/null; then
    (cd "$build_dir" && ctest --output-on-failure -j1) > "$test_out" 2>&1 || tests_ok=$?
    {
      echo; echo "## Tests (ctest)"; echo; echo '```text'
      grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Not Run|Timeout|Total Test time" "$test_out" || true
      echo '```'
    } >> "$report"
    cp "$test_out" "$record/ctest.log"
  else
    run_tests > "$test_out" 2>&1 || tests_ok=$?
    { echo; echo "## Tests"; echo; echo '```text'; cat "$test_out"; echo '```'; } >> "$report"
  fi
  [[ $tests_ok == 0 ]] || status=1
  cat "$test_out"
  rm -f "$test_out"

  # What each allocator call cost in fences, allocations and frees, as Kokkos Tools saw it.
  local exe="$build_dir/tests/instances/kbuf-test-instances" inst="$record/instances-events.log"
  if [[ -x "$exe" ]]; then
    (cd "$record" && KBUF_TEST_REPORT_EVENTS=1 "$exe") > "$inst" 2>&1 || true
    { echo; echo "## Fences, allocations and frees per allocator call (Kokkos Tools, unit.instances)"
      echo; echo '```text'
      awk '/MESSAGE: /{p=1; sub(/^.*MESSAGE: /, ""); print; next}
           p && (/^  logged:/ || /^$/ || /^=+$/) {p=0}
           p {print}
           /^\[doctest\] (test cases|assertions)/ {print}' "$inst"
      echo '```'; } >> "$report"
  fi

  # The workspace in the shapes only a device shows: thousands of teams in flight (bytes held
  # against fixed slots), one lane for many spilling teams, per_thread spills, Kokkos::AUTO teams
  # (the rerun's slots for the team size Kokkos chose), every first round served by the fallback
  # region with CUDA's default heap; per_thread arenas over the device's global UniqueToken and
  # over token values near its concurrency; the misuse checks; then the batched jobs that use it
  # (the example and, with Kokkos Kernels, the batched fits).
  local wsx="$build_dir/tests/unit/kbuf-test-workspace-device"
  if [[ -x "$wsx" ]]; then
    section "Workspace on the device (unit.workspace_device)" "$wsx" >> "$report" || status=1
  fi
  local wsu="$build_dir/tests/unit/kbuf-test-workspace"
  if [[ -x "$wsu" ]]; then
    section "Workspace per_thread arenas on the device (unit.workspace)" "$wsu" \
      "--test-case=*per_thread*" >> "$report" || status=1
  fi
  # A team whose threads make different takes (debug checks): each misuse must abort with the
  # message, within the check's bound (2 s) and never hang; the correct kernel must end normally.
  local misuse="$build_dir/tests/reliability/kbuf-test-workspace-team-misuse"
  if [[ -x "$misuse" ]]; then
    section "Workspace misuse on the device (kbuf-test-workspace-team-misuse)" \
      misuse_cases "$misuse" >> "$report" || status=1
  fi
  # Growth in place in the device's memory (CUDA's driver virtual memory API, HIP's from ROCm
  # 5.2): what kernels wrote survives growth, trim gives back; then a first run by regrowth, in
  # place and from a sizes file, side by side (its halo exchange; each fallback a device
  # allocation).
  local gip="$build_dir/tests/unit/kbuf-test-grow-in-place"
  if [[ -x "$gip" ]]; then
    section "Growth in place on the device (unit.grow_in_place)" "$gip" \
      "--test-case=*default_memory_space*" -s >> "$report" || status=1
    # A grown temporary exported as a POSIX file descriptor, its RDMA flag read back (CUDA).
    section "Growth in place: exportable, RDMA capable memory (unit.grow_in_place)" "$gip" \
      "--test-case=*exportable*" -s >> "$report" || status=1
  fi
  # Two streams handing temporaries back and forth: results right, no fence by kbuf, no
  # device-wide synchronisation (unit.instances).
  local ins="$build_dir/tests/instances/kbuf-test-instances"
  if [[ -x "$ins" ]]; then
    section "Temporaries handed between two streams (unit.instances)" "$ins" \
      "--test-case=*handed back and forth*" -s >> "$report" || status=1
  fi
  local bgr="$build_dir/bench/kbuf-bench-growth"
  if [[ -x "$bgr" ]]; then
    section "A first run by regrowth, in place, from a sizes file (kbuf-bench-growth --runs 3)" \
      "$bgr" --runs 3 >> "$report" || status=1
  fi
  local bls="$build_dir/examples/kbuf-batched-least-squares"
  if [[ -x "$bls" ]]; then
    section "Batched least squares (kbuf-batched-least-squares --repeat 3)" "$bls" --repeat 3 \
      >> "$report" || status=1
  fi
  local fits="$build_dir/apps/batched/kbuf-batched-fits"
  if [[ -x "$fits" ]]; then
    section "Batched fits (kbuf-batched-fits --repeat 3)" "$fits" --repeat 3 >> "$report" || status=1
  fi

  if [[ -x "$build_dir/apps/demo/kbuf-demo" ]]; then
    # shellcheck disable=SC2086  # word splitting of the user's argument string is intended
    section "Demo (kbuf-demo${demo_args:+ $demo_args})" "$build_dir/apps/demo/kbuf-demo" $demo_args >> "$report" || status=1
  else
    printf '\n## Demo\n\nnot built (no Kokkos Kernels)\n' >> "$report"
  fi
  if [[ -x "$build_dir/bench/kbuf-bench" ]]; then
    # shellcheck disable=SC2086
    section "Benchmark (kbuf-bench${bench_args:+ $bench_args})" "$build_dir/bench/kbuf-bench" $bench_args >> "$report" || status=1
  else
    printf '\n## Benchmark\n\nnot built\n' >> "$report"
  fi
  echo
  echo "gpu-check: report written to $report"
  return $status
}

case "$mode" in
  build) build; run_build_machine_tests || true; [[ -z "$bundle" ]] || make_bundle ;;
  run) run ;;
  all) build; run ;;
esac
