#!/usr/bin/env bash
# Builds everything and runs every test: the C++ suites through CTest (GPU
# tests skip with a reason where no GPU is present), examples/ built against
# an installed copy of libxfer, and the report tool's pytest suite. Exits
# non-zero if anything fails. Each stage's wall seconds are printed as it ends
# and together at the end, so that a CI log shows where the time went. It
# ends with a table of components (scripts/components.py): which ones this
# build has (CUDA compiled, OpenCL on PoCL, Vulkan on lavapipe, XRT under its
# shim, fleet over MPI, the Python native module, Chromium, pandas and scipy),
# how many of each one's tests passed and skipped, and why one is missing.
# The console gets one line per stage (its outcome, wall seconds and log);
# each stage's whole output is in its log under build/, and a failing stage
# shows its failed tests there too.
#
#   XFER_REQUIRE_COMPONENTS="cuda-compile opencl ..."   fail, naming it, where one of these is not
#                                built, ran no test, or skipped a test it could run (.ci/run sets it)
#   XFER_GPU_TESTS=on|off|only   the `gpu`-labelled tests too (on, the default), all but them
#                                (off), or the build and them alone (only). The GPU gate runs
#                                the two halves as two device commands where one test stage
#                                outlasts a command (several GPUs; docs/decisions/0006-gpu-gate.md).
set -uo pipefail
cd "$(dirname "$0")/.."
gpu_tests=${XFER_GPU_TESTS:-on}
case $gpu_tests in
  on | off | only) ;;
  *) echo "test.sh: XFER_GPU_TESTS is '$gpu_tests': on, off or only" >&2; exit 2 ;;
esac
t_start=$(date +%s.%N)
t_mark=$t_start
lap() {  # lap NAME: one line, NAME and the wall seconds since the previous lap
  local now s
  now=$(date +%s.%N)
  s=$(awk -v a="$t_mark" -v b="$now" 'BEGIN { printf "%.0f", b - a }')
  t_mark=$now
  echo "test.sh: $1 ($s s)"
}
# ctest_outcome LOG: "N passed, M failed, K skipped", and under it the failed tests' names.
ctest_outcome() {
  local total failed skipped
  # "100% tests passed out of 1217", or "99% tests passed, 2 tests failed out of 1217" (CTest's summary)
  total=$(sed -n 's/.*tests passed.* out of \([0-9]*\).*/\1/p' "$1" | tail -n1)
  failed=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$1" | tail -n1)
  failed=${failed:-0}
  skipped=$(grep -c '(Skipped)$' "$1" || true)
  if [ -z "$total" ]; then echo "no summary (see the log)"; return; fi
  echo "$((total - failed - skipped)) passed, $failed failed, $skipped skipped"
}
# ctest_failures LOG: the failed tests, then the first failing cases and assertions inside them
# (unittest's FAIL:/ERROR:, GoogleTest's [  FAILED  ], an AssertionError), so that a CI run
# that keeps only the console still says which case failed and why.
ctest_failures() {
  sed -n '/The following tests FAILED:/,$p' "$1" | grep -E '^[[:space:]]+[0-9]+ - ' | sed 's/^[[:space:]]*/    /'
  grep -E '^(FAIL|ERROR): |\[  FAILED  \] [A-Za-z]|^[A-Za-z.]*Error: ' "$1" | head -n 12 | cut -c1-200 | sed 's/^/      /'
}
# ctest_stage NAME LOG DIR ARGS...: ctest in DIR into LOG, one line on the console
ctest_stage() {
  local name=$1 log=$2 dir=$3 rc=0
  shift 3
  (cd "$dir" && "$ctest_bin" --output-on-failure "$@") >"$log" 2>&1 || rc=1
  lap "$name: $(ctest_outcome "$log"); log: $log"
  [ "$rc" = 0 ] || { ctest_failures "$log"; status=1; }
}

status=0
tools=$(scripts/build.sh) || { lap "build/ (scripts/build.sh): FAILED"; exit 1; }
lap "build/ (scripts/build.sh: setup, configure, build)"

