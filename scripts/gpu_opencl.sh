#!/usr/bin/env bash
# On the GPU machine, after a build (scripts/gpu_run.sh builds build-gpu with
# OpenCL=AUTO): the OpenCL sweep on NVIDIA's platform, beside the CUDA one.
# Uses the machine's OpenCL set-up as it is (OCL_ICD_FILENAMES stays as preset).
#
#   scripts/gpu_opencl.sh [BUILD_DIR]        (default build-gpu; run from the repository root)
#
#   XFER_PLATFORM  backend to run (default opencl:nvidia)
#   XFER_SIZES     sizes (default: 1 B to 1 GiB in powers of four, as gpu_run.sh uses for CUDA)
#   XFER_ROUTE_SIZES  sizes of the second sweep (default 4,4K,1M,64M,1G)
#   XFER_MAX_TIME / XFER_WARMUP / XFER_TARGET_CI   per-point budget
#
# Two sweeps, so the comparison with CUDA lands first even if the second runs long:
#   1. copy-async and copy-sync, h2d/d2h/bidir/rw, pageable/alloc-host-ptr/use-host-ptr
#        -> $OUT/opencl.json, $OUT/opencl.csv            (the OpenCL-vs-CUDA comparison)
#   2. map, kernel-host, kernel-device and d2d copies
#        -> $OUT/opencl_routes.json, $OUT/opencl_routes.csv
# Also writes opencl_list.txt, opencl.log, opencl_routes.log, *_command.txt, opencl_summary.txt.
# Budget: about 3 minutes on a one-GPU machine with the defaults.
set -uo pipefail

BUILD=${1:-build-gpu}
XB=$BUILD/apps/xferbench/xferbench
OUT=${OUT:-$PWD/results/gpu}
PLATFORM=${XFER_PLATFORM:-opencl:nvidia}
sizes=${XFER_SIZES:-1,4,16,64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M,256M,1G}
max_time=${XFER_MAX_TIME:-0.02}
warmup=${XFER_WARMUP:-0.002}
target_ci=${XFER_TARGET_CI:-0.01}
mkdir -p "$OUT"
start=$SECONDS
log() { echo "[gpu_opencl +$((SECONDS - start))s] $*"; }

if [ ! -x "$XB" ]; then
  echo "gpu_opencl.sh: no $XB: build first (scripts/gpu_run.sh, or cmake -DXFER_ENABLE_OPENCL=ON)" >&2
  exit 1
fi
# PoCL (platform 0 there) compiles into a cache; keep it out of $HOME.
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$BUILD/pocl-cache}
mkdir -p "$POCL_CACHE_DIR"

log "OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES:-<unset>}"
"$XB" list >"$OUT/opencl_list.txt" 2>&1
sed -n '/^opencl/,/^$/p' "$OUT/opencl_list.txt" | grep -vE '^    (pageable|aligned|huge|copy|map|kernel)' | head -60
if ! grep -q "^$PLATFORM: " "$OUT/opencl_list.txt"; then
  echo "gpu_opencl.sh: $PLATFORM is not available here; xferbench list says:" >&2
  grep -E "^opencl" "$OUT/opencl_list.txt" >&2
  exit 1
fi

common=(--max-time "$max_time" --warmup "$warmup" --target-ci "$target_ci" -q)

run_sweep() {  # name timeout-seconds xferbench-sweep-args...
  local name=$1 limit=$2
  shift 2
  local cmd=("$XB" sweep -b "$PLATFORM" "$@" "${common[@]}" --json "$OUT/$name.json" --csv "$OUT/$name.csv")
  log "sweep: ${cmd[*]}"
  echo "${cmd[*]}" >"$OUT/${name}_command.txt"
  local t0=$SECONDS
  # SIGINT at the limit: xferbench stops between points and still writes what it completed.
  timeout -s INT -k 20 "$limit" "${cmd[@]}" >"$OUT/${name}.log" 2>&1
  local rc=$?
  case $rc in
    0) log "$name: ok in $((SECONDS - t0))s" ;;
    1) log "$name: finished in $((SECONDS - t0))s, some points failed (exit 1)" ;;
    124 | 130) log "$name: stopped at the ${limit}s limit; $name.json holds the points completed (fewer XFER_SIZES?)" ;;
    *) log "$name: exit $rc"; tail -5 "$OUT/${name}.log" ;;
  esac
  tail -1 "$OUT/${name}.log"
}

run_sweep opencl 150 -r copy-async,copy-sync -d h2d,d2h,bidir,rw -m pageable,alloc-host-ptr,use-host-ptr --sizes "$sizes"
# The other routes at a few sizes, SVM through copy-async too.
run_sweep opencl_routes 100 -r map,kernel-host,kernel-device,copy-async -d h2d,d2h,bidir,d2d \
  -m alloc-host-ptr,use-host-ptr,svm-coarse,svm-fine --sizes "${XFER_ROUTE_SIZES:-4,4K,1M,64M,1G}"

# ---- summary ----
python3 - "$OUT" <<'PY' | tee "$OUT/opencl_summary.txt"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f).get("results", [])
    except Exception as e:
        print(f"{name}: {e}")
        return []
def size(b):
    for unit, n in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= n and b % n == 0: return f"{b // n}{unit}"
    return f"{b}"
for name in ("opencl.json", "opencl_routes.json"):
    res = load(name)
    if not res: continue
    count = {}
    for r in res: count[r["status"]] = count.get(r["status"], 0) + 1
    print(f"{name}: {len(res)} points, " + ", ".join(f"{k} {v}" for k, v in sorted(count.items())))
    for r in [r for r in res if r["status"] == "failed"][:8]:
        print(f"  FAILED {r['route']} {r['direction']} {r['host_memory']} {size(r['bytes'])}: {r.get('reason','')[:160]}")
    skipped = {}
    for r in res:
        if r["status"] == "skipped": skipped.setdefault((r["route"], r["host_memory"], r["reason"][:100]), 0)
    for (route, kind, why) in list(skipped)[:8]:
        print(f"  skipped {route} {kind}: {why}")
    ok = [r for r in res if r["status"] == "ok"]
    combos = sorted({(r["route"], r["host_memory"], r["direction"]) for r in ok})
    print("  peak GB/s (at size) | 4 B median us (event) / wall us")
    for route, kind, d in combos:
        c = [r for r in ok if (r["route"], r["host_memory"], r["direction"]) == (route, kind, d)]
        p = max(c, key=lambda r: r["gbps"])
        small = [r for r in c if r["bytes"] == 4]
        s = f"{small[0]['median_s']*1e6:8.2f} / {small[0]['wall_stats']['median']*1e6:8.2f}" if small else ""
        print(f"  {route:14} {kind:15} {d:6} {p['gbps']:7.2f} @{size(p['bytes']):5} | {s}")
PY
log "done"
