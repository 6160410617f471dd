#!/usr/bin/env bash
# On the GPU machine: the Vulkan backend on NVIDIA's driver, from the loader
# carried in .gl/ to the comparison with CUDA. Run from the repository root,
# with .gl/ carried (Debian's libvulkan1, libvulkan-dev, glslc, libshaderc1;
# see the device README) and, for the comparison, CUDA in the same build.
#
#   scripts/gpu_vulkan.sh [BUILD_DIR]        (default build-gpu)
#
#   XFER_VK_SIZES     sizes of the copy comparison (default 256M,1G)
#   XFER_VK_ROUTE_SIZES  sizes of the other routes (default 8,64,4K,1M,64M)
#   XFER_MAX_TIME / XFER_TARGET_CI   per-point budget
#
# Writes (8 files): vk_build.log, vk_ctest.log, vk_list.txt, vk_vs_cuda.json
# (vulkan copy on host-coherent memory beside cuda-rt copy-async on pinned),
# vk_routes.json (kernel-host, cpu-store/-nt into the BAR, cpu-load/-nt),
# vk_bar.json (cpu-store(-nt)-latency's round trips and cpu-store(-nt) beside
# cuda-rt's pinned copies, small sizes: the report's "BAR store against
# CUDA's copy"), vk_cpu.json (the CPU study with Vulkan's kinds), vk_summary.txt.
# Budget: about 5 minutes on a one-GPU machine (most of it the build).
set -uo pipefail

BUILD=${1:-build-gpu}
XB=$BUILD/apps/xferbench/xferbench
OUT=${OUT:-$PWD/results/gpu}
mkdir -p "$OUT"
start=$SECONDS
log() { echo "[gpu_vulkan +$((SECONDS - start))s] $*"; }

# The loader and headers from .gl/ where carried, NVIDIA's ICD named where
# the loader would not look (scripts/lib/vulkan_loader.sh).
. scripts/lib/vulkan_loader.sh
export XFER_VULKAN_TEST_DEVICE=${XFER_VULKAN_TEST_DEVICE:-vulkan:nvidia}
log "VK_DRIVER_FILES=${VK_DRIVER_FILES:-<unset>}; loader: $(ldconfig -p | grep -c 'libvulkan.so.1') found"

log "configure + build -> $OUT/vk_build.log"
if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXFER_ENABLE_CUDA=ON -DXFER_ENABLE_VULKAN=ON \
         -DXFER_ENABLE_PYTHON=OFF &&
       cmake --build "$BUILD" -j"$(nproc)" --target xferbench xfer_vulkan_tests; } >"$OUT/vk_build.log" 2>&1; then
  tail -30 "$OUT/vk_build.log"
  log "build failed"
  exit 1
fi
grep -E 'xferbench (backends|Vulkan)' "$OUT/vk_build.log"

"$XB" list >"$OUT/vk_list.txt" 2>&1
sed -n '/^vulkan/,/^  routes:/p' "$OUT/vk_list.txt" | head -40
if ! grep -q '^vulkan:nvidia: ' "$OUT/vk_list.txt"; then
  echo "gpu_vulkan.sh: vulkan:nvidia is not available here; xferbench list says:" >&2
  grep -E '^vulkan' "$OUT/vk_list.txt" >&2
  exit 1
fi

log "ctest -L vulkan on $XFER_VULKAN_TEST_DEVICE -> $OUT/vk_ctest.log"
(cd "$BUILD" && ctest -L vulkan --output-on-failure --timeout 300) >"$OUT/vk_ctest.log" 2>&1
test_rc=$?
grep -E 'tests passed|FAILED|Failed' "$OUT/vk_ctest.log" | head -12

common=(--max-time "${XFER_MAX_TIME:-0.1}" --target-ci "${XFER_TARGET_CI:-0.01}" -q)
log "vulkan copy vs cuda-rt copy-async"
timeout -s INT -k 20 200 "$XB" sweep -b vulkan:nvidia,cuda-rt -r copy,copy-async -m host-coherent,pinned -d h2d,d2h,bidir \
  --sizes "${XFER_VK_SIZES:-256M,1G}" "${common[@]}" --json "$OUT/vk_vs_cuda.json" | tail -12