{ read -r cmake_bin; read -r python_bin; } <<<"$tools"  # setup.sh's picks: a .venv's python where it made one
ctest_bin="$(dirname "$cmake_bin")/ctest"
[ -x "$ctest_bin" ] || ctest_bin=ctest
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/build/pocl-cache}"
mkdir -p "$POCL_CACHE_DIR"

# What the component table reads: each test's labels and command, and every
# test's outcome and output as JUnit XML (CTest's and pytest's). Output kept
# whole: a GoogleTest skip and the cases of a unittest run are read from it.
results=$PWD/build/test-results
rm -rf "$results"
mkdir -p "$results"
(cd build && "$ctest_bin" --show-only=json-v1 >"$results/ctest-tests.json") || status=1
keep_output=(--test-output-size-passed 1048576 --test-output-size-failed 1048576)
# One test more than cores: the CLI tests spend most of their time waiting (a watchdog's 30 s bound,
# a rank's timeout), and on 2 cores the host stage took 126 s at -j2 against 88 s at -j3.
jobs=$(($(nproc) + 1))

if [ "$gpu_tests" != only ]; then
  ctest_stage "ctest -LE gpu" build/ctest-host.log build -j "$jobs" -LE gpu --output-junit "$results/ctest-host.xml" "${keep_output[@]}"
fi
if [ "$gpu_tests" != off ]; then
  # GPU tests one at a time: several processes spinning gates on one GPU would
  # time-slice it. Where there is no GPU they skip, each saying why.
  ctest_stage "ctest -L gpu (one at a time)" build/ctest-gpu.log build -L gpu --output-junit "$results/ctest-gpu.xml" "${keep_output[@]}"
fi
if [ "$gpu_tests" = only ]; then
  exit $status
fi

# libxfer installed into a temporary prefix, examples/ built against it with
# find_package(xfer) as an application would, and the host examples run.
if install_out=$(scripts/test-install.sh "$cmake_bin" 2>&1); then
  lap "${install_out##*$'\n'}"
else
  printf '%s\n' "$install_out"
  lap "install + examples: FAILED (log: build/test-install.log)"
  status=1
fi

# The host code's tests again under AddressSanitizer and UndefinedBehaviorSanitizer
# (leaks included), in a build of their own without the GPU backends: CUDA's,
# OpenCL's, Vulkan's and XRT's runtimes are not built for it, and Open MPI's own
# allocations would read as leaks. XFER_SANITIZERS=off skips it
# (the GPU gate does: it has nothing GPU-specific, and CI runs it).
#
# Compiled at -Og -g1 instead of RelWithDebInfo's -O2 -g: with ASan and UBSan
# instrumenting it, -O2 made this build 922 of CI's 1663 s in a fresh clone's
# run; -Og -g1 compiles the same files in under a third of the CPU
# time (its three heaviest: 140 s -> 43 s) and the tests run as fast. The
# sanitizers' checks are inserted before optimisation, so they catch the same
# errors; -g1 keeps the line tables their reports need; the optimiser's own
# view of the code (-O3) is tested by the first ctest above. NDEBUG as
# before, so the same code runs.
# (The TSan build below keeps -O2: it compiles a handful of files.)
asan_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG"
            "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG")
