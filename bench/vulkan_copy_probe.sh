#!/usr/bin/env bash
# On the GPU machine (issue 18): why Vulkan's copy trails CUDA's pinned
# copy-async. Runs the same copies under each queue choice and region split
# (the XFER_VK_COPY_QUEUES / XFER_VK_COPY_CHUNK knobs of the copy route) and
# each host-visible kind, with cuda-rt's copy-async on pinned memory in every
# sweep as the peer. Run from the repository root with .gl/ carried.
#
#   OUT=dir bench/vulkan_copy_probe.sh [BUILD_DIR]     (default build-vk)
#
#   XFER_PROBE_ROUND=2: the second round (one copy split over two queues; the CPU study)
#
# Writes probe-<variant>.json and .txt per variant, build.log, and probe.tar.gz of them all.
set -uo pipefail
BUILD=${1:-build-vk}
XB=$BUILD/apps/xferbench/xferbench
OUT=${OUT:-$PWD/results/vk-probe}
mkdir -p "$OUT"
start=$SECONDS
log() { echo "[vk-probe +$((SECONDS - start))s] $*"; }
. scripts/lib/vulkan_loader.sh  # the loader from .gl/, NVIDIA's ICD named
if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXFER_ENABLE_CUDA=ON -DXFER_ENABLE_VULKAN=ON \
         -DXFER_ENABLE_PYTHON=OFF -DXFER_BUILD_TESTS=OFF && cmake --build "$BUILD" -j"$(nproc)" --target xferbench; } >"$OUT/build.log" 2>&1; then
  tail -30 "$OUT/build.log"; exit 1
fi
log "built"
sizes=${XFER_VK_SIZES:-256M,1G}
common=(--sizes "$sizes" --max-time "${XFER_MAX_TIME:-0.3}" -q)
# variant NAME ENV... -- SWEEP-ARGS...
variant() {
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  log "$name: ${envs[*]} $*"
  env "${envs[@]}" timeout -s INT -k 10 "${XFER_VARIANT_S:-90}" "$XB" sweep "$@" "${common[@]}" \
    --json "$OUT/probe-$name.json" >"$OUT/probe-$name.txt" 2>&1
  grep -E "^  (copy|copy-async) " "$OUT/probe-$name.txt"
}
peer=(-b vulkan:nvidia,cuda-rt -r copy,copy-async)
if [ "${XFER_PROBE_ROUND:-1}" = 1 ]; then
variant kinds XFER_VK_COPY_QUEUES=transfer -- "${peer[@]}" -m host-coherent,host-cached,imported,pinned -d h2d,d2h,bidir
variant compute XFER_VK_COPY_QUEUES=compute -- "${peer[@]}" -m host-coherent,pinned -d h2d,d2h,bidir
variant mixed XFER_VK_COPY_QUEUES=mixed -- "${peer[@]}" -m host-coherent,pinned -d bidir
variant chunk16M XFER_VK_COPY_CHUNK=16777216 -- "${peer[@]}" -m host-coherent,pinned -d h2d,d2h
variant chunk2M XFER_VK_COPY_CHUNK=2097152 -- "${peer[@]}" -m host-coherent,pinned -d h2d,d2h
variant compute-chunk16M XFER_VK_COPY_QUEUES=compute XFER_VK_COPY_CHUNK=16777216 -- "${peer[@]}" -m host-coherent,pinned -d h2d,d2h
else
# Round 2: one direction's copy split over two queues; the CPU study with Vulkan's kinds.
variant split XFER_VK_COPY_SPLIT=1 -- "${peer[@]}" -m host-coherent,pinned -d h2d,d2h
variant split-mixed XFER_VK_COPY_SPLIT=1 XFER_VK_COPY_QUEUES=mixed -- "${peer[@]}" -m host-coherent,pinned -d h2d,d2h
# (Round 2 once also tried a dedicated allocation and exclusive sharing: no change; those knobs are gone.)
log "the CPU study with Vulkan's kinds"
timeout -s INT -k 10 150 "$XB" cpu --kinds pageable,pinned,pinned-wc,host-coherent,host-cached,device-local-host-visible \
  --sizes 4K,256K,4M --runs 3 --json "$OUT/probe-cpu.json" >"$OUT/probe-cpu.txt" 2>&1
echo "cpu study rc=$?"; tail -40 "$OUT/probe-cpu.txt"
fi
(cd "$OUT" && tar czf probe.tar.gz probe-*.json probe-*.txt build.log && rm -f probe-*.json)
log "done"
