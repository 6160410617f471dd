#!/usr/bin/env bash
# On the GPU machine: build xferbench with CUDA, run every test (the "gpu"
# labelled ones included) and capture the default CUDA sweep, writing
# everything under $OUT. Run from the repository root.
#
#   scripts/gpu_run.sh [--skip-build] [--quick]
#
#   --skip-build  (or XFER_SKIP_BUILD=1)  reuse build-gpu, skip configure, build and tests (a rerun)
#   --quick       (or XFER_QUICK=1)       a sweep of a few sizes only: checks the whole path in seconds
#   XFER_SIZES    override the sweep's sizes (e.g. 1,4K,1M,256M,1G)
#   XFER_MAX_TIME / XFER_WARMUP / XFER_TARGET_CI   override the per-point budget
#   XFER_OPENCL   AUTO (default) | ON | OFF: the OpenCL backend in the same build
#   XFER_TARGETS  build only these targets (default: all), e.g. "xferbench xfer_cuda_tests xfer_cuda_probe_tests"
#   XFER_TESTS    all (default) | gpu (only the tests labelled gpu)
#
# Writes (8 files): build.log, ctest.log, info.json, list.txt, cuda.json, cuda.csv, sweep.log, summary.txt
# Exit status: 0 when the build, the tests and every sweep point are fine, else 1.
set -uo pipefail

skip_build=${XFER_SKIP_BUILD:-0}
quick=${XFER_QUICK:-0}
for arg in "$@"; do
  case $arg in
    --skip-build) skip_build=1 ;;
    --quick) quick=1 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "gpu_run.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

OUT=${OUT:-$PWD/results/gpu}
mkdir -p "$OUT"
BUILD=build-gpu
XB=$BUILD/apps/xferbench/xferbench
jobs=$(nproc 2>/dev/null || echo 4)
start=$SECONDS
log() { echo "[gpu_run +$((SECONDS - start))s] $*"; }

status_build=skipped status_tests=skipped status_sweep=not-run

if [ "$skip_build" != 1 ]; then
  log "configure + build ($jobs jobs) -> $OUT/build.log"
  targets=()
  for t in ${XFER_TARGETS:-}; do targets+=(--target "$t"); done
  if cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXFER_ENABLE_CUDA=ON \
      -DXFER_ENABLE_OPENCL="${XFER_OPENCL:-AUTO}" >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j"$jobs" "${targets[@]}" >>"$OUT/build.log" 2>&1; then
    status_build=ok
  else
    status_build=FAILED
    tail -40 "$OUT/build.log"
    log "build failed; nothing else to run"
    exit 1
  fi

  # GPU tests one at a time (several processes spinning gates on one GPU
  # would time-slice it); the others in parallel.
  log "tests -> $OUT/ctest.log"
  {
    rc_cpu=0
    if [ "${XFER_TESTS:-all}" != gpu ]; then
      echo "== ctest -LE gpu (no GPU needed) =="
      (cd "$BUILD" && timeout 600 ctest -LE gpu -j"$jobs" --output-on-failure --timeout 300)
      rc_cpu=$?
    fi
    echo "== ctest -L gpu =="
    (cd "$BUILD" && timeout 600 ctest -L gpu --output-on-failure --timeout 300)
    rc_gpu=$?
    echo "== exit codes: non-gpu $rc_cpu, gpu $rc_gpu =="
  } >"$OUT/ctest.log" 2>&1
  grep -E "tests passed|tests failed|exit codes|Skipped|\*\*\*Failed|Timeout" "$OUT/ctest.log" | tail -25
  if grep -q "exit codes: non-gpu 0, gpu 0" "$OUT/ctest.log"; then status_tests=ok; else status_tests=FAILED; fi
fi

if [ ! -x "$XB" ]; then
  log "no $XB: build first (without --skip-build)"
  exit 1
fi

"$XB" info --json >"$OUT/info.json" 2>&1 || true
"$XB" list >"$OUT/list.txt" 2>&1 || true

# The default CUDA sweep: 1 B to 1 GiB (powers of four, so the large sizes,
# where allocation, pinning and verification dominate, stay affordable), every
# host kind, every route and direction, both APIs: about 4700 points. The
# per-point budget keeps it near four minutes on a one-GPU machine (1 GiB
# points, bound by pinning, first touch and verifying a GiB, take most of
# that: drop 1G from XFER_SIZES for a faster run).
if [ "$quick" = 1 ]; then
  sizes=${XFER_SIZES:-4,64K,16M}
  max_time=${XFER_MAX_TIME:-0.01}
else
  sizes=${XFER_SIZES:-1,4,16,64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M,256M,1G}
  max_time=${XFER_MAX_TIME:-0.02}
fi
warmup=${XFER_WARMUP:-0.002}
target_ci=${XFER_TARGET_CI:-0.01}
cmd=("$XB" sweep -b cuda-rt,cuda-drv --sizes "$sizes" --max-time "$max_time" --warmup "$warmup"
  --target-ci "$target_ci" --json "$OUT/cuda.json" --csv "$OUT/cuda.csv" -q)
log "sweep: ${cmd[*]}"
sweep_t0=$SECONDS
# Each line of the console table is stamped with the time it appeared, so
# the log shows where the sweep's time goes.
timeout 540 stdbuf -oL "${cmd[@]}" 2>&1 | while IFS= read -r line; do printf '%s %s\n' "${EPOCHREALTIME:-0}" "$line"; done >"$OUT/sweep.log"
rc=${PIPESTATUS[0]}
sweep_s=$((SECONDS - sweep_t0))
case $rc in
  0) status_sweep=ok ;;
  1) status_sweep="exit 1: a point failed or a backend is unavailable (see sweep.log)" ;;
  124) status_sweep="TIMED OUT after ${sweep_s}s" ;;
  *) status_sweep="exit $rc" ;;
