#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu_run.sh (or on a fresh machine: it
# builds first): the OpenCL sweeps, the vadd application, the allocator study,
# the CPU-side study and the pool benchmark. Everything goes into one archive,
# $OUT/studies.tgz (the device tool returns at most 8 files), with a summary
# printed last and kept as $OUT/studies_summary.txt.
#   XFER_SKIP_OPENCL=1     leave out the OpenCL sweeps (run before)
#   XFER_APP_BACKENDS      backends of the vadd study (default cuda-rt,cuda-drv,opencl:nvidia,host)
#   XFER_STUDIES           which of: app alloc cpu bench (default all)
#
#   scripts/gpu_studies.sh [BUILD_DIR]     (default build-gpu; run from the repository root)
set -uo pipefail
BUILD=${1:-build-gpu}
XB=$BUILD/apps/xferbench/xferbench
OUT=${OUT:-$PWD/results/gpu}
W=$(mktemp -d)
mkdir -p "$OUT"
start=$SECONDS
log() { echo "[gpu_studies +$((SECONDS - start))s] $*"; }

if [ ! -x "$XB" ]; then
  log "building $BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXFER_ENABLE_CUDA=ON -DXFER_ENABLE_OPENCL=AUTO \
    >"$W/build.log" 2>&1 && cmake --build "$BUILD" -j"$(nproc)" >>"$W/build.log" 2>&1 || {
    tail -30 "$W/build.log"
    exit 1
  }
fi
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$BUILD/pocl-cache}
mkdir -p "$POCL_CACHE_DIR"

want() { [[ " ${XFER_STUDIES:-app alloc cpu bench} " == *" $1 "* ]]; }

run() {  # name timeout command...: stdout+stderr to $W/name.txt, the command to $W/name.command
  local name=$1 limit=$2
  shift 2
  echo "$*" >"$W/$name.command"
  log "$name: $*"
  timeout -s INT "$limit" "$@" >"$W/$name.txt" 2>&1
  echo "exit $?" >>"$W/$name.command"
}

if [ "${XFER_SKIP_OPENCL:-0}" != 1 ]; then
  OUT=$W timeout 240 scripts/gpu_opencl.sh "$BUILD" >"$W/gpu_opencl.txt" 2>&1
fi
APP_BACKENDS=${XFER_APP_BACKENDS:-cuda-rt,cuda-drv,opencl:nvidia,host}
want app && run app 150 "$XB" app vadd -b "$APP_BACKENDS" --sizes 64K,1M,4M,16M,24M --repeat 3 --json "$W/app.json"
want alloc && run alloc 120 "$XB" alloc --sizes 4K,1M,16M,256M --runs 10 --repeat 3 --json "$W/alloc.json"
want cpu && run cpu 120 "$XB" cpu --threads 1,4 --sizes 4K,1M,32M,256M --runs 10 --json "$W/cpu.json"
if want bench && [ -x "$BUILD/bench/xfer_bench_pool" ]; then
  run bench_pool 60 "$BUILD/bench/xfer_bench_pool" --benchmark_out="$W/bench_pool.json" --benchmark_out_format=json
fi
tar czf "$OUT/studies.tgz" -C "$W" .
{
  echo "== gpu_studies: $((SECONDS - start)) s; files: $(cd "$W" && ls | tr '\n' ' ')"
  for f in app alloc cpu bench_pool; do [ -f "$W/$f.command" ] && echo "$f: $(tail -1 "$W/$f.command")"; done
  [ -f "$W/gpu_opencl.txt" ] && tail -25 "$W/gpu_opencl.txt"
  echo "== app (last table) =="; tail -22 "$W/app.txt"
  echo "== cpu =="; tail -12 "$W/cpu.txt"
  echo "== alloc (spread) =="; tail -14 "$W/alloc.txt"
  echo "== bench =="; tail -6 "$W/bench_pool.txt" 2>/dev/null
} | tee "$OUT/studies_summary.txt"
