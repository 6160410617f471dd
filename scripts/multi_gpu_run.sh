#!/usr/bin/env bash
# On a GPU machine (one GPU or several): build xferbench, then every GPU
# alone and all GPUs at once, the peer matrix and fleet mode with one rank
# per GPU, writing everything under $OUT (issue 21; docs/fleet.md). Run from
# the repository root; one device command of under 10 minutes, build included,
# on up to 8 GPUs.
#
#   OUT=/some/dir scripts/multi_gpu_run.sh [--skip-build]
#
#   XFER_BACKEND   the CUDA backend (default cuda-rt)
#   XFER_SIZES     the at-once sweep's sizes (default 64M,256M)
#   XFER_ROUTES / XFER_MEMORY  the at-once sweep's routes (copy-async,staged) and host memory (pinned,pageable)
#   XFER_FLEET_SIZE            fleet mode's --size (default 256M)
#   XFER_HOST_DEVICES          --host-devices for a try on the host backend (XFER_BACKEND=host)
#   XFER_NO_MPI=1              fleet as one process per rank with --out-dir even where mpirun is
#   XFER_GPU_TESTS=0           skip building and running the GPU tests of these modes at the end
#   XFER_PEER_SIZE the peer matrix's copy size (default 256M)
#   XFER_BUNDLE=1  pack $OUT into multi-gpu.tar.gz (beside steps.txt) at the end
#
# Writes: build.log, info.txt, info.json, list.txt, topo.txt (nvidia-smi topo -m where present),
# together.json/.csv/.log (each GPU alone, then all at once: pinned, pageable, staged; h2d, d2h, bidir),
# peer.json/.log (the matrix), fleet-1.json/.log (one rank), fleet.json/.log (one rank per GPU; over MPI
# where mpirun is found, else one process per rank with --out-dir fleet-ranks/ merged by
# xferbench-report fleet), gpu-tests.log, steps.txt (each step's exit code and seconds).
# Exit status: 0 when every step exited 0, else 1 (steps.txt says which; fleet's 3 = an outlier).
set -uo pipefail

skip_build=${XFER_SKIP_BUILD:-0}
for arg in "$@"; do
  case $arg in
    --skip-build) skip_build=1 ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d'; exit 0 ;;
    *) echo "multi_gpu_run.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

OUT=${OUT:-$PWD/results/multi-gpu}
mkdir -p "$OUT"
BUILD=build-gpu
XB=$PWD/$BUILD/apps/xferbench/xferbench
B=${XFER_BACKEND:-cuda-rt}
FS=${XFER_FLEET_SIZE:-256M}
HD=()
[ -n "${XFER_HOST_DEVICES:-}" ] && HD=(--host-devices "$XFER_HOST_DEVICES")
jobs=$(nproc 2>/dev/null || echo 4)
start=$SECONDS
failed=0
log() { echo "[multi_gpu_run +$((SECONDS - start))s] $*"; }
# step NAME LIMIT_S COMMAND...: runs it with a time limit, output to $OUT/NAME.log, and records the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  log "$name: $*"
  timeout --signal=INT --kill-after=20 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - t0)) :: $*" >>"$OUT/steps.txt"
  [ $rc -eq 0 ] || failed=1
  tail -n 4 "$OUT/$name.log"
  return $rc
}
: >"$OUT/steps.txt"

if [ "$skip_build" != 1 ]; then
  log "configure + build xferbench ($jobs jobs) -> $OUT/build.log"
  # The same configuration as gpu_run.sh (so the two share build-gpu without reconfiguring), one target.
  if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXFER_ENABLE_CUDA=ON \
           -DXFER_ENABLE_OPENCL="${XFER_OPENCL:-AUTO}" && cmake --build "$BUILD" -j"$jobs" --target xferbench; } >"$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    log "build failed"
    exit 1
  fi
  grep -E "fleet over MPI|backends:" "$OUT/build.log" | head -2
fi
[ -x "$XB" ] || { log "no $XB: build first"; exit 1; }

