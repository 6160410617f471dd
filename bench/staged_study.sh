#!/usr/bin/env bash
# The staged copier's study on a CUDA machine (issue 15), in one command:
#   1. a Release build of xferbench, the CUDA staged tests and the probes;
#   2. the staged tests on the GPU (the pipeline must be right before it is timed);
#   3. the staged route against copy-async from pinned memory, 64 MiB to 1 GiB,
#      for each chunk/ring/threads setting in SETTINGS (the calibration off);
#   4. the calibration from an empty cache, its time, and the staged copy
#      against the plain API with interleaved samples, 1 B to 1 GiB, both APIs;
#   5. the pinning probe.
# Everything lands in $OUT (default results/staged-study), bundled as
# staged-study.tar.gz beside the console log.
#
#   SETTINGS="8M/4/8 4M/8/8" bench/staged_study.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/staged-study}
work=$(mktemp -d)
mkdir -p "$OUT"
SETTINGS=${SETTINGS:-"8M/4/4 8M/4/8 4M/4/8 4M/8/8 2M/8/8 8M/8/12 16M/4/8"}
jobs=$(nproc)

step() { echo "== $* ($(date +%T))"; }
size() { python3 -c "import sys; s=sys.argv[1]; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(s[:-1])*m[s[-1]] if s[-1] in m else int(s))" "$1"; }

step build
cmake -S . -B build-study -DCMAKE_BUILD_TYPE=Release -DXFER_BUILD_TESTS=ON >"$work/configure.log" 2>&1 &&
  cmake --build build-study -j "$jobs" --target xferbench xfer_cuda_staged_tests xfer_bench_staged_vs_plain \
    xfer_bench_pin_probe >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }

step "staged tests on the GPU"
XFER_STAGED_TUNING_CACHE=off build-study/tests/cuda/xfer_cuda_staged_tests 2>&1 | tee "$work/staged-tests.log" |
  grep -E "^\[  (PASSED|FAILED)|calibration \(" || true

bench=build-study/apps/xferbench/xferbench
for s in $SETTINGS; do
  IFS=/ read -r chunk ring threads <<<"$s"
  name="tune-$chunk-$ring-$threads"
  step "$name"
  XFER_STAGED_TUNING_CACHE=off XFER_STAGED_CHUNK_BYTES=$(size "$chunk") XFER_STAGED_RING_DEPTH=$ring \
    XFER_STAGED_THREADS=$threads "$bench" sweep -b cuda-rt -r staged,copy-async -m pageable,pinned -d h2d,d2h \
    --sizes 64M,256M,1G --max-time 0.3 -q --json "$work/$name.json" >"$work/$name.txt" 2>&1
  grep -E "staged|copy-async" "$work/$name.txt" | grep -v "^#" | head -8
done

for api in runtime driver; do
  step "calibration and interleaved comparison, $api"
  XFER_STAGED_TUNING_CACHE="$work/cal.cache" build-study/bench/xfer_bench_staged_vs_plain --step "$api" \
    --json "$work/staged-vs-plain-$api.json" 2>&1 | tee "$work/staged-vs-plain-$api.txt"
done

step "the calibrated tuning in a sweep"
XFER_STAGED_TUNING_CACHE="$work/cal.cache" "$bench" sweep -b cuda-rt,cuda-drv -r copy-sync,staged,copy-async \
  -m pageable,pinned -d h2d,d2h --sizes 64M,256M,1G --max-time 0.3 -q --json "$work/calibrated.json" \
  >"$work/calibrated.txt" 2>&1
cat "$work/calibrated.txt"

step "pinning probe"
build-study/bench/xfer_bench_pin_probe 2>&1 | tee "$work/pin-probe.txt"

cp "$work/cal.cache" "$work/cal.cache.txt" 2>/dev/null
tar -C "$work" -czf "$OUT/staged-study.tar.gz" . && echo "wrote $OUT/staged-study.tar.gz"