if [ "${XFER_SANITIZERS:-on}" != off ]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  asan_log=build/asan-build.log
  # Unity builds, as scripts/build.sh's (about half the compile time).
  unity=(-DCMAKE_UNITY_BUILD=ON)
  if "$cmake_bin" -S . -B build-asan "${generator[@]}" "${asan_flags[@]}" "${unity[@]}" \
       -DXFER_SANITIZE=address,undefined -DXFER_ENABLE_CUDA=OFF -DXFER_ENABLE_OPENCL=OFF -DXFER_ENABLE_XRT=OFF -DXFER_ENABLE_VULKAN=OFF -DXFER_ENABLE_MPI=OFF >"$asan_log" 2>&1 &&
     "$cmake_bin" --build build-asan -j "$(nproc)" --target xfer_unit_tests xfer_conformance_tests xfer_backend_conformance_tests xfer_cpu_tests \
       xfer_staged_tests xferbench xferbench-fleet-faults xfer_bench_roofline xfer_fault_shim xfer_example_pool xfer_example_staged >>"$asan_log" 2>&1; then
    lap "ASan+UBSan: configure, build, $(grep -c 'warning:' "$asan_log") compiler warning(s) (build-asan/; log: $asan_log)"
    # allocator_may_return_null: tests ask for absurd sizes on purpose and
    # expect an error, not an abort. verify_asan_link_order=0: the CLI tests
    # preload their fault shim (and stdbuf its library) ahead of the runtime.
    XFER_SANITIZE=address,undefined ASAN_OPTIONS=allocator_may_return_null=1:verify_asan_link_order=0 \
      UBSAN_OPTIONS=print_stacktrace=1 ctest_stage "ASan+UBSan: ctest (unit, conformance, cpu, staged, CLI)" \
      build/ctest-asan.log build-asan -j "$jobs"
  else
    lap "ASan+UBSan: configure, build (build-asan/): FAILED"
    tail -30 "$asan_log"
    echo "the sanitizer build failed (all of it: $asan_log)"
    status=1
  fi

  # The staged copier's tests under ThreadSanitizer: its pipeline hands
  # chunks between the caller, the copier's team and the lanes' threads, the
  # kind of code where a missing happens-before passes every other test. Only
  # those tests (label staged): the rest of the suite is single-threaded or
  # covered above, and TSan slows everything 5-15x.
  tsan_log=build/tsan-build.log
  if "$cmake_bin" -S . -B build-tsan "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${unity[@]}" \
       -DXFER_SANITIZE=thread -DXFER_ENABLE_CUDA=OFF -DXFER_ENABLE_OPENCL=OFF -DXFER_ENABLE_XRT=OFF -DXFER_ENABLE_VULKAN=OFF -DXFER_ENABLE_MPI=OFF >"$tsan_log" 2>&1 &&
     "$cmake_bin" --build build-tsan -j "$(nproc)" --target xfer_staged_tests >>"$tsan_log" 2>&1; then
    lap "TSan: configure, build, $(grep -c 'warning:' "$tsan_log") compiler warning(s) (build-tsan/; log: $tsan_log)"
    # halt_on_error: the first race fails its test at once, with its report.
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest_stage "TSan: ctest -L staged" build/ctest-tsan.log build-tsan -j "$(nproc)" -L staged
  else
    lap "TSan: configure, build (build-tsan/): FAILED"
    tail -30 "$tsan_log"
    echo "the ThreadSanitizer build failed (all of it: $tsan_log)"
    status=1
  fi
fi

if [ -d python/tests ]; then
  # Run from the source tree (no install needed, which also works offline):
  # python/ holds the pure Python, build/python/xferbench the native module the
  # CMake build made (xferbench/__init__.py joins the two). Where the build made
  # the module, its tests must run: XFERBENCH_REQUIRE_NATIVE turns a module
  # that fails to import into a failure instead of a skip.
  require_native=0
  ls build/python/xferbench/_native*.so >/dev/null 2>&1 && require_native=1
  # One pytest worker a core (pytest-xdist, where setup installed it): 87 s -> 63 s on CI's two
  # cores. Not beside a GPU: its tests would share the device, and some of them time it.
  workers=()
  if [ "$(nproc)" -gt 1 ] && "$python_bin" -c 'import xdist' 2>/dev/null && ! nvidia-smi -L >/dev/null 2>&1; then
    workers=(-n "$(nproc)")
  fi
  # --durations: the slowest tests in the log (the GPU gate's test.log carries it back).
  PYTHONPATH="$PWD/python:$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" XFERBENCH_REQUIRE_NATIVE=$require_native \
    XFERBENCH_BIN="$PWD/build/apps/xferbench/xferbench" \
    "$python_bin" -m pytest -q -rfEs --durations=15 "${workers[@]}" --junitxml "$results/pytest.xml" python/tests >build/pytest.log 2>&1 ||
    pytest_rc=1
  lap "pytest: $(tail -n 1 build/pytest.log | tr -d '='); log: build/pytest.log"
  if [ "${pytest_rc:-0}" != 0 ]; then
    grep -E '^(FAILED|ERROR) ' build/pytest.log | sed 's/^/    /'
    status=1
  fi
fi

echo "test.sh: all stages: $(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s"
"$python_bin" scripts/components.py build "$results" --require "${XFER_REQUIRE_COMPONENTS:-}" || status=1
exit $status