# ---- 1. what the machine is: every GPU, its link, ceiling and NUMA node; how the GPUs connect ----
"$XB" info >"$OUT/info.txt" 2>&1
"$XB" info --json >"$OUT/info.json" 2>&1
"$XB" list >"$OUT/list.txt" 2>&1
if command -v nvidia-smi >/dev/null; then
  { nvidia-smi -L; echo; nvidia-smi topo -m; echo; nvidia-smi topo -p2p r; } >"$OUT/topo.txt" 2>&1
fi
ngpu=$("$XB" list "${HD[@]}" 2>/dev/null | awk -v b="$B:" '$1 == b {on = 1; next} /^[^ ]/ {on = 0} on && /^    [0-9]+: /' | wc -l)
log "$B has $ngpu device(s)"
[ "$ngpu" -ge 1 ] || { log "no device on $B: see $OUT/list.txt"; exit 1; }

# ---- 2. every GPU alone, then all at once: pinned and pageable (copy-async), staged; each direction and both ----
step together 240 "$XB" sweep -b "$B" "${HD[@]}" -r "${XFER_ROUTES:-copy-async,staged}" -m "${XFER_MEMORY:-pinned,pageable}" \
  -d h2d,d2h,bidir --sizes "${XFER_SIZES:-64M,256M}" --together --json "$OUT/together.json" --csv "$OUT/together.csv" -q

# ---- 3. the peer matrix ----
step peer 150 "$XB" peer -b "$B" "${HD[@]}" --sizes "${XFER_PEER_SIZE:-256M}" --json "$OUT/peer.json" -q

# ---- 4. fleet mode: one rank (the single-GPU gate), then one rank per GPU, with the outlier report ----
step fleet-1 120 "$XB" fleet -b "$B" "${HD[@]}" --size "$FS" --json "$OUT/fleet-1.json" --rank-timeout 100
if [ -z "${XFER_NO_MPI:-}" ] && command -v mpirun >/dev/null && "$XB" fleet --help | grep -q "MPI transport: built in"; then
  # As root Open MPI wants both variables; --bind-to none: xferbench binds each rank near its GPU itself.
  step fleet 200 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --oversubscribe --bind-to none -np "$ngpu" "$XB" fleet -b "$B" "${HD[@]}" --size "$FS" --json "$OUT/fleet.json" --rank-timeout 120
else
  # No MPI here: one process per rank with the launcher's variables, one file each, merged by the report tool.
  log "no MPI: fleet as $ngpu processes writing $OUT/fleet-ranks/, merged by xferbench-report fleet"
  rm -rf "$OUT/fleet-ranks"
  t0=$SECONDS
  pids=()
  for r in $(seq 0 $((ngpu - 1))); do
    RANK=$r WORLD_SIZE=$ngpu LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ngpu timeout 200 \
      "$XB" fleet -b "$B" "${HD[@]}" --size "$FS" --out-dir "$OUT/fleet-ranks" >"$OUT/fleet-rank-$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  echo "fleet-ranks seconds=$((SECONDS - t0)) :: $ngpu processes, --out-dir" >>"$OUT/steps.txt"
  step fleet 60 env PYTHONPATH="$PWD/python" python3 -m xferbench_report fleet "$OUT/fleet-ranks" -o "$OUT/fleet.json"
fi

# ---- 5. the GPU tests of these modes (tests/cuda/multi_device_test.cpp), while time is left ----
if [ "${XFER_GPU_TESTS:-1}" = 1 ] && [ "$skip_build" != 1 ] && [ $((SECONDS - start)) -lt 330 ]; then
  step gpu-tests 150 bash -c "cmake --build '$BUILD' -j$jobs --target xfer_cuda_tests &&
    '$BUILD/tests/cuda/xfer_cuda_tests' --gtest_filter='CudaTogether*:CudaPeer*'"
fi

log "done in $((SECONDS - start)) s; steps:"
cat "$OUT/steps.txt"
# XFER_BUNDLE=1: everything in one archive beside steps.txt (the device tool
# brings back only a few files from a command).
if [ "${XFER_BUNDLE:-0}" = 1 ]; then
  bundle=$(mktemp -d)/multi-gpu.tar.gz
  tar -czf "$bundle" -C "$OUT" . && find "$OUT" -mindepth 1 ! -name steps.txt -delete && mv "$bundle" "$OUT/"
fi
exit $failed