esac

# ---- summary (last thing printed) ----
python3 - "$OUT" "$sweep_s" "$status_build" "$status_tests" "$status_sweep" "${cmd[*]}" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out, sweep_s, s_build, s_tests, s_sweep, command = sys.argv[1:7]
print(f"== gpu_run summary: build {s_build}, tests {s_tests}, sweep {s_sweep} in {sweep_s}s ==")
print(f"command: {command}")
try:
    with open(os.path.join(out, "cuda.json")) as f:
        doc = json.load(f)
except Exception as e:
    print(f"no result file: {e}")
    sys.exit(0)
res = doc.get("results", [])
sysinfo = doc.get("system", {})
for acc in sysinfo.get("accelerators", []):
    cur, mx = acc.get("link_current") or {}, acc.get("link_max") or {}
    print(f"link {acc.get('pci_address')}: Gen{cur.get('gen')} x{cur.get('width')} (max Gen{mx.get('gen')} x{mx.get('width')}), "
          f"{acc.get('link_gbps_per_direction') or 0:.1f} GB/s per direction")
for b, v in sorted(sysinfo.get("backend_versions", {}).items()):
    print(f"{b}: " + ", ".join(f"{k} {x}" for k, x in sorted(v.items())))
count = {}
for r in res:
    count[r["status"]] = count.get(r["status"], 0) + 1
nc = sum(1 for r in res if r["status"] == "ok" and not r.get("converged", True))
print(f"points: {len(res)} " + " ".join(f"{k} {v}" for k, v in sorted(count.items())) + f"; ok but not converged {nc}")
fails = [r for r in res if r["status"] == "failed"]
for r in fails[:8]:
    print(f"  FAILED {r['backend']} {r['route']} {r['direction']} {r['host_memory']} {r['bytes']} B: {r.get('reason','')[:160]}")
ok = [r for r in res if r["status"] == "ok"]
def peak(backend, route, kind, direction):
    c = [r for r in ok if r["backend"] == backend and r["route"] == route and r["host_memory"] == kind and r["direction"] == direction]
    if not c: return None
    return max(c, key=lambda r: r["gbps"])
def size(b):
    for unit, n in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= n and b % n == 0: return f"{b // n}{unit}"
    return f"{b}"
print("peak GB/s (at size), copy-async:")
for backend in ("cuda-rt", "cuda-drv"):
    for kind in ("pinned", "pinned-wc", "registered", "mapped", "managed", "pageable", "pageable-unaligned", "huge"):
        cells = []
        for d in ("h2d", "d2h", "bidir", "rw"):
            p = peak(backend, "copy-async", kind, d)
            cells.append(f"{d} {p['gbps']:6.2f} @{size(p['bytes'])}" if p else f"{d}   --")
        print(f"  {backend:8} {kind:18} " + "  ".join(cells))
print("other routes, peak GB/s:")
for backend in ("cuda-rt", "cuda-drv"):
    cells = []
    for route, kind, d in (("copy-sync", "pinned", "h2d"), ("copy-async", "none", "d2d"), ("kernel-device", "none", "d2d"),
                           ("kernel-device-read", "none", "d2d"), ("kernel-device-write", "none", "d2d"),
                           ("kernel-host", "mapped", "h2d"), ("kernel-host", "mapped", "d2h")):
        p = peak(backend, route, kind, d)
        if p: cells.append(f"{route}/{kind}/{d} {p['gbps']:.1f}")
    print(f"  {backend:8} " + "; ".join(cells))
print("4-byte copy-async pinned h2d (event vs wall per copy), and latency route at 4 B:")
for backend in ("cuda-rt", "cuda-drv"):
    c = [r for r in ok if r["backend"] == backend and r["route"] == "copy-async" and r["host_memory"] == "pinned" and r["direction"] == "h2d" and r["bytes"] == 4]
    l = [r for r in ok if r["backend"] == backend and r["route"] == "latency" and r["bytes"] == 4]
    s = [r for r in ok if r["backend"] == backend and r["route"] == "copy-sync" and r["host_memory"] == "pinned" and r["direction"] == "h2d" and r["bytes"] == 4]
    line = f"  {backend:8}"
    if c: line += f" async event {c[0]['median_s']*1e6:.2f} us, wall {c[0]['wall_stats']['median']*1e6:.2f} us;"
    if s: line += f" sync {s[0]['median_s']*1e6:.2f} us;"
    if l: line += f" chase {l[0]['latency_us']:.2f} us/access"
    print(line)
# Where the sweep's time went: seconds between consecutive table rows, by size.
try:
    by_size, last = {}, None
    with open(os.path.join(out, "sweep.log")) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[1].startswith("cuda"): continue
            t = float(parts[0])
            if last is not None: by_size[parts[5]] = by_size.get(parts[5], 0) + t - last
            last = t
    if by_size:
        top = sorted(by_size.items(), key=lambda kv: -kv[1])[:8]
        print("sweep seconds by size: " + ", ".join(f"{k} {v:.1f}" for k, v in top))
except OSError:
    pass
big = [r for r in ok if r["bytes"] >= (256 << 20) and r["route"] == "copy-async" and r["host_memory"] == "pinned" and r["direction"] in ("h2d", "d2h")]
if big:
    print("pinned copy-async >= 256 MiB: " + ", ".join(f"{r['backend']} {r['direction']} {size(r['bytes'])} {r['gbps']:.1f}" for r in big))
PY

[ "$status_build" != FAILED ] && [ "$status_tests" != FAILED ] && [ "$status_sweep" = ok ]