log "the other routes"
timeout -s INT -k 20 200 "$XB" sweep -b vulkan:nvidia -r kernel-host,cpu-store,cpu-store-nt,cpu-load,cpu-load-nt,copy \
  -m host-coherent,host-cached,imported,device-local-host-visible,pageable -d h2d,d2h \
  --sizes "${XFER_VK_ROUTE_SIZES:-8,64,4K,1M,64M}" --max-time 0.02 --target-ci 0.02 -q --json "$OUT/vk_routes.json" | tail -24
log "BAR stores (round trip to a device reader, and bandwidth) against cuda-rt's copies"
timeout -s INT -k 20 200 "$XB" sweep -b vulkan:nvidia,cuda-rt \
  -r cpu-store-latency,cpu-store-nt-latency,cpu-store,cpu-store-nt,copy-sync,copy-async \
  -m device-local-host-visible,pinned -d h2d --sizes "${XFER_VK_BAR_SIZES:-4,8,64,4K,64K,1M}" \
  --max-time 0.1 --target-ci 0.02 -q --json "$OUT/vk_bar.json" | tail -16
# Up to 4 MiB: reads from the BAR are uncached (a few hundredths of a GB/s),
# so 32 MiB ran the study past its bound.
log "the CPU study with Vulkan's kinds"
timeout -s INT -k 20 120 "$XB" cpu --kinds pageable,pinned,pinned-wc,host-coherent,host-cached,device-local-host-visible \
  --sizes 4K,256K,4M --runs 3 -q --json "$OUT/vk_cpu.json" | tail -40

python3 - "$OUT" <<'PY' | tee "$OUT/vk_summary.txt"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name))).get("results", [])
    except Exception as e:
        print(f"{name}: {e}")
        return []
res = load("vk_vs_cuda.json")
print("vulkan copy (host-coherent) against cuda-rt copy-async (pinned), GB/s by device events:")
for d in ("h2d", "d2h", "bidir"):
    for b in sorted({r["bytes"] for r in res}):
        vk = [r for r in res if r["backend"] == "vulkan:nvidia" and r["route"] == "copy" and r["direction"] == d
              and r["bytes"] == b and r["host_memory"] == "host-coherent" and r["status"] == "ok"]
        cu = [r for r in res if r["backend"] == "cuda-rt" and r["route"] == "copy-async" and r["direction"] == d
              and r["bytes"] == b and r["host_memory"] == "pinned" and r["status"] == "ok"]
        if vk and cu:
            v, c = vk[0]["gbps"], cu[0]["gbps"]
            print(f"  {d:5} {b >> 20:5} MiB  vulkan {v:6.2f}  cuda {c:6.2f}  ratio {v / c:5.3f}")
for name in ("vk_vs_cuda.json", "vk_routes.json", "vk_bar.json"):
    rs = load(name)
    count = {}
    for r in rs: count[r["status"]] = count.get(r["status"], 0) + 1
    print(f"{name}: {len(rs)} points: " + ", ".join(f"{k} {v}" for k, v in sorted(count.items())))
    for r in [r for r in rs if r["status"] == "failed"][:8]:
        print(f"  FAILED {r['backend']} {r['route']} {r['direction']} {r['host_memory']} {r['bytes']} B: {r.get('reason', '')[:160]}")
rs = [r for r in load("vk_routes.json") if r["status"] == "ok" and r["route"].startswith("cpu-") and r["bytes"] <= 64]
for r in rs:
    print(f"  {r['route']:13} {r['direction']} {r['bytes']:3} B: {r['median_s'] * 1e6:.3f} us a repetition (wall)")
print("BAR store round trips (store made visible to a device reader + its answer) and cuda-rt copies, us (wall):")
for r in load("vk_bar.json"):
    if r["status"] == "ok" and r["bytes"] <= 64:
        wall = (r.get("wall_stats") or {}).get("median") or r["median_s"]
        print(f"  {r['backend']:13} {r['route']:20} {r['host_memory']:25} {r['bytes']:3} B: {wall * 1e6:.3f}")
PY
log "done"
[ "$test_rc" = 0 ]
