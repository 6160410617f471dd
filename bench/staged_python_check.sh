#!/usr/bin/env bash
# The measurements issues 15 and 16 still owe, in one device command after a
# build (scripts/build.sh: Release, the Python module included):
#   1. the Python package's GPU tests (pytest, torch);
#   2. issue 16's targets against torch (python/benchmarks/targets.py);
#   3. the calibration from an empty cache and the staged copy against the
#      plain API with interleaved samples (the handoff's 10% margin);
#   4. the pinning probe (first-time pin rates, by method).
# Everything lands in $OUT (default results/staged-python-check).
#
#   bench/staged_python_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/results/staged-python-check}
mkdir -p "$OUT"
step() { echo "== $* ($(date +%T))"; }

step build
tools=$(scripts/build.sh 2>"$OUT/build.log") || { tail -30 "$OUT/build.log"; exit 1; }
python_bin=$(sed -n 2p <<<"$tools")
export PYTHONPATH="$PWD/python:$PWD/build/python"

step "Python GPU tests"
"$python_bin" -m pytest -q -rfE python/tests/test_py_gpu.py python/tests/test_py_copy.py python/tests/test_py_pool.py \
  2>&1 | tee "$OUT/pytest.log" | tail -15

step "issue 16's targets"
XFER_STAGED_TUNING_CACHE="$OUT/cal.cache" "$python_bin" python/benchmarks/targets.py -o "$OUT/python-targets.json" \
  2>&1 | tee "$OUT/python-targets.txt" | tail -25

step "calibration and interleaved comparison, runtime"
XFER_STAGED_TUNING_CACHE="$OUT/cal.cache" build/bench/xfer_bench_staged_vs_plain --step runtime \
  --seconds "${SVP_SECONDS:-0.1}" --json "$OUT/staged-vs-plain-runtime.json" 2>&1 | tee "$OUT/staged-vs-plain-runtime.txt" | tail -30

if [ "${PIN_PROBE:-1}" = 1 ]; then
  step "pinning probe"
  build/bench/xfer_bench_pin_probe 2>&1 | tee "$OUT/pin-probe.txt" | tail -25
fi
[ -f "$OUT/staged-vs-plain-runtime.json" ] && gzip -f "$OUT/staged-vs-plain-runtime.json"
step done
